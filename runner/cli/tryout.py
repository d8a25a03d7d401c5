"""`challenge try`: a submission run exactly as the runner runs it, on public sample data, locally.

    challenge try SUBMISSION.yml                    a submission file (in the tree, or anywhere with --phase)
    challenge try --phase C/PHASE IMAGE             a local image ID or tag, or a pinned reference
    challenge try --phase C/PHASE FILE.zip          a predictions file, in a phase that takes predictions

The phase's sandbox, limits and evaluation container are the runner's own (`evaluation.job.evaluate`
with the executor `challenge evaluate` uses); only the data differs: the challenge's public sample
(`challenges/<c>/data/sample/{inputs,ground-truth}/`, else what `data/make_data.py --sample DIR`
writes, kept under build/try/), or a folder of the participant's own (--data). Nothing is written
into results/: the scratch submission and data root live under build/try/ (git-ignored) and are
removed afterwards. The scores print with the phase's leaderboard columns; a failure prints its
reason and the failing container's last log lines, and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import yaml
from rich.markup import escape
from rich.table import Table

from runner.codekey import file_sha256
from runner.errors import ChallengeError, printable
from runner.evaluation.job import RunnerConfig, evaluate
from runner.evaluation.queue import evaluation_image
from runner.execution.sandbox import Executor, SandboxError
from runner.ranking.leaderboard import leaderboard
from runner.ranking.tables import fmt
from runner.settings import add_options
from runner.tree.loading import load_submission, participant_yaml
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result
from runner.tree.store import Store
from runner.tree.submission_model import Submission

from . import summary
from .common import SubParsers, UsageError, err, out, print_table, settings_here, stage
from .evaluate import runner_executor

SCRATCH = Path("build", "try")
LOG_TAIL = 20  # lines of the failing container's log shown


def register(sub: SubParsers) -> None:
    t = sub.add_parser("try", help=summary("try"))
    t.add_argument("submission", help="a submission file; with --phase: an image (ID, tag or pinned reference) "
                                      "or a predictions file")
    t.add_argument("--phase", metavar="C/PHASE", help="the challenge and phase, e.g. ellipsoid-segmentation/final-test")
    t.add_argument("--data", type=Path, metavar="DIR", help="a folder with inputs/ and ground-truth/ to run on "
                   "(default: the challenge's data/sample)")
    t.add_argument("--logs", action="store_true", help="print the containers' full logs")
    add_options(t, "base_image", "runtime", "gpus")
    t.set_defaults(func=cmd_try)


def cmd_try(args: argparse.Namespace) -> int:
    store = Store(args.root)
    (store.root / SCRATCH).mkdir(parents=True, exist_ok=True)
    settings = settings_here(args)
    gpus = settings.gpus
    executor, base = runner_executor(settings, root=store.root, gpus=gpus, log=err.print)
    with contextlib.closing(executor), _scratch(store) as scratch:
        submission = _submission(store, args, scratch, executor)
        phase = store.phase(submission.challenge, submission.phase)
        data = _data(store, phase, args.data)
        root = _data_root(scratch, phase, data)
        with stage(f"building the evaluation image of {phase.challenge}"):  # about 75 s the first time
            image = evaluation_image(phase, store, executor=executor, base=base)
        err.print(f"{_doing(submission, phase, data)} from {data}", markup=False)
        config = RunnerConfig(data_root=root, log_dir=scratch / "logs", allow_local_images=True,
                              training_dir=scratch / "training",
                              runtime=settings.runtime, gpu_ids=gpus, cpu_fallback=True)  # a local try needs no GPU
        result = evaluate(submission, store=store, executor=executor, config=config, evaluation_image=image,
                          on_case=lambda case, i, n, _: err.print(f"  case {i + 1}/{n} {case} done", markup=False),
                          log=lambda line: err.print(line, markup=False))
        logs = scratch / "logs" / submission.key
        if args.logs:
            print_logs(logs)
        return _report(result, phase, logs)


@contextlib.contextmanager
def _scratch(store: Store) -> Iterator[Path]:
    """A fresh folder under build/try/, removed afterwards (what containers wrote there as another user
    is left to the OS's temp cleaner, as the runner does)."""
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=store.root / SCRATCH))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- the submission --------------------------------------------------------------------------------


