"""`challenge new SLUG --kind ...`: a working challenge folder to start from (see `tree.scaffold`)."""

from __future__ import annotations

import argparse
import datetime as dt

from runner.execution.baseimage import DEFAULT_BASE
from runner.tree.scaffold import NEW_KINDS, PLANS, new_challenge

from . import summary
from .common import SubParsers, out


def register(sub: SubParsers) -> None:
    n = sub.add_parser("new", help=summary("new"))
    n.add_argument("slug", help="the challenge's name in URLs and folders, e.g. liver-segmentation")
    n.add_argument("--kind", choices=NEW_KINDS, default="algorithm",
                   help="algorithm: participants submit containers (type 2); predictions: files of outputs "
                        "(type 1); metrics: their own metrics on public data (type 0, self-reported); training: "
                        "code trained on hidden data (type 3, not run yet)")
    n.set_defaults(func=cmd_new)


def cmd_new(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    written = new_challenge(root, args.slug, kind=args.kind, today=dt.datetime.now(dt.UTC).date())
    folder = written[0].parent
    first = PLANS[args.kind].phases[0]
    out.print(f"wrote {len(written)} files under {folder.relative_to(root)}/", markup=False)
    steps = [("next", f"challenge check {folder.relative_to(root)}"),
             ("next", f"python {folder.relative_to(root)}/data/make_data.py DATA_ROOT   (on the runner: hidden data)"),
             ("next", _try_line(args.kind, folder.relative_to(root), args.slug, first)),
             *(("note", note) for note in _offline_note(args.kind)),
             ("next", "edit the pages, the phases and the evaluation; `challenge serve` shows the site as you go")]
    for label, step in steps:
        out.print(f"  {label}: {step}", markup=False)
    return 0


def _offline_note(kind: str) -> tuple[str, ...]:
    if PLANS[kind].submission == "predictions" or kind == "metrics":
        return ()
    return (f"the baseline builds FROM {DEFAULT_BASE}; where Docker Hub cannot be reached, add "
            "--build-arg BASE=challenge-base:<tag> to docker build: the offline base the runner builds "
            "(docker images challenge-base lists it)",)


def _try_line(kind: str, folder: object, slug: str, phase: str) -> str:
    if kind == "metrics":
        return (f"python {folder}/examples/baseline/predict.py {folder}/data/sample metrics.json && "
                f"challenge try --phase {slug}/{phase} metrics.json")
    if PLANS[kind].submission == "predictions":
        return (f"python {folder}/examples/baseline/predict.py {folder}/data/sample/inputs predictions.zip && "
                f"challenge try --phase {slug}/{phase} predictions.zip")
    return f"docker build -t baseline {folder}/examples/baseline && challenge try --phase {slug}/{phase} baseline"
