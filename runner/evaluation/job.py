"""One submission end to end: algorithm (or predictions), evaluation container, checked metrics, result.

Anything that goes wrong because of the submission becomes a failed result with one readable
reason. Anything that goes wrong with the runner itself (no hidden data, engine down) raises
RunnerError and writes nothing, so the submission stays pending and is picked up again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import os
import shutil
import stat
import statistics
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from runner import __version__
from runner.errors import ChallengeError
from runner.evaluation.cache import OutputCache
from runner.execution.outputs import UnsafeOutput, extract_zip
from runner.execution.sandbox import Executor, Mount, Outcome, OutputArea, RunSpec, SandboxError
from runner.tree.jsonpaths import lookup
from runner.tree.model import Limits, Phase, Result, RunRecord, Submission
from runner.tree.references import image_refusal
from runner.tree.store import Store

METRICS_MAX_BYTES = 16 * 1024**2
PARTICIPANT_LOG_BYTES = 64 * 1024
GROUND_TRUTH = "/opt/ml/input/data/ground_truth"
ENV_DATA_ROOT = "CHALLENGE_DATA_ROOT"

N = TypeVar("N", int, float)
CaseCallback = Callable[[str, int, int, dict], None]  # (case, index, total, record)


class RunnerError(ChallengeError):
    """The runner cannot evaluate right now; the submission stays pending.
    `transient` marks failures worth retrying with backoff (engine hiccups, pulls)."""


class SubmissionFailure(Exception):
    """The submission failed; `reason` is what its participant is shown."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ContainerFailed(SubmissionFailure):
    """A failed container run; keeps its record so the result shows exit code and timings."""

    def __init__(self, reason: str, stage: str, record: RunRecord | None = None,
                 measured: dict[str, Any] | None = None):
        super().__init__(reason)
        self.stage, self.record, self.measured = stage, record, measured


@dataclass(frozen=True)
class RunnerConfig:
    """How this runner host is set up: hidden data, scratch, cache and logs, GPUs, what it accepts."""

    data_root: Path
    work_dir: Path | None = None
    cache_dir: Path | None = None
    log_dir: Path | None = None
    allow_local_images: bool = False
    runtime: str | None = None
    gpu_ids: tuple[str, ...] = ()

    def phase_data(self, phase: Phase) -> tuple[Path, Path]:
        folder = self.data_root / phase.challenge / phase.slug
        inputs, truth = folder / "inputs", folder / "ground-truth"
        for path in (inputs, truth):
            if not path.is_dir():
                raise RunnerError(f"hidden data missing on this runner: {path} is not a folder")
        return inputs, truth


def evaluate(submission: Submission, *, store: Store, executor: Executor, config: RunnerConfig,
             evaluation_image: str, on_case: CaseCallback | None = None) -> Result:
    """Run one submission and return its result (not yet written); RunnerError if the runner,
    not the submission, failed."""
    phase = store.phase(submission.challenge, submission.phase)
    inputs, truth = config.phase_data(phase)
    created, started = store.submitted_at(submission), _now()
    # Containers write as another user; what the host cannot delete is left to the OS's temp cleaner.
    with tempfile.TemporaryDirectory(prefix="challenge-eval-", dir=config.work_dir, ignore_cleanup_errors=True) as tmp:
        job = _Job(submission, phase, executor, config, Path(tmp), on_case or (lambda *a: None))
        job.run(store, inputs, truth, evaluation_image)
    return Result(
        challenge=submission.challenge, phase=submission.phase, participant=submission.participant,
        submission=submission.id, status="failed" if job.error else "succeeded",
        created_at=_iso(created), started_at=_iso(started), finished_at=_iso(_now()),
        metrics=job.metrics, error=job.error, algorithm=job.runs.get("algorithm"),
        evaluation=job.runs.get("evaluation"),
        logs=job.logs if phase.give_algorithm_editors_job_view_permissions else None,
        runner_version=__version__,
    )


