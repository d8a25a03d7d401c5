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
import tempfile
from pathlib import Path

from runner.errors import ChallengeError, printable
from runner.evaluation.job import ContainerFailed, RunnerConfig, SubmissionFailure, predict
from runner.settings import add_options
from runner.tree.phase_model import Phase
from runner.tree.policy import not_runnable
from runner.tree.result_model import Result
from runner.tree.store import Store

from . import summary
from .common import SubParsers, UsageError, err, out, settings_here, stage
from .evaluate import preserved_dir, runner_executor
from .tryout import SCRATCH, print_logs, print_tail


def register(sub: SubParsers) -> None:
    r = sub.add_parser("run", help=summary("run"))
    r.add_argument("result", type=Path, help="the result's record, challenges/<c>/results/<phase>/<participant>/<id>"
                   ".json (its result page shows this command)")
    r.add_argument("--input", type=Path, required=True, metavar="DIR",
                   help="your cases, laid out as the phase's inputs: one file or folder per case")
    r.add_argument("--output", type=Path, required=True, metavar="DIR",
                   help="an empty or new folder for what the algorithm writes")
    r.add_argument("--logs", action="store_true", help="print the algorithm's full logs")
    # without GPUs, a GPU phase's algorithm runs on the CPU
    add_options(r, "preserved_dir", "allow_local_images", "base_image", "runtime", "gpus")
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
    settings = settings_here(args)
    gpus = settings.gpus
    executor, _ = runner_executor(settings, root=store.root, gpus=gpus, log=err.print)
    with contextlib.closing(executor), tempfile.TemporaryDirectory(prefix="run-", dir=store.root / SCRATCH) as tmp:
        config = RunnerConfig(data_root=Path(tmp), log_dir=Path(tmp, "logs"), runtime=settings.runtime, gpu_ids=gpus,
                              allow_local_images=settings.allow_local_images, cpu_fallback=True,
                              preserved_dir=preserved_dir(settings, store))
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

