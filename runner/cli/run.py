"""`challenge run RESULT --input DIR --output DIR`: a published result's algorithm run on your own cases.

grand-challenge keeps a challenge's algorithms usable after it ends; here any result of a phase that ran
algorithms can be run again by anyone with Docker: its pinned image (pulled by digest), or the archive
the runner preserved of it (`challenge preserve`) where the organizers publish that folder (--preserved).
The runs are the phase's (its input layout and command, a case or a batch per run, its sandbox and
limits: `evaluation.job.predict`); nothing is evaluated and nothing is written into the tree. --input
is laid out as the phase's hidden inputs (one entry per case); --output receives what the phase's
evaluation would have read.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from pathlib import Path

from runner.errors import ChallengeError, printable
from runner.evaluation.job import ContainerFailed, RunnerConfig, SubmissionFailure, predict
from runner.tree.model import Phase, Result
from runner.tree.policy import not_runnable
from runner.tree.store import Store

from . import summary
from .common import SubParsers, UsageError, err, out, stage
from .evaluate import ENV_GPUS, gpu_ids, preserved_dir, runner_executor
from .tryout import SCRATCH, print_logs, print_tail


def register(sub: SubParsers) -> None:
    r = sub.add_parser("run", help=summary("run"))
    r.add_argument("result", type=Path, help="the result's record, challenges/<c>/results/<phase>/<participant>/<id>"
                   ".json (its result page shows this command)")
    r.add_argument("--input", type=Path, required=True, metavar="DIR",
                   help="your cases, laid out as the phase's inputs: one file or folder per case")
    r.add_argument("--output", type=Path, required=True, metavar="DIR",
                   help="an empty or new folder for what the algorithm writes")
    r.add_argument("--preserved-dir", type=Path, metavar="DIR", help="archives of algorithm images saved by "
                   "`challenge preserve`, used when an image cannot be pulled (default: <state folder>/preserved)")
    r.add_argument("--allow-local-images", action="store_true", help="also run an image this engine holds by its "
                   "ID (sha256:..., as the demo's results name theirs) and fetch archives from private addresses")
    r.add_argument("--logs", action="store_true", help="print the algorithm's full logs")
    r.add_argument("--base-image", help="Python base image of the runner's helper containers")
    r.add_argument("--runtime", help="container runtime, e.g. runsc for gVisor")
    r.add_argument("--gpus", default=os.environ.get(ENV_GPUS, ""), help=f"GPU indices to use (or ${ENV_GPUS}); "
                   "a GPU phase's algorithm runs on the CPU when none is given")
    r.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    store = Store(args.root)
    result = _result(store, args.result)
    phase = store.phase(result.challenge, result.phase)
    if why := not_runnable(phase, result):
        raise UsageError(f"{args.result}: this result cannot be run: {why}")
    inputs, output = _inputs(args.input, phase), _output(args.output)
    submission = store.submission(store.paths.submission_file(result.challenge, result.phase, result.participant,
                                                              result.submission))
    (store.root / SCRATCH).mkdir(parents=True, exist_ok=True)
    gpus = gpu_ids(args.gpus)
    executor, _ = runner_executor(args.base_image, root=store.root, gpus=gpus)
    with contextlib.closing(executor), tempfile.TemporaryDirectory(prefix="run-", dir=store.root / SCRATCH) as tmp:
        config = RunnerConfig(data_root=Path(tmp), log_dir=Path(tmp, "logs"), runtime=args.runtime, gpu_ids=gpus,
                              allow_local_images=args.allow_local_images, cpu_fallback=True,
                              preserved_dir=preserved_dir(args, store))
        cases = sum(1 for p in inputs.iterdir() if not p.name.startswith("."))
        what = printable(submission.image_archive.url if submission.image_archive else submission.image or "", 300)
        logs = Path(tmp, "logs", submission.key)
        try:
            with stage(f"running {what} on {cases} case(s) as phase {phase.title!r} runs it"):
                record = predict(submission, store=store, executor=executor, config=config, inputs=inputs,
                                 output=output, on_case=lambda case, i, n, _: err.print(
                                     f"  case {i + 1}/{n} {case} done", markup=False))
        except (ContainerFailed, SubmissionFailure) as failure:
            print_tail(logs)
            raise ChallengeError(printable(failure.reason)) from None
        if args.logs:
            print_logs(logs)
    seconds = f" in {record.wall_time_s:.1f} s" if record.wall_time_s is not None else ""
    out.print(f"wrote {_count(output)} file(s) to {output}{seconds}", markup=False)
    return 0


def _result(store: Store, path: Path) -> Result:
    if not path.is_file():
        raise UsageError(f"{path}: no such result file (results live in challenges/<c>/results/<phase>/...)")
    return store.read_result(path.resolve())


def _inputs(given: Path, phase: Phase) -> Path:
    if not given.is_dir():
        raise UsageError(f"--input {given}: not a folder")
    if not any(not p.name.startswith(".") for p in given.iterdir()):
        raise UsageError(f"--input {given}: empty: phase {phase.title!r} reads one file or folder per case")
    return given.resolve()


def _output(given: Path) -> Path:
    """A new or empty folder: what the algorithm writes never mixes with, or replaces, what is there."""
    if given.exists() and (not given.is_dir() or any(given.iterdir())):
        raise UsageError(f"--output {given}: not an empty folder")
    given.mkdir(parents=True, exist_ok=True)
    return given.resolve()


def _count(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())