class _Job:
    """The state of one evaluation while it runs."""

    def __init__(self, submission: Submission, phase: Phase, executor: Executor, config: RunnerConfig,
                 tmp: Path, on_case: CaseCallback):
        self.submission, self.phase, self.executor, self.config = submission, phase, executor, config
        self.tmp, self.on_case = tmp, on_case
        self.predictions = _writable(tmp / "predictions")
        self.cache = OutputCache(config.cache_dir) if config.cache_dir else None
        self.runs: dict[str, RunRecord] = {}
        self.logs: dict[str, str] = {}
        self.metrics: dict[str, Any] | None = None
        self.error: str | None = None

    def run(self, store: Store, inputs: Path, truth: Path, evaluation_image: str) -> None:
        try:
            if self.submission.image:
                self.runs["algorithm"] = self._algorithm(inputs)
            else:
                unpack_predictions(_predictions_file(self.submission, store), self.predictions,
                                   sha256=self.submission.predictions_sha256 or "")
            self.runs["evaluation"] = self._evaluation(evaluation_image, truth)
        except ContainerFailed as failure:
            if failure.record is not None:
                self.runs[failure.stage] = failure.record
            self.error = failure.reason
        except SubmissionFailure as failure:
            self.error = failure.reason

    # --- algorithm ---------------------------------------------------------------------------

    def _algorithm(self, inputs: Path) -> RunRecord:
        ref = self.submission.image or ""
        if why := image_refusal(ref, allowed=self.phase.allowed_registries, allow_local=self.config.allow_local_images):
            raise SubmissionFailure(f"Algorithm image {ref}: {why}")
        image_id = self._image_id(ref, "Algorithm image could not be used")
        per_case = self.phase.inference_mode == "per-case"
        cases = sorted(p.name for p in inputs.iterdir()) if per_case else [None]
        if per_case and not cases:
            raise RunnerError(f"hidden data missing on this runner: no cases in {inputs}")
        measured: dict[str, dict[str, Any]] = {}
        with self._area(self.phase.algorithm) as area:
            # Cases run in order, so the first one failing stops the job before the rest spend GPU time.
            for index, case in enumerate(cases):
                case_input = inputs if case is None else self._case_input(inputs, case)
                try:
                    measured[case or ""] = self._algorithm_case(area, image_id, case_input, case)
                except ContainerFailed as failure:
                    if failure.measured is not None:
                        measured[case or ""] = failure.measured
                    failure.record = _fold(ref, image_id, measured, per_case=per_case)
                    raise
                if case is not None:
                    self.on_case(case, index, len(cases), measured[case])
        return _fold(ref, image_id, measured, per_case=per_case)

    def _algorithm_case(self, area: OutputArea, image_id: str, case_input: Path, case: str | None) -> dict[str, Any]:
        """Measurements of one case (or of the batch when `case` is None), reused from the cache if
        this image already ran on exactly this input."""
        key = OutputCache.key(image_id, case_input) if self.cache else ""
        cached = self.cache.get(key, self.predictions) if self.cache else None
        if cached is not None:
            return {**cached, "reused": True}
        limits = self.phase.algorithm
        spec = self._spec(image_id, (Mount(case_input, "/input"),), limits, gpus=limits.gpus)
        outcome = self._contained(spec, area, "algorithm" if case is None else f"algorithm-{case}")
        measured = {"exit_code": outcome.exit_code, "wall_time_s": outcome.wall_time_s,
                    "timed_out": outcome.timed_out, "oom_killed": outcome.oom_killed,
                    "peak_memory_bytes": outcome.peak_memory_bytes,
                    "gpu_memory_max_bytes": outcome.gpu.max_bytes if outcome.gpu else None,
                    "gpu_memory_auc_byte_s": outcome.gpu.auc_byte_seconds if outcome.gpu else None,
                    "reused": False}
        if not outcome.ok:
            where = f" on case {case}" if case is not None else ""
            raise ContainerFailed(f"Algorithm failed{where}: {_reason(outcome, spec, limits)}", "algorithm",
                                  measured=measured)
        produced = _writable(self.tmp / "produced" / (case or "batch"))
        with _ran("algorithm", measured=measured):
            self._collect(area, produced, "Algorithm")
        shutil.copytree(produced, self.predictions, dirs_exist_ok=True)
        if self.cache:
            self.cache.put(key, produced, record=measured)
        return measured

    def _case_input(self, inputs: Path, case: str) -> Path:
        """A folder holding just this case, linked (not copied) where the filesystem allows."""
        folder = self.tmp / "case-inputs" / case
        folder.mkdir(parents=True)
        source = inputs / case
        if source.is_dir():
            shutil.copytree(source, folder / case, copy_function=_link_or_copy)
        else:
            _link_or_copy(source, folder / case)
        return folder

    # --- evaluation --------------------------------------------------------------------------

    def _evaluation(self, image: str, truth: Path) -> RunRecord:
        image_id = self._image_id(image, f"evaluation image for {self.phase.challenge}/{self.phase.slug}", runner=True)
        limits = self.phase.evaluation
        spec = self._spec(image_id, (Mount(self.predictions, "/input"), Mount(truth, GROUND_TRUTH)), limits)
        scores = _writable(self.tmp / "evaluation")
        with self._area(limits) as area:
            outcome = self._contained(spec, area, "evaluation")
            record = RunRecord(image=image, image_id=image_id, exit_code=outcome.exit_code,
                               wall_time_s=outcome.wall_time_s, timed_out=outcome.timed_out,
                               oom_killed=outcome.oom_killed, peak_memory_bytes=outcome.peak_memory_bytes)
            if not outcome.ok:
                raise ContainerFailed(f"Evaluation failed: {_reason(outcome, spec, limits)}", "evaluation", record)
            with _ran("evaluation", record=record):
                self._collect(area, scores, "Evaluation")
        with _ran("evaluation", record=record):
            self.metrics = self._scored(read_metrics(scores))
        return record

    def _scored(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """The metrics, if they hold a number at the phase's score path (else it cannot be ranked)."""
        if lookup(metrics, self.phase.score.path) is None:
            raise SubmissionFailure(f"Evaluation failed: metrics.json has no number at {self.phase.score.path} "
                                    "(missing, NaN or not a number)")
        return metrics

    # --- shared ------------------------------------------------------------------------------

    def _image_id(self, ref: str, what: str, *, runner: bool = False) -> str:
        try:
            return self.executor.image_id(ref)
        except SandboxError as exc:
            if runner or exc.transient:
                raise RunnerError(f"{what}: {exc}", transient=exc.transient) from None
            raise SubmissionFailure(f"{what}: {exc}") from None

    @contextlib.contextmanager
    def _area(self, limits: Limits):
        try:
            with self.executor.output_area(limits.output) as area:
                yield area
        except SandboxError as exc:
            raise RunnerError(str(exc), transient=exc.transient) from None

    def _spec(self, image_id: str, mounts: tuple[Mount, ...], limits: Limits, gpus: int = 0) -> RunSpec:
        if gpus > len(self.config.gpu_ids):
            raise RunnerError(f"the phase asks for {gpus} GPU(s); this runner is configured with "
                              f"{len(self.config.gpu_ids)} (set CHALLENGE_GPUS)")
        return RunSpec(image=image_id, mounts=mounts, time_limit=limits.time_limit, memory=limits.memory,
                       cpus=limits.cpus, runtime=self.config.runtime, gpus=self.config.gpu_ids[:gpus],
                       job=self.submission.key)

    def _contained(self, spec: RunSpec, area: OutputArea, stage: str) -> Outcome:
        try:
            outcome = self.executor.run(spec, area)
        except SandboxError as exc:
            raise RunnerError(f"{stage} container could not run: {exc}", transient=exc.transient) from None
        self._keep_logs(stage, outcome.logs)
        return outcome

    def _collect(self, area: OutputArea, target: Path, stage: str) -> None:
        try:
            area.collect(target)
        except UnsafeOutput as exc:
            raise SubmissionFailure(f"{stage} output refused: {exc}") from None
        except SandboxError as exc:
            raise RunnerError(str(exc), transient=exc.transient) from None
        if not area.clear():
            raise RunnerError("/output could not be emptied between runs", transient=True)

    def _keep_logs(self, stage: str, text: str) -> None:
        """Full logs stay on the runner for organizers; debugging phases also show them to the participant."""
        self.logs[stage] = text[-PARTICIPANT_LOG_BYTES:]
        if self.config.log_dir:
            folder = self.config.log_dir / self.submission.key
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{stage}.log").write_text(text)


@contextlib.contextmanager
def _ran(stage: str, *, record: RunRecord | None = None, measured: dict[str, Any] | None = None) -> Iterator[None]:
    """A failure found after the container ran (refused outputs, bad metrics) keeps the run's
    record, so the result still shows that it ran, how long and with what exit code."""
    try:
        yield
    except ContainerFailed:
        raise
    except SubmissionFailure as failure:
        raise ContainerFailed(failure.reason, stage, record, measured) from None


def _reason(outcome: Outcome, spec: RunSpec, limits: Limits) -> str:
    line = outcome.error_line(spec.time_limit) or ""
    if "No space left on device" in line:
        line += f" (/output is limited to {limits.output // 1024**2} MiB, /tmp to {spec.tmp_size // 1024**2} MiB)"
    return line


def _fold(ref: str, image_id: str, measured: dict[str, dict[str, Any]], *, per_case: bool) -> RunRecord:
    """One record from the runs of a job: times summed, peaks maxed, the last run's exit state."""
    runs = list(measured.values())
    last = runs[-1]
    return RunRecord(
        image=ref, image_id=image_id, exit_code=last["exit_code"],
        wall_time_s=round(sum(r["wall_time_s"] or 0 for r in runs), 3),
        timed_out=last["timed_out"], oom_killed=last["oom_killed"],
        peak_memory_bytes=_max(r["peak_memory_bytes"] for r in runs),
        gpu_memory_max_bytes=_max(r["gpu_memory_max_bytes"] for r in runs),
        gpu_memory_auc_byte_s=_sum(r["gpu_memory_auc_byte_s"] for r in runs),
        reused=all(r["reused"] for r in runs),
        cases=measured if per_case else None,
        aggregates=_aggregates(measured) if per_case else None,
    )


def _aggregates(cases: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for name in ("wall_time_s", "peak_memory_bytes", "gpu_memory_max_bytes", "gpu_memory_auc_byte_s"):
        values = [c[name] for c in cases.values() if c.get(name) is not None]
        if values:
            out[name] = {"mean": statistics.fmean(values), "max": max(values), "sum": sum(values)}
    return out


def _max(values: Iterable[N | None]) -> N | None:
    return max((v for v in values if v is not None), default=None)


def _sum(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


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
        raise SubmissionFailure(f"Evaluation failed: metrics.json is not valid JSON ({exc.msg}, "
                                f"line {exc.lineno})") from None
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


def unpack_predictions(path: Path, target: Path, *, sha256: str) -> None:
    """Verify the pinned hash, then copy the file, or unpack a zip safely."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise SubmissionFailure(f"Predictions file sha256 is {digest}, but the submission pins {sha256}")
    if not zipfile.is_zipfile(path):
        shutil.copyfile(path, target / path.name)
        return
    try:
        extract_zip(path, target)
    except (UnsafeOutput, zipfile.BadZipFile) as exc:
        raise SubmissionFailure(f"Predictions archive refused: {exc}") from None


def _link_or_copy(source: str | Path, dest: str | Path) -> None:
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


def _writable(path: Path) -> Path:
    """A folder the container's unprivileged user can write into."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)
    return path


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")


