"""`challenge import-phase`: a phase file from grand-challenge.org's export of a phase."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.errors import printable
from runner.tree.check import check
from runner.tree.gc_export import imported_phase, read_export
from runner.tree.loading import load_phase
from runner.tree.located import ModelError
from runner.tree.schema_parse import each_problem
from runner.tree.store import Store

from . import summary
from .common import SubParsers, UsageError, err, open_store, out, settings_here


def register(sub: SubParsers) -> None:
    p = sub.add_parser("import-phase", help=summary("import-phase"), description=(
        "Write a phase file from grand-challenge.org's export of one phase (Django's dumpdata of an "
        "evaluation.phase, or an object of its fields), and name each option the export sets that it leaves "
        "out, with why. The file is then checked as `challenge check` checks it."))
    p.add_argument("export", type=Path, metavar="FILE.json", help="the exported phase")
    p.add_argument("--challenge", metavar="SLUG", help="write challenges/SLUG/phases/<the phase's slug>.yml")
    p.add_argument("--output", type=Path, metavar="PATH", help="write this file instead")
    p.set_defaults(func=cmd_import_phase)


def cmd_import_phase(args: argparse.Namespace) -> int:
    store = open_store(args.root, settings_here())
    phase = imported_phase(read_export(args.export))
    target = _target(store, args, phase.slug)
    if target.exists():
        raise UsageError(f"{target} exists: remove it first, or write elsewhere with --output PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(phase.yaml(), encoding="utf-8")
    out.print(f"wrote {target}", markup=False)
    for dropped in phase.dropped:
        out.print(f"not carried: {printable(dropped.option, 200)}: {dropped.why}", markup=False)  # the export's key
    problems = _problems(store, target)
    for problem in problems:
        out.print(str(problem), markup=False)
    if problems:
        err.print(f"{len(problems)} problem(s) to fix in {target} before it passes `challenge check`", markup=False)
        return 1
    return 0


def _target(store: Store, args: argparse.Namespace, slug: str) -> Path:
    if args.output is not None:
        return Path(args.output)
    if args.challenge is None:
        raise UsageError("say where the phase goes: --challenge SLUG (challenges/SLUG/phases/) or --output PATH")
    if not store.paths.challenge_file(args.challenge).is_file():
        raise UsageError(f"there is no challenge {args.challenge!r} (challenges: {', '.join(store.slugs()) or 'none'})")
    return store.paths.phase_file(args.challenge, slug)


def _problems(store: Store, target: Path) -> list[ModelError]:
    """What `challenge check` says of the file in the tree; outside it, what its loader says."""
    if target.resolve().is_relative_to(store.base.resolve()):
        return check(store, target).problems
    try:
        load_phase(target, challenge="imported")
    except ModelError as exc:
        return each_problem(exc)
    return []
