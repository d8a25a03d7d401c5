"""`challenge leaderboard`: a phase's ranked leaderboard as a table, CSV or JSON."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from rich.table import Table

from runner.ranking.leaderboard import combined, phase_leaderboard
from runner.ranking.tables import fields, fmt, records, to_csv
from runner.tree.history import History, HistoryError, parse_when
from runner.tree.model import CombinedLeaderboard
from runner.tree.phase_model import Phase
from runner.tree.records import Keys
from runner.tree.result_model import Result
from runner.tree.sealing import read_identity_file
from runner.tree.store import Store

from . import summary
from .common import SubParsers, UsageError, open_store, print_table, settings_here
from .keys import tree_verifier


def register(sub: SubParsers) -> None:
    lb = sub.add_parser("leaderboard", help=summary("leaderboard"))
    lb.add_argument("challenge")
    lb.add_argument("phase")
    lb.add_argument("--format", choices=("table", "csv", "json"), default="table")
    lb.add_argument("--as-of", type=_when, metavar="DATE",
                    help="the leaderboard as it stood then, from git history (a date means its end, UTC)")
    lb.add_argument("--identity", "-i", type=Path, help="your private key (age or OpenSSH): results whose phase "
                    "withholds them are read whole, as organizers see them; without it, what the site shows now")
    lb.set_defaults(func=cmd_leaderboard)


def leaderboard_keys(args: argparse.Namespace) -> Keys:
    path = getattr(args, "identity", None)  # `challenge demo` calls in with the other options only
    return Keys(identities=tuple(read_identity_file(path))) if path else Keys()


def cmd_leaderboard(args: argparse.Namespace) -> int:
    keys = leaderboard_keys(args)
    # With a key, whole results only where it opens them: the runner's own copies open to no key.
    settings = settings_here()
    store = open_store(args.root, settings, keys=keys, copies=not keys.identities,
                       verifier=tree_verifier(args.root, settings))
    spec = next((c for c in store.challenge(args.challenge).combined_leaderboards if c.slug == args.phase), None)
    if spec is not None:
        return _combined(store, args, spec)
    phase = store.phase(args.challenge, args.phase)
    results = _results(store, args, phase)
    board = phase_leaderboard(store.paths, phase, results)
    if args.format == "json":
        print(json.dumps(records(board), indent=2))
    elif args.format == "csv":
        print(to_csv(records(board), fields(phase)), end="")
    else:
        table = Table(title=f"{args.challenge} / {phase.title}")
        for name in ("Rank", "Participant", "Submission", *(c.title for c in phase.columns)):
            table.add_column(name, justify="left" if name in ("Participant", "Submission") else "right")
        for r in board.rows:
            table.add_row(str(r.rank or "–"), r.participant, r.submission,
                          *(fmt(v, phase.score_decimal_places) for v in r.values))
        print_table(table)
    return 0


def _combined(store: Store, args: argparse.Namespace, spec: CombinedLeaderboard) -> int:
    """A combined leaderboard of the challenge, named in place of a phase."""
    phases = [store.phase(args.challenge, slug) for slug, _ in spec.phases]
    boards = {p.slug: phase_leaderboard(store.paths, p, _results(store, args, p)) for p in phases}
    rows = [{"rank": r.rank, "participant": r.participant, **dict(zip((s for s, _ in spec.phases), r.phase_ranks)),
             "combined": r.value} for r in combined(spec, boards)]
    header = ["rank", "participant", *(s for s, _ in spec.phases), "combined"]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    elif args.format == "csv":
        print(to_csv(rows, header), end="")
    else:
        table = Table(title=f"{args.challenge} / {spec.title}")
        for name in header:
            table.add_column(name, justify="left" if name == "participant" else "right")
        for row in rows:
            table.add_row(*(f"{row[h]:.2f}" if h == "combined" else str(row[h]) for h in header))
        print_table(table)
    return 0


def _when(text: str) -> dt.datetime:
    try:
        return parse_when(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (2026-05-01) or time (2026-05-01T12:00)") from None


def _results(store: Store, args: argparse.Namespace, phase: Phase) -> list[Result]:
    """The phase's results, as the site shows them now, or whole with an organizer's key (`--identity`)."""
    as_of = getattr(args, "as_of", None)  # `challenge demo` calls in with the other options only
    try:
        found = (store.results(phase.challenge, phase.slug) if as_of is None
                 else History(store).results_as_of(phase.challenge, phase.slug, as_of))
    except HistoryError as exc:
        raise UsageError(f"--as-of needs the repository's git history: {exc}") from None
    return found if store.keys.identities else store.ranked(phase, found)
