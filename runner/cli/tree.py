"""`challenge check`: validate the challenge tree or one file; `challenge schema`: the files' JSON Schemas."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console

from runner.pullrequests.workflows import WORKFLOWS, self_hosted_problems
from runner.tree.check import FilesRead, Report, check
from runner.tree.records import Keys

from . import summary
from .common import SubParsers, err, open_store, out, progress_bar, settings_here
from .keys import runner_keys


def register(sub: SubParsers) -> None:
    c = sub.add_parser("check", help=summary("check"))
    c.add_argument("path", nargs="?", type=Path)
    c.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    """Print every problem, then every warning; only problems fail the check."""
    # github: recipients are read as the runner reads them, where GitHub is configured (Actions sets both).
    settings = settings_here()
    online = settings.github_token or settings.github_api_url
    store = open_store(args.root, settings, keys=runner_keys(settings) if online else Keys())
    workflows = args.path is not None and args.path.resolve().is_relative_to((store.root / WORKFLOWS).resolve())
    with files_read(err) as progress:
        report = Report() if workflows else check(store, args.path, progress=progress)
    if args.path is None or workflows:  # the repository's own workflows: GitHub-hosted runners only
        report.problems += self_hosted_problems(store.root)
    for problem in report.problems:
        out.print(str(problem), markup=False)
    for warning in report.warnings:
        out.print(f"warning: {warning}", markup=False)
    warned = f" ({_count(len(report.warnings), 'warning')})" if report.warnings else ""
    if report.problems:
        err.print(f"{_count(len(report.problems), 'problem')} found{warned}", markup=False)
        return 1
    out.print(f"ok: {args.path or store.base} is valid{warned}", markup=False)
    return 0


@contextlib.contextmanager
def files_read(console: Console) -> Iterator[FilesRead | None]:
    """A bar of the files read on a terminal, gone once done (a million results take minutes); nothing
    in a log."""
    if not console.is_terminal:
        yield None
        return
    with progress_bar(console) as bar:
        task = bar.add_task("checking files", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
