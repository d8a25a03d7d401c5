"""`challenge check`: validate the challenge tree or one file."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.tree.store import Store

from .common import err, out


def register(sub) -> None:
    c = sub.add_parser("check", help="validate the challenge tree, or one file or folder")
    c.add_argument("path", nargs="?", type=Path)
    c.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    store = Store(args.root)
    problems = store.check(args.path)
    for problem in problems:
        out.print(str(problem), markup=False)
    if problems:
        err.print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found")
        return 1
    out.print(f"ok: {args.path or store.base} is valid")
    return 0
