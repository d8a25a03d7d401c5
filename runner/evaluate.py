"""One submission end to end: algorithm (or predictions), evaluation container, checked metrics, result.

Anything that goes wrong because of the submission becomes a failed result with one readable
reason. Anything that goes wrong with the runner itself (no hidden data, engine down) raises
RunnerError and writes nothing, so the submission stays pending and is picked up again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .model import Limits, Phase, Result, RunRecord, Submission, check_image_ref
from .sandbox import Backend, Mount, Outcome, RunSpec, SandboxError
from .store import Store

METRICS_MAX_BYTES = 16 * 1024**2
GROUND_TRUTH = "/opt/ml/input/data/ground_truth"
ENV_DATA_ROOT = "CHALLENGE_DATA_ROOT"


class RunnerError(RuntimeError):
    """The runner cannot evaluate right now; the submission stays pending."""


class SubmissionFailure(Exception):
    """The submission failed; `reason` is what its participant is shown."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class RunnerConfig:
    """How this runner host is set up: where hidden data lives and what it accepts."""

    data_root: Path
    work_dir: Path | None = None
    allow_local_images: bool = False
    runtime: str | None = None

    def phase_data(self, phase: Phase) -> tuple[Path, Path]:
        folder = self.data_root / phase.challenge / phase.slug
        inputs, truth = folder / "inputs", folder / "ground-truth"
        for path in (inputs, truth):
            if not path.is_dir():
                raise RunnerError(f"hidden data missing on this runner: {path} is not a folder")
        return inputs, truth


def evaluate(submission: Submission, *, store: Store, backend: Backend, config: RunnerConfig,
             evaluation_image: str) -> Result:
    """Run one submission and return its result (not yet written)."""
    phase = store.phase(submission.challenge, submission.phase)
    inputs, truth = config.phase_data(phase)
    created = store.submitted_at(submission)
    started = _now()
    runs: dict[str, RunRecord] = {}
    metrics: dict[str, Any] | None = None
    error: str | None = None
    # Containers write as another user; what the host cannot delete is left to the OS's temp cleaner.
    with tempfile.TemporaryDirectory(prefix="challenge-eval-", dir=config.work_dir, ignore_cleanup_errors=True) as tmp:
        predictions = _writable(Path(tmp) / "predictions")
        scores = _writable(Path(tmp) / "evaluation")
        try:
            if submission.image:
                runs["algorithm"] = _run_algorithm(submission, phase, backend, config, inputs, predictions)
            else:
                unpack_predictions(_predictions_file(submission, store), submission.predictions_sha256 or "", predictions)
            runs["evaluation"] = _run_evaluation(phase, backend, config, evaluation_image, predictions, truth, scores)
            metrics = read_metrics(scores)
        except ContainerFailed as failure:
            runs[failure.stage] = failure.record
            error = failure.reason
        except SubmissionFailure as failure:
            error = failure.reason
    return Result(
        challenge=submission.challenge, phase=submission.phase, participant=submission.participant,
        submission=submission.id, status="failed" if error else "succeeded",
        created_at=_iso(created), started_at=_iso(started), finished_at=_iso(_now()),
        metrics=metrics, error=error, algorithm=runs.get("algorithm"), evaluation=runs.get("evaluation"),
        runner_version=__version__,
    )


def _run_algorithm(submission: Submission, phase: Phase, backend: Backend, config: RunnerConfig,
                   inputs: Path, outputs: Path) -> RunRecord:
    ref = submission.image or ""
    if why := check_image_ref(ref, allow_local=config.allow_local_images):
        raise SubmissionFailure(f"Algorithm image {ref}: {why}")
    try:
        image_id = backend.image_id(ref)
    except SandboxError as exc:
        raise SubmissionFailure(f"Algorithm image could not be used: {exc}") from None
    mounts = (Mount(inputs, "/input"), Mount(outputs, "/output", read_only=False))
    return _contained("Algorithm", backend, _spec(image_id, mounts, phase.algorithm, config), ref)


