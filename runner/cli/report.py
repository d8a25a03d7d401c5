"""`challenge report`: a challenge's results report (BIAS's results section, challengeR's figures)
as self-contained HTML and as Markdown with SVG figures."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from runner.site.build import SiteConfig
from runner.site.report import build_report, write_report

from . import summary
from .common import SubParsers, err, open_store, out, settings_here
from .keys import tree_verifier
from .leaderboard import leaderboard_keys


def register(sub: SubParsers) -> None:
    r = sub.add_parser("report", help=summary("report"))
    r.add_argument("challenge")
    r.add_argument("--output", type=Path, metavar="DIR",
                   help="folder for report.html, report.md and figures/ (default: build/report/<challenge>)")
    r.add_argument("--phase", action="append", default=[], metavar="PHASE",
                   help="report on this phase only (repeat for several; default: every public phase)")
    r.add_argument("--samples", type=_positive, default=1000, metavar="N",
                   help="bootstrap samples of the cases (default 1000)")
    r.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    r.add_argument("--identity", "-i", type=Path, help="your private key (age or OpenSSH): results whose phase "
                   "withholds them are read whole, for organizers; without it, what the site shows now")
    r.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    output = args.output or root / "build" / "report" / args.challenge
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("report", total=None)
        keys = leaderboard_keys(args)
        # A key sees only what it opens; what does not verify is left out, as the site leaves it out.
        settings = settings_here()
        store = open_store(root, settings, keys=keys, copies=not keys.identities,
                           verifier=tree_verifier(root, settings))
        report = build_report(store, args.challenge, phases=args.phase, samples=args.samples,
                              whole=bool(keys.identities),
                              seed=args.seed, progress=lambda done, total, what: bar.update(
                                  task, completed=done, total=total, description=what))
    written = write_report(report, output, SiteConfig.read(root).templates)
    out.print(f"report written to {output / 'report.html'} and {output / 'report.md'} "
              f"({len(written) - 2} figures)")
    return 0


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not {text!r}")
    return int(text)
