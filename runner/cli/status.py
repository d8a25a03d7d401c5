"""`challenge status`: where a participant stands in a phase: whether it takes submissions now, how
many of theirs are left in the period, and when the next becomes possible (the rules' own answer)."""

from __future__ import annotations

import argparse
import datetime as dt

from runner.tree.policy import window

from . import summary
from .common import SubParsers, err, open_store, out, settings_here


def register(sub: SubParsers) -> None:
    s = sub.add_parser("status", help=summary("status"))
    s.add_argument("challenge")
    s.add_argument("phase")
    s.add_argument("--participant", required=True, help="a GitHub login, or a team's folder name (its members "
                   "share the count)")
    s.set_defaults(func=cmd_status)


def cmd_status(args: argparse.Namespace) -> int:
    store = open_store(args.root, settings_here())
    phase, now = store.phase(args.challenge, args.phase), dt.datetime.now(dt.UTC)
    state = window(phase, now)
    out.print(f"phase {phase.title!r} takes submissions now" if state.open else state.reason, markup=False)
    out.print(store.standing(phase, args.participant, now=now).line(phase, args.participant, now), markup=False)
    if not store.knows(phase.challenge, args.participant):  # a typo would read as a clean slate
        err.print(f"note: {args.participant!r} has no submission in challenge {phase.challenge!r} yet (folder "
                  "names are as typed: a GitHub login, or a team of teams.yml)", markup=False)
    return 0