def _run_evaluation(phase: Phase, backend: Backend, config: RunnerConfig, image: str,
                    predictions: Path, truth: Path, outputs: Path) -> RunRecord:
    mounts = (Mount(predictions, "/input"), Mount(truth, GROUND_TRUTH),
              Mount(outputs, "/output", read_only=False))
    try:
        image_id = backend.image_id(image)
    except SandboxError as exc:
        raise RunnerError(f"evaluation image for {phase.challenge}/{phase.slug}: {exc}") from None
    return _contained("Evaluation", backend, _spec(image_id, mounts, phase.evaluation, config), image)


def _spec(image_id: str, mounts: tuple[Mount, ...], limits: Limits, config: RunnerConfig) -> RunSpec:
    return RunSpec(image=image_id, mounts=mounts, time_limit=limits.time_limit, memory=limits.memory,
                   cpus=limits.cpus, runtime=config.runtime)


def _contained(stage: str, backend: Backend, spec: RunSpec, ref: str) -> RunRecord:
    try:
        outcome: Outcome = backend.run(spec)
    except SandboxError as exc:
        raise RunnerError(f"{stage.lower()} container could not run: {exc}") from None
    record = RunRecord(image=ref, image_id=spec.image, exit_code=outcome.exit_code,
                       wall_time_s=outcome.wall_time_s, timed_out=outcome.timed_out,
                       oom_killed=outcome.oom_killed)
    if not outcome.ok:
        raise ContainerFailed(f"{stage} failed: {outcome.error_line(spec.time_limit)}", stage.lower(), record)
    return record


class ContainerFailed(SubmissionFailure):
    """A failed container run; keeps its record so the result shows exit code and timings."""

    def __init__(self, reason: str, stage: str, record: RunRecord):
        super().__init__(reason)
        self.stage, self.record = stage, record


def read_metrics(folder: Path) -> dict[str, Any]:
    """Read /output/metrics.json strictly: a regular file (no link), bounded, a JSON object.
    NaN and infinities are stored as null, as grand-challenge does."""
    path = folder / "metrics.json"
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise SubmissionFailure("Evaluation failed: it wrote no /output/metrics.json") from None
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionFailure("Evaluation failed: /output/metrics.json is not a regular file")
    if info.st_size > METRICS_MAX_BYTES:
        raise SubmissionFailure(f"Evaluation failed: metrics.json is larger than {METRICS_MAX_BYTES} bytes")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        text = handle.read().decode("utf-8", errors="replace")
    try:
        data = json.loads(text, parse_constant=lambda _: None)
    except json.JSONDecodeError as exc:
        raise SubmissionFailure(f"Evaluation failed: metrics.json is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise SubmissionFailure("Evaluation failed: metrics.json must hold a JSON object")
    return _finite(data)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _predictions_file(submission: Submission, store: Store) -> Path:
    """Prediction files are committed next to the submission (small) or under the repository."""
    name = submission.predictions or ""
    path = (submission.path.parent / name).resolve()
    if not path.is_relative_to(store.root) or not path.is_file():
        raise SubmissionFailure(f"Predictions file {name!r} was not found next to the submission")
    return path


def unpack_predictions(path: Path, sha256: str, target: Path, *, max_files: int = 10_000,
                       max_bytes: int = 2 * 1024**3) -> None:
    """Verify the pinned hash, then copy the file, or unpack a zip without leaving `target`."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise SubmissionFailure(f"Predictions file sha256 is {digest}, but the submission pins {sha256}")
    if not zipfile.is_zipfile(path):
        shutil.copyfile(path, target / path.name)
        return
    with zipfile.ZipFile(path) as archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > max_files:
            raise SubmissionFailure(f"Predictions archive holds {len(members)} files; at most {max_files} allowed")
        if sum(m.file_size for m in members) > max_bytes:
            raise SubmissionFailure(f"Predictions archive unpacks to more than {max_bytes} bytes")
        for member in members:
            dest = (target / member.filename).resolve()
            if not dest.is_relative_to(target.resolve()):
                raise SubmissionFailure(f"Predictions archive entry {member.filename!r} points outside the archive")
            dest.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)


def _writable(path: Path) -> Path:
    """A folder the container's unprivileged user can write into."""
    path.mkdir(parents=True)
    path.chmod(0o777)
    return path


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")
