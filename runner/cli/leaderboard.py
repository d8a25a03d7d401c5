"""`challenge leaderboard`: a phase's ranked leaderboard as a table, CSV or JSON."""

from __future__ import annotations

import argparse
import json

import pandas as pd
from rich.table import Table

from ..pages import fmt
from ..ranking import leaderboard
from ..store import Store
from .common import out


def register(sub) -> None:
    lb = sub.add_parser("leaderboard", help="print a phase's leaderboard")
    lb.add_argument("challenge")
    lb.add_argument("phase")
    lb.add_argument("--format", choices=("table", "csv", "json"), default="table")
    lb.set_defaults(func=cmd_leaderboard)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    store = Store(args.root)
    phase = store.phase(args.challenge, args.phase)
    board = leaderboard(phase, store.results(args.challenge, args.phase))
    titles = [c.title for c in phase.columns]
    records = [{"rank": r.rank, "participant": r.participant, "submission": r.submission,
                **dict(zip(titles, r.values)), "submitted": r.created_at} for r in board.rows]
    if args.format == "json":
        print(json.dumps(records, indent=2))
    elif args.format == "csv":
        frame = pd.DataFrame(records, columns=["rank", "participant", "submission", *titles, "submitted"])
        print(frame.to_csv(index=False), end="")
    else:
        table = Table(title=f"{args.challenge} / {phase.title}")
        for name in ("Rank", "Participant", "Submission", *titles):
            table.add_column(name, justify="left" if name in ("Participant", "Submission") else "right")
        for r in board.rows:
            table.add_row(str(r.rank or "–"), r.participant, r.submission,
                          *(fmt(v, phase.score_decimal_places) for v in r.values))
        out.print(table)
    return 0