def _submission(store: Store, args: argparse.Namespace, scratch: Path, executor: Executor) -> Submission:
    """The submission to try: a file of the tree as it is, else a scratch copy under `scratch`."""
    given = Path(args.submission)
    if given.suffix in (".yml", ".yaml") and given.is_file():
        if args.phase is None:
            return store.submission(given)
        challenge, phase = _phase_arg(store, args.phase)
        return _scratch_file(store, given, scratch, challenge=challenge, phase=phase)
    if args.phase is None:
        raise UsageError(f"{args.submission}: not a submission file; name the phase for an image or a predictions "
                         "file: challenge try --phase CHALLENGE/PHASE ...")
    challenge, phase = _phase_arg(store, args.phase)
    if phase.submission_kind == "predictions":
        return _scratch_predictions(store, given, scratch, challenge=challenge, phase=phase)
    return _scratch_image(store, args.submission, scratch, challenge=challenge, phase=phase, executor=executor)


def _phase_arg(store: Store, text: str) -> tuple[str, Phase]:
    challenge, _, slug = text.partition("/")
    if not challenge or not slug or "/" in slug:
        raise UsageError(f"--phase {text!r}: write CHALLENGE/PHASE, e.g. {store.slugs()[0] if store.slugs() else 'c'}"
                         "/final-test")
    if challenge not in store.slugs():
        raise UsageError(f"--phase {text!r}: there is no challenge {challenge!r} (challenges: "
                         f"{', '.join(store.slugs()) or 'none'})")
    return challenge, store.phase(challenge, slug)


def _scratch_image(store: Store, ref: str, scratch: Path, *, challenge: str, phase: Phase,
                   executor: Executor) -> Submission:
    """A local tag is resolved to its image ID (what runs), so the phase's rules see what the runner would."""
    pinned = ref if "@sha256:" in ref else _image_id(executor, ref)
    return _write(store, scratch, {"phase": phase.slug, "image": pinned}, challenge=challenge, phase=phase)


def _image_id(executor: Executor, ref: str) -> str:
    try:
        return executor.image_id(ref)
    except SandboxError as exc:
        raise UsageError(f"{ref}: {exc} (build it first, or give a pinned reference)") from None


def _scratch_predictions(store: Store, file: Path, scratch: Path, *, challenge: str, phase: Phase) -> Submission:
    if not file.is_file():
        raise UsageError(f"{file}: no such predictions file (phase {phase.title!r} takes predictions)")
    folder = scratch / "submission"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(file, folder / file.name)
    digest = file_sha256(folder / file.name)
    body = {"phase": phase.slug, "predictions": {"file": file.name, "sha256": digest}}
    return _write(store, scratch, body, challenge=challenge, phase=phase)


def _scratch_file(store: Store, file: Path, scratch: Path, *, challenge: str, phase: Phase) -> Submission:
    """A submission file from outside the tree: checked as the tree would check it, then copied with
    its predictions file into the scratch folder (inside the repository, where the runner looks)."""
    submission = load_submission(file.resolve(), challenge=challenge, phase=phase.slug, participant="try",
                                 kind=phase.submission_kind, extras=phase)
    folder = scratch / "submission"
    folder.mkdir(parents=True, exist_ok=True)
    if submission.predictions is not None:
        found = submission.predictions_path
        if found is None:
            raise UsageError(f"{file}: predictions file {submission.predictions!r} was not found next to it")
        shutil.copyfile(found, folder / found.name)
    return _write(store, scratch, participant_yaml(file).data, challenge=challenge, phase=phase)


def _write(store: Store, scratch: Path, body: Mapping[str, object], *, challenge: str, phase: Phase) -> Submission:
    path = scratch / "submission" / "try.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    submission = load_submission(path, challenge=challenge, phase=phase.slug, participant="try",
                                 kind=phase.submission_kind)
    # A key of its own, so nothing of a real submission's (locks, labels of leftover containers) is touched.
    return replace(submission, id=f"try-{scratch.name}")


# --- the data --------------------------------------------------------------------------------------


def _data(store: Store, phase: Phase, given: Path | None) -> Path:
    """The folder with inputs/ and ground-truth/ to run on."""
    folder = given or _sample(store, phase.challenge)
    for part in _parts(phase):
        if not (folder / part).is_dir():
            folders = [f"{name}/" for name in _parts(phase)]
            raise UsageError(f"{folder / part} is not a folder: sample data holds {', '.join(folders[:-1])} and "
                             f"{folders[-1]}")
    if phase.runs_algorithms and not any((folder / "inputs").iterdir()):
        raise UsageError(f"{folder / 'inputs'} is empty: nothing to run on")
    return folder.resolve()


def _doing(submission: Submission, phase: Phase, data: Path) -> str:
    """What the try does; a predictions file is scored on the ground truth alone (a self-reported
    phase has no inputs at all)."""
    if not phase.runs_algorithms:
        return f"scoring {submission.predictions} in phase {phase.title!r} on the ground truth"
    what = printable(submission.image_archive.url if submission.image_archive else submission.image or "", 300)
    cases = len(list((data / "inputs").iterdir()))
    return f"running {what} in phase {phase.title!r} on {cases} cases"


def _sample(store: Store, challenge: str) -> Path:
    """The challenge's committed sample, else the one its data script writes (made once, kept)."""
    committed = store.paths.challenge(challenge) / "data" / "sample"
    if committed.is_dir():
        return committed
    script = store.paths.challenge(challenge) / "data" / "make_data.py"
    if not script.is_file():
        raise UsageError(f"challenge {challenge!r} has no sample data ({committed} or data/make_data.py --sample): "
                         "give a folder with inputs/ and ground-truth/ as --data DIR")
    made = store.root / SCRATCH / "sample" / challenge
    if not (made / "inputs").is_dir():
        err.print(f"writing sample data with {script.relative_to(store.root)} --sample", markup=False)
        done = subprocess.run([sys.executable, str(script), "--sample", str(made)], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            shutil.rmtree(made, ignore_errors=True)
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise ChallengeError(f"{script}: --sample failed: {tail[0]}")
    return made


def _data_root(scratch: Path, phase: Phase, data: Path) -> Path:
    """A data root laid out as the runner's (<root>/<challenge>/<phase>/...), pointing at `data`."""
    root = scratch / "data-root"
    folder = root / phase.challenge / phase.slug
    folder.mkdir(parents=True)
    for part in _parts(phase):
        (folder / part).symlink_to(data / part, target_is_directory=True)
    return root


def _parts(phase: Phase) -> tuple[str, ...]:
    """The folders a phase's data holds: a training phase's training data beside the test cases."""
    return ("inputs", "ground-truth", "training") if phase.submission_kind == "training" else ("inputs", "ground-truth")


# --- the report ------------------------------------------------------------------------------------


def _report(result: Result, phase: Phase, logs: Path) -> int:
    if result.status == "failed":
        out.print(f"[red]failed[/]: {escape(result.error or '')}", highlight=False)
        print_tail(logs)
        return 1
    board = leaderboard(phase, [result])
    row = board.rows[0]
    table = Table(title=f"{phase.challenge} / {phase.title} (sample data; nothing was written to results/)")
    for column in phase.columns:
        table.add_column(column.title, justify="right")
    places = phase.score_decimal_places
    table.add_row(*(fmt(v, places) + (f" ± {fmt(e, places)}" if e is not None else "")
                    for v, e in zip(row.values, row.errors)))
    print_table(table)
    for name, run in (("training", result.training), ("algorithm", result.algorithm)):
        if run is not None and run.wall_time_s is not None:
            memory = f", peak memory {run.peak_memory_bytes / 1024**2:.0f} MiB" if run.peak_memory_bytes else ""
            last = f", last line: {run.last_line}" if name == "training" and run.last_line else ""
            out.print(f"{name}: {run.wall_time_s:.2f} s{memory}{last}", markup=False)
    if row.rank is None:
        out.print("[yellow]unranked[/]: a ranked column has no value (see the phase's score paths)")
    return 0


def print_tail(logs: Path) -> None:
    """The last lines of the log of the container that failed (the last one written)."""
    found = sorted(logs.glob("*.log"), key=lambda p: p.stat().st_mtime) if logs.is_dir() else []
    if not found:
        return
    lines = found[-1].read_text(errors="replace").rstrip().splitlines()[-LOG_TAIL:]
    if lines:
        out.print(f"last lines of {found[-1].stem}'s log:", markup=False)
        for line in lines:
            out.print(f"  {printable(line)}", markup=False, highlight=False)


def print_logs(logs: Path) -> None:
    for path in sorted(logs.glob("*.log")) if logs.is_dir() else []:
        out.print(f"--- {path.stem} log ---", markup=False)
        for line in path.read_text(errors="replace").rstrip().splitlines():  # the containers' own bytes
            out.print(printable(line, 100_000), markup=False, highlight=False)
