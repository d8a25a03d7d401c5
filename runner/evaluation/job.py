"""One submission end to end: algorithm (or predictions), evaluation container, checked metrics, result.

Anything that goes wrong because of the submission becomes a failed result with one readable
reason, and keeps what was measured of the runs that happened. Anything that goes wrong with the
runner itself (no hidden data, engine down) raises RunnerError and writes nothing, so the
submission stays pending and is picked up again.

The container contract is the phase's: where the algorithm reads and writes
(`algorithm_input_path`, `algorithm_output_path`), what it runs (`algorithm_command`), how many
cases each run gets (`cases_per_run`), and whose layout /input and /output follow (the runner's or
grand-challenge's: `grand_challenge`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner import __version__
from runner.codekey import file_sha256
from runner.errors import printable
from runner.evaluation import grand_challenge as gc
from runner.evaluation.cache import DEFAULT_MAX_AGE_S, DEFAULT_MAX_BYTES, OutputCache
from runner.evaluation.failures import ContainerFailed, RunnerError, SubmissionFailure
from runner.evaluation.metrics import UnreadableJson, read_metrics
from runner.evaluation.provenance import data_key, provenance
from runner.execution.outputs import OutputLimits, UnsafeOutput, extract_zip
from runner.execution.sandbox import Executor, Log, Mount, Outcome, OutputArea, RunAs, RunSpec, SandboxError, last_line
from runner.tree import download
from runner.tree.jsonpaths import lookup
from runner.tree.phase_model import Limits, Phase, nested_paths
from runner.tree.policy import participant_logs
from runner.tree.references import image_refusal, registry_of
from runner.tree.result_model import MEASUREMENTS, SUMMARIES, Measurement, Result, RunRecord
from runner.tree.sealing import Identity
from runner.tree.store import Store
from runner.tree.submission_model import Submission, details_of

if TYPE_CHECKING:  # imported where used: a job of an image reference, not a training phase, needs neither
    from runner.evaluation import training
    from runner.evaluation.archives import Pace

__all__ = ["GROUND_TRUTH", "ContainerFailed", "RunnerConfig", "RunnerError", "SubmissionFailure",
           "evaluate", "predict", "read_metrics", "unpack_predictions"]

PARTICIPANT_LOG_BYTES = 64 * 1024
GROUND_TRUTH = "/opt/ml/input/data/ground_truth"
WORK_PREFIX = "challenge-eval-"  # then the runner's pid: a later runner removes what a dead one left
CPU_FALLBACK = "none (cpu fallback)"
ARCHIVE_MAX_BYTES = 32 * 1024**3

CaseCallback = Callable[[str, int, int, dict[str, Any]], None]  # (case or run, index, total, record)


@dataclass(frozen=True)
class RunnerConfig:
    """How this runner host is set up: hidden data, scratch, cache and logs, GPUs, keys, limits."""

    data_root: Path
    work_dir: Path | None = None
    cache_dir: Path | None = None
    log_dir: Path | None = None
    allow_local_images: bool = False
    runtime: str | None = None
    gpu_ids: tuple[str, ...] = ()
    cpu_fallback: bool = False  # a GPU phase runs without one here (demo, local tries) instead of waiting
    output_limits: OutputLimits = field(default_factory=OutputLimits)
    cache_max_bytes: int = DEFAULT_MAX_BYTES
    cache_max_age_s: float = DEFAULT_MAX_AGE_S
    runner_keys: tuple[Identity, ...] = ()  # opens image archives encrypted to this runner's public key
    archive_max_bytes: int = ARCHIVE_MAX_BYTES
    download_pace: Pace = field(default_factory=lambda: _pace())  # how slow an archive's server may be
    # Training phases: each submission's checkpoints, model and time spent, kept across runner restarts.
    training_dir: Path | None = None
    preserved_dir: Path | None = None  # archives of algorithm images kept on this runner (`challenge preserve`)
    checkout: Path | None = None  # the tree evaluated from (a warm runner's jobs each have theirs): labels its runs

    def phase_data(self, phase: Phase) -> tuple[Path, Path]:
        folder = self.data_root / phase.challenge / phase.slug
        inputs, truth = folder / "inputs", folder / "ground-truth"
        for path in (inputs, truth):
            if not path.is_dir():
                raise RunnerError(f"hidden data missing on this runner: {path} is not a folder")
        return inputs, truth

    def training_data(self, phase: Phase) -> Path:
        folder = self.data_root / phase.challenge / phase.slug / "training"
        if not folder.is_dir():
            raise RunnerError(f"hidden training data missing on this runner: {folder} is not a folder")
        return folder

    def gpus_for(self, wanted: int) -> tuple[str, ...] | None:
        """The GPUs a run asking for `wanted` gets on this runner; None: it runs on the CPU instead
        (--cpu-fallback). RunnerError when the runner has too few: the submission waits for one that has them."""
        if wanted <= len(self.gpu_ids):
            return self.gpu_ids[:wanted]
        if self.cpu_fallback:
            return None
        raise RunnerError(f"the phase asks for {wanted} GPU(s); this runner is configured with "
                          f"{len(self.gpu_ids)} (set CHALLENGE_GPUS, or --cpu-fallback to run without)")

    def output_cache(self) -> OutputCache | None:
        if self.cache_dir is None:
            return None
        return OutputCache(self.cache_dir, max_bytes=self.cache_max_bytes, max_age_s=self.cache_max_age_s)


@dataclass(frozen=True)
class Run:
    """One algorithm run: its name (a case, `first..last` of a batch, None for the whole input), the
    cases it covers, the folder mounted as its input, and its job pk in grand-challenge's layout."""

    name: str | None
    cases: tuple[str, ...]
    inputs: Path
    pk: str


def evaluate(submission: Submission, *, store: Store, executor: Executor, config: RunnerConfig,
             evaluation_image: str, evaluation_context: str | None = None,
             on_case: CaseCallback | None = None, refusal: str | None = None,
             log: Log = lambda line: None) -> Result:
    """Run one submission and return its result (not yet written, not yet signed); RunnerError if the
    runner, not the submission, failed. `evaluation_context`: the digest of the evaluation image's
    build context, which its provenance records (None: a pinned image). `refusal`: why it must not run
    (`Store.refusal_at_landing`): its result is failed with that reason, and nothing runs. `log` hears
    what the runner must tell its operator and no result holds (training checkpoints it could not remove)."""
    phase = store.phase(submission.challenge, submission.phase)
    inputs, truth = config.phase_data(phase)
    data = {"inputs": inputs, "ground-truth": truth}
    if phase.submission_kind == "training":
        data["training"] = config.training_data(phase)
    data_key(config.data_root)  # a runner that cannot hash the data says so before it spends a run
    created, started = store.submitted_at(submission), _now()
    prefix = f"{WORK_PREFIX}{os.getpid()}-"
    with tempfile.TemporaryDirectory(prefix=prefix, dir=config.work_dir, ignore_cleanup_errors=True) as tmp:
        job = Job(submission, phase, executor, config, Path(tmp), on_case or (lambda *a: None), log=log)
        if refusal is None:
            job.run(inputs, truth, evaluation_image)
        else:
            job.error = refusal
    evaluated_by = job.runs["evaluation"].image_id if "evaluation" in job.runs else None
    origin = provenance(submission, phase_file=store.paths.phase_file(phase.challenge, phase.slug), root=store.root,
                        data=data, data_root=config.data_root, evaluation_image=evaluated_by or evaluation_image,
                        evaluation_context=evaluation_context)
    return Result(
        challenge=submission.challenge, phase=submission.phase, participant=submission.participant,
        submission=submission.id, status="failed" if job.error else "succeeded",
        created_at=_iso(created), started_at=_iso(started), finished_at=_iso(_now()),
        metrics=job.metrics, error=job.error, algorithm=job.runs.get("algorithm"),
        evaluation=job.runs.get("evaluation"), training=job.runs.get("training"),
        logs=participant_logs(job.logs) if phase.give_algorithm_editors_job_view_permissions else None,
        runner_version=__version__,
        details=details_of(submission),  # the site lists title and links without reading submission files
        provenance=origin,
    )


def predict(submission: Submission, *, store: Store, executor: Executor, config: RunnerConfig, inputs: Path,
            output: Path, on_case: CaseCallback | None = None) -> RunRecord:
    """`challenge run`: the submission's algorithm alone on `inputs` (laid out as the phase's hidden inputs),
    with the runs, sandbox and limits of an evaluation; what its evaluation would read is copied into
    `output`. SubmissionFailure when the algorithm fails (`ContainerFailed` keeps what was measured),
    RunnerError as `evaluate`. The caller checks `policy.not_runnable` first."""
    phase = store.phase(submission.challenge, submission.phase)
    prefix = f"{WORK_PREFIX}{os.getpid()}-"
    with tempfile.TemporaryDirectory(prefix=prefix, dir=config.work_dir, ignore_cleanup_errors=True) as tmp:
        job = Job(submission, phase, executor, config, Path(tmp), on_case or (lambda *a: None))
        record = job.run_algorithm(inputs, job.algorithm_image())
        shutil.copytree(job.predictions, output, dirs_exist_ok=True)
    return record


class Job:
    """The state of one evaluation while it runs: `run` is the whole of it; `algorithm_image` then
    `run_algorithm` are its algorithm's steps alone (what `predict` runs)."""

    def __init__(self, submission: Submission, phase: Phase, executor: Executor, config: RunnerConfig,
                 tmp: Path, on_case: CaseCallback, *, log: Log = lambda line: None):
        self.submission, self.phase, self.executor, self.config = submission, phase, executor, config
        self.tmp, self.on_case, self.log = tmp, on_case, log
        self.predictions = _writable(tmp / "predictions")
        self.cache = config.output_cache()
        self.runs: dict[str, RunRecord] = {}
        self.logs: dict[str, str] = {}
        self.jobs = gc.PredictionsFile(self.predictions / gc.PREDICTIONS)  # grand-challenge's evaluation layout
        self.values = gc.ValueBudget()  # what the value outputs in it may still take
        self.metrics: dict[str, Any] | None = None
        self.error: str | None = None
        self.gpu: str | None = None  # what a GPU phase's algorithm got: its GPU(s), or the CPU fallback
        self.ref = ""  # the algorithm as submitted: an image reference or an archive's URL
        self.model: training.Trained | None = None  # training phases: what the predict runs mount
        self.last_lines: dict[str, str | None] = {}  # each stage's last stderr line, as its record shows it
        self.users: dict[str, RunAs] = {}  # by image ID: who its containers run as (`_run_as`)

    def run(self, inputs: Path, truth: Path, evaluation_image: str) -> None:
        try:
            if self.phase.submission_kind == "training" or self.submission.image or self.submission.image_archive:
                image_id = self.algorithm_image()
                if self.phase.submission_kind == "training":
                    self.runs["training"] = self._train(image_id)
                self.runs["algorithm"] = self.run_algorithm(inputs, image_id)
            else:
                unpack_predictions(_predictions_file(self.submission), self.predictions,
                                   sha256=self.submission.predictions_sha256 or "")
            self.runs["evaluation"] = self._evaluation(evaluation_image, truth)
        except ContainerFailed as failure:
            if failure.record is not None:
                self.runs[failure.stage] = failure.record
            self.error = printable(failure.reason)
        except SubmissionFailure as failure:
            self.error = printable(failure.reason)  # what a participant wrote may be in it: one line, valid text

    # --- algorithm ---------------------------------------------------------------------------

    def algorithm_image(self) -> str:
        """The local image ID of the submitted algorithm (`ref` becomes what was submitted), checked for
        the user its containers run as."""
        self.ref, image_id = self._algorithm_image()
        self._run_as(image_id, "Algorithm image could not be used")
        return image_id

    def run_algorithm(self, inputs: Path, image_id: str) -> RunRecord:
        """The algorithm's runs on `inputs`, its predictions left in `predictions`; ContainerFailed
        carries what was measured up to the failing run."""
        ref, runs = self.ref, self._plan(inputs)
        measured: dict[str, dict[str, Any]] = {}
        # Runs go in case order, so the first one failing stops the job before the rest spend GPU time.
        for index, run in enumerate(runs):
            try:
                # An area per run: the engine's pool empties the one a run gave back while the next one runs.
                with self._area(self.phase.algorithm, image_id) as area:
                    measured[run.name or ""] = self._algorithm_run(area, image_id, run)
            except ContainerFailed as failure:
                if failure.measured is not None:
                    measured[run.name or ""] = failure.measured
                failure.record = self._fold(ref, image_id, measured)
                raise
            if run.name is not None:
                self.on_case(run.name, index, len(runs), measured[run.name])
        if self.phase.evaluation_interface == "grand-challenge":
            self.jobs.close()
        return self._fold(ref, image_id, measured)

    def _train(self, image_id: str) -> RunRecord:
        """Type 3: the image trained on the hidden training data (resumed, or reused when done);
        the predict runs then mount its model read-only."""
        from runner.evaluation import training  # training phases only

        phase, root = self.phase, self.config.training_dir or self.tmp / "training"
        self._gpus(phase.training.gpus)  # the record says which GPU(s) it trained on
        # What the runner may not remove of its checkpoints is removed as the user its container runs as.
        remover = training.Remover(self.executor.remove_as, self.users[image_id].user, self.log)
        folder = training.TrainingFolder(root.joinpath(*self.submission.key.split("/")), remover)
        job = training.TrainingRun(
            phase=phase, image_ref=self.ref, image_id=image_id, data=self.config.training_data(phase),
            folder=folder, spec=self._spec, run=lambda spec, area: self._contained(spec, area, "training"),
            collect=lambda area, target: self._collect(area, target, "Training",
                                                       limits=OutputLimits(max_bytes=phase.training.output)),
            gpu=self.gpu)
        try:
            with self._area(phase.training, image_id) as area:
                self.model = training.train(job, area)
        finally:  # every attempt's log, resumes included (a debugging phase shows them to the participant)
            if folder.log.is_file():
                self._keep_logs("training", folder.log.read_text(errors="replace"))
        return self.model.record

    def _algorithm_image(self) -> tuple[str, str]:
        """The submitted reference (image or archive URL) and the local image ID to run."""
        from runner.evaluation.archives import archive_image, load_preserved  # archives, and the preserved fallback

        archive = self.submission.image_archive
        if archive is not None:
            folder = (self.config.cache_dir or self.tmp) / "archives"
            return archive.url, archive_image(archive, submission=self.submission.key, executor=self.executor,
                                              folder=folder, keys=self.config.runner_keys,
                                              allow_local=self.config.allow_local_images,
                                              max_bytes=self.config.archive_max_bytes, pace=self.config.download_pace)
        ref = self.submission.image or ""
        if why := pull_refusal(ref, allowed=self.phase.allowed_registries, allow_local=self.config.allow_local_images):
            raise SubmissionFailure(f"Algorithm image {ref}: {why}")
        try:
            return ref, self._image_id(ref, "Algorithm image could not be used")
        except (SubmissionFailure, RunnerError):
            # Gone upstream or unreachable: the archive this runner preserved of it (`challenge preserve`), if any.
            kept = self.config.preserved_dir and load_preserved(ref, executor=self.executor,
                                                                folder=self.config.preserved_dir)
            if not kept:
                raise
            return ref, kept

    def _plan(self, inputs: Path) -> list[Run]:
        """The runs: the whole input at once (batch), or the cases in order, `cases_per_run` at a time.
        grand-challenge's algorithm interface runs one job per case, its folder as the job's /input."""
        key = self.submission.key
        if self.phase.algorithm_interface == "grand-challenge":
            return [Run(case, (case,), self._gc_input(inputs / case, case), gc.job_pk(key, case))
                    for case in _cases(inputs)]
        if not self.phase.runs_per_case:
            return [Run(None, (), inputs, gc.job_pk(key, "batch"))]
        cases, size = _cases(inputs), self.phase.cases_per_run
        batches = [tuple(cases[i:i + size]) for i in range(0, len(cases), size)]
        return [Run(_run_name(batch), batch, self._case_input(inputs, batch), gc.job_pk(key, _run_name(batch)))
                for batch in batches]

    def _algorithm_run(self, area: OutputArea, image_id: str, run: Run) -> dict[str, Any]:
        """Measurements of one run, its outputs collected and placed for the evaluation; reused from
        the cache if this image already ran on exactly this input."""
        produced = _writable(self.tmp / "produced" / (run.pk if run.name else "batch"))
        started_at = _now().isoformat()
        spec = self._algorithm_spec(image_id, run)
        # A trained model is part of what ran: the same image with another model is another algorithm.
        model = f"{image_id}+model:{self.model.record.model_sha256}" if self.model else image_id
        key = OutputCache.key(model, run.inputs, spec) if self.cache else ""
        cached = self.cache.get(key, produced) if self.cache else None
        measured = {**cached, "reused": True} if cached is not None else self._contained_run(area, spec, run, produced)
        with _ran("algorithm", measured=measured):
            self._place(run, produced, measured, started_at=started_at)
        if self.cache and cached is None:
            self.cache.put(key, produced, record=measured)
        return measured

    def _algorithm_spec(self, image_id: str, run: Run) -> RunSpec:
        limits, phase = self.phase.algorithm, self.phase
        if nested_paths(phase.algorithm_input_path, phase.algorithm_output_path):
            raise RunnerError(f"phase {phase.challenge}/{phase.slug}: algorithm_input_path and algorithm_output_path "
                              "must be separate folders")
        mounts = (Mount(run.inputs, phase.algorithm_input_path),
                  *((Mount(self.model.model, phase.model_path),) if self.model else ()))
        return self._spec(image_id, mounts, limits, gpus=limits.gpus, command=phase.algorithm_command,
                          output_path=phase.algorithm_output_path)

    def _contained_run(self, area: OutputArea, spec: RunSpec, run: Run, produced: Path) -> dict[str, Any]:
        limits = self.phase.algorithm
        outcome = self._contained(spec, area, "algorithm" if run.name is None else f"algorithm-{run.name}")
        measured = _measured(outcome, run)
        if not outcome.ok:
            raise ContainerFailed(f"Algorithm failed{_on(run)}: {_reason(outcome, spec, limits)}", "algorithm",
                                  measured=measured)
        with _ran("algorithm", measured=measured):
            self._collect(area, produced, f"Algorithm{_on(run)}", limits=self.config.output_limits)
        return measured

    def _place(self, run: Run, produced: Path, measured: dict[str, Any], *, started_at: str) -> None:
        """Where the evaluation finds this run's outputs: merged under /input (the runner's layout),
        under /input/<case>/ (a grand-challenge algorithm scored by a runner evaluation), or under
        /input/<job pk>/output/ with a predictions.json entry (grand-challenge's evaluation layout)."""
        gc_algorithm, gc_evaluation = (interface == "grand-challenge" for interface in (
            self.phase.algorithm_interface, self.phase.evaluation_interface))
        # Values predictions.json keeps count against the submission's budget; others only against their job's.
        budget = self.values if gc_evaluation else gc.ValueBudget()
        outputs = self._gc_outputs(run, produced, budget) if gc_algorithm or gc_evaluation else []
        if gc_evaluation:
            shutil.copytree(produced, self.predictions / gc.job_outputs(run.pk), dirs_exist_ok=True)
            self.jobs.add(gc.job_record(pk=run.pk, image=self.ref, inputs=self._gc_inputs(run), outputs=outputs,
                                        wall_time_s=measured.get("wall_time_s"), started_at=started_at,
                                        completed_at=_now().isoformat()))
        elif gc_algorithm:
            shutil.copytree(produced, self.predictions / (run.name or "batch"), dirs_exist_ok=True)
        else:  # every run's outputs in one folder
            if clash := _clash(produced, self.predictions):
                raise SubmissionFailure(f"Algorithm output refused{_on(run)}: {printable(clash, 200)} is a file in "
                                        "one run's outputs and a folder in another's")
            shutil.copytree(produced, self.predictions, dirs_exist_ok=True)

    def _gc_outputs(self, run: Run, produced: Path, budget: gc.ValueBudget) -> list[dict[str, Any]]:
        declared = self.phase.algorithm_outputs if self.phase.algorithm_interface == "grand-challenge" else ()
        try:
            return gc.value_records(produced, gc.sockets_in(produced, declared), owner=gc.job_outputs(run.pk),
                                    seen_at=f"/input/{gc.job_outputs(run.pk)}", budget=budget)
        except gc.OutputMissing as exc:
            raise SubmissionFailure(f"Algorithm output refused{_on(run)}: {exc}") from None

    def _gc_inputs(self, run: Run) -> list[dict[str, Any]]:
        declared = self.phase.algorithm_inputs if self.phase.algorithm_interface == "grand-challenge" else ()
        try:
            return gc.value_records(run.inputs, gc.sockets_in(run.inputs, declared), owner=f"input/{run.name}",
                                    seen_at=None)  # the evaluation does not get a job's inputs
        except gc.OutputMissing as exc:
            raise RunnerError(f"hidden data: the input of {run.name or 'the batch'} cannot be listed ({exc})") from None

    def _case_input(self, inputs: Path, cases: tuple[str, ...]) -> Path:
        """A folder holding just these cases, linked (not copied) where the filesystem allows."""
        folder = self.tmp / "case-inputs" / _run_name(cases).replace("/", "_")
        folder.mkdir(parents=True)
        for case in cases:
            _link_tree(inputs / case, folder / case)
        return folder

    def _gc_input(self, case_folder: Path, case: str) -> Path:
        """A case folder as grand-challenge provisions a job's /input: its files, and inputs.json."""
        if not case_folder.is_dir():
            raise RunnerError(f"hidden data: {case_folder} is not a folder laid out as a job's /input "
                              "(algorithm_interface: grand-challenge)")
        folder = self.tmp / "case-inputs" / case
        shutil.copytree(case_folder, folder, copy_function=_link_or_copy,
                        ignore=shutil.ignore_patterns(gc.INPUTS))  # ours replaces any inputs.json
        try:
            gc.write_inputs_json(folder, gc.sockets_in(folder, self.phase.algorithm_inputs), owner=f"input/{case}")
        except gc.OutputMissing as exc:
            raise RunnerError(f"hidden data: case {case} does not match the phase's algorithm_inputs ({exc})") from None
        return folder

    # --- evaluation --------------------------------------------------------------------------

    def _evaluation(self, image: str, truth: Path) -> RunRecord:
        what = f"evaluation image for {self.phase.challenge}/{self.phase.slug}"
        image_id = self._image_id(image, what, runner=True)
        self._run_as(image_id, what, runner=True)
        limits = self.phase.evaluation
        spec = self._spec(image_id, (Mount(self.predictions, "/input"), Mount(truth, GROUND_TRUTH)), limits)
        scores = _writable(self.tmp / "evaluation")
        with self._area(limits, image_id) as area:
            outcome = self._contained(spec, area, "evaluation")
            record = RunRecord(image=image, image_id=image_id, exit_code=outcome.exit_code,
                               wall_time_s=outcome.wall_time_s, timed_out=outcome.timed_out,
                               oom_killed=outcome.oom_killed, peak_memory_bytes=outcome.peak_memory_bytes,
                               last_line=self.last_lines.get("evaluation"))
            if not outcome.ok:
                raise ContainerFailed(f"Evaluation failed: {_reason(outcome, spec, limits)}", "evaluation", record)
            with _ran("evaluation", record=record):
                self._collect(area, scores, "Evaluation", limits=OutputLimits())
        with _ran("evaluation", record=record):
            self.metrics = self._scored(_read_metrics(scores))
        return record

    def _scored(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """The metrics, if they hold a number at the phase's score path (else it cannot be ranked)."""
        if lookup(metrics, self.phase.score.path) is None:
            raise SubmissionFailure(f"Evaluation failed: metrics.json has no number at {self.phase.score.path} "
                                    "(missing, NaN or not a number)")
        return metrics

    # --- shared ------------------------------------------------------------------------------

    def _image_id(self, ref: str, what: str, *, runner: bool = False) -> str:
        with _asked(what, runner=runner):
            return self.executor.image_id(ref)

    def _run_as(self, image_id: str, what: str, *, runner: bool = False) -> None:
        """Record who the containers of `image_id` run as (its areas and runs read it)."""
        with _asked(what, runner=runner):
            self.users[image_id] = self.executor.run_as(image_id)

    @contextlib.contextmanager
    def _area(self, limits: Limits, image_id: str) -> Iterator[OutputArea]:
        """An output area its image's user writes (a tmpfs is owned by one user)."""
        try:
            with self.executor.output_area(limits.output, user=self.users[image_id].user) as area:
                yield area
        except SandboxError as exc:
            raise RunnerError(str(exc), transient=exc.transient) from None

    def _spec(self, image_id: str, mounts: tuple[Mount, ...], limits: Limits, *, gpus: int = 0,
              command: tuple[str, ...] | None = None, output_path: str = "/output") -> RunSpec:
        return RunSpec(image=image_id, mounts=mounts, time_limit=limits.time_limit, memory=limits.memory,
                       cpus=limits.cpus, runtime=self.config.runtime, gpus=self._gpus(gpus), job=self.submission.key,
                       checkout=self.config.checkout, command=command, output_path=output_path,
                       user=self.users[image_id])

    def _gpus(self, wanted: int) -> tuple[str, ...]:
        """The GPUs a run gets; a GPU phase on a runner without enough of them waits for one that has
        them, unless this runner falls back to the CPU (the result says so)."""
        if wanted == 0:
            return ()
        given = self.config.gpus_for(wanted)
        self.gpu = CPU_FALLBACK if given is None else ",".join(given)
        return given or ()

    def _contained(self, spec: RunSpec, area: OutputArea, stage: str) -> Outcome:
        try:
            outcome = self.executor.run(spec, area)
        except SandboxError as exc:
            raise RunnerError(f"{stage} container could not run: {exc}", transient=exc.transient) from None
        self._keep_logs(stage, outcome.logs)
        self.last_lines[stage.partition("-")[0]] = last_line(outcome.stderr_tail)  # algorithm-<case>: the last run's
        return outcome

    def _collect(self, area: OutputArea, target: Path, stage: str, *, limits: OutputLimits) -> None:
        """Copy the outputs out, then empty the area for the next run (or have it replaced)."""
        try:
            area.collect(target, limits)
            area.clear()
        except UnsafeOutput as exc:
            raise SubmissionFailure(f"{stage} output refused: {exc}") from None
        except SandboxError as exc:
            raise RunnerError(str(exc), transient=exc.transient) from None

    def _keep_logs(self, stage: str, text: str) -> None:
        """Full logs stay on the runner for organizers; debugging phases also show them to the participant."""
        self.logs[stage] = text[-PARTICIPANT_LOG_BYTES:]
        if self.config.log_dir:
            folder = self.config.log_dir / self.submission.key
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{stage}.log").write_text(text)

    def _fold(self, ref: str, image_id: str, measured: dict[str, dict[str, Any]]) -> RunRecord:
        """One record from the runs of a job: each measurement folded as MEASUREMENTS declares (times
        summed, peaks maxed), the last run's exit state."""
        runs, per_case = list(measured.values()) or [{}], self.phase.runs_per_case
        last = runs[-1]
        whole: dict[str, Any] = {m.name: _whole(m, [r.get(m.name) for r in runs]) for m in MEASUREMENTS}
        return RunRecord(
            image=ref, image_id=image_id, exit_code=last.get("exit_code"),
            timed_out=bool(last.get("timed_out")), oom_killed=bool(last.get("oom_killed")), **whole,
            reused=all(r.get("reused") for r in runs),
            cases=measured if per_case else None,
            aggregates=_aggregates(measured) if per_case else None,
            gpu=self.gpu,
            last_line=self.last_lines.get("algorithm"),
        )


@contextlib.contextmanager
def _asked(what: str, *, runner: bool) -> Iterator[None]:
    """The executor's failures about an image: the runner's trouble for its own images (or when trying
    again may help), else the submission's, with `what` was asked."""
    try:
        yield
    except SandboxError as exc:
        if runner or exc.transient:
            raise RunnerError(f"{what}: {exc}", transient=exc.transient) from None
        raise SubmissionFailure(f"{what}: {exc}") from None


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


def _read_metrics(folder: Path) -> dict[str, Any]:
    try:
        return read_metrics(folder)
    except UnreadableJson as exc:
        raise SubmissionFailure(f"Evaluation failed: {exc}") from None


def _measured(outcome: Outcome, run: Run) -> dict[str, Any]:
    measured: dict[str, Any] = {"exit_code": outcome.exit_code, "wall_time_s": outcome.wall_time_s,
                "timed_out": outcome.timed_out, "oom_killed": outcome.oom_killed,
                "peak_memory_bytes": outcome.peak_memory_bytes,
                "gpu_memory_max_bytes": outcome.gpu.max_bytes if outcome.gpu else None,
                "gpu_memory_auc_byte_s": outcome.gpu.auc_byte_seconds if outcome.gpu else None,
                "reused": False}
    if len(run.cases) > 1:
        measured["cases"] = list(run.cases)
    return measured


def pull_refusal(ref: str, *, allowed: tuple[str, ...], allow_local: bool) -> str | None:
    """Why the runner must not pull `ref` in a phase that accepts the registries `allowed`, or None: the
    reference's rules (`image_refusal`), then its registry's address. An address of the runner's own networks
    (private, loopback, link-local) is refused unless the phase names that registry or the run is local: the
    engine would call it from inside them, its answer coming back in the failure line. A name the runner
    cannot look up is left to the pull to report."""
    if why := image_refusal(ref, allowed=allowed, allow_local=allow_local):
        return why
    registry = registry_of(ref)
    if allow_local or registry is None or registry in allowed:
        return None
    try:
        download.resolve(f"https://{registry}/v2/", allow_private=False)
    except download.DownloadError as exc:
        if exc.kind == "private":
            return f"registry {registry} is a private or local address; push to a public registry"
    return None


def _cases(inputs: Path) -> list[str]:
    cases = sorted(p.name for p in inputs.iterdir() if not p.name.startswith("."))
    if not cases:
        raise RunnerError(f"hidden data missing on this runner: no cases in {inputs}")
    return cases


def _run_name(cases: tuple[str, ...]) -> str:
    return cases[0] if len(cases) == 1 else f"{cases[0]}..{cases[-1]}"


def _on(run: Run) -> str:
    if run.name is None:
        return ""
    return f" on case {run.name}" if len(run.cases) == 1 else f" on cases {run.cases[0]} to {run.cases[-1]}"


def _reason(outcome: Outcome, spec: RunSpec, limits: Limits) -> str:
    line = outcome.error_line(spec.time_limit) or ""
    if "No space left on device" in line:
        line += (f" ({spec.output_path} is limited to {limits.output // 1024**2} MiB, "
                 f"/tmp to {spec.tmp_size // 1024**2} MiB)")
    return line


def _aggregates(cases: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """runner.aggregates: each measurement's SUMMARIES over the runs that have it."""
    out = {}
    for measurement in MEASUREMENTS:
        values = [c[measurement.name] for c in cases.values() if c.get(measurement.name) is not None]
        if values:
            out[measurement.name] = {name: summary(values) for name, summary in SUMMARIES.items()}
    return out


def _whole(measurement: Measurement, values: list[float | None]) -> float | None:
    """The job's value of a measurement from its runs' (None: no run has it), to 3 decimals (1 ms)."""
    present = [v for v in values if v is not None]
    return round(SUMMARIES[measurement.whole](present), 3) if present else None


def _predictions_file(submission: Submission) -> Path:
    """The predictions file committed beside the submission: a regular file of the participant's own
    folder, never a path or a link, so no hash of another file can reach a failure line."""
    path = submission.predictions_path
    if path is None:
        raise SubmissionFailure(f"Predictions file {submission.predictions!r} was not found next to the submission")
    return path


def _clash(produced: Path, merged: Path) -> str | None:
    """A path that is a file in `produced` and a folder in `merged`, or the other way round (outputs of
    per-case runs are merged into one folder for the evaluation)."""
    for path in produced.rglob("*"):
        there = merged / path.relative_to(produced)
        if there.exists() and there.is_dir() != path.is_dir():
            return str(path.relative_to(produced))
    return None


def unpack_predictions(path: Path, target: Path, *, sha256: str) -> None:
    """Verify the pinned hash, then copy the file, or unpack a zip safely."""
    digest = file_sha256(path)
    if digest != sha256:
        raise SubmissionFailure(f"Predictions file sha256 is {digest}, but the submission pins {sha256}")
    if not zipfile.is_zipfile(path):
        shutil.copyfile(path, target / path.name)
        return
    try:
        extract_zip(path, target)
    except (UnsafeOutput, zipfile.BadZipFile) as exc:
        raise SubmissionFailure(f"Predictions archive refused: {exc}") from None
    except (zlib.error, RuntimeError, NotImplementedError, EOFError) as exc:  # broken, encrypted, an unknown method
        raise SubmissionFailure(f"Predictions archive refused: it cannot be unpacked ({exc})") from None


def _link_tree(source: Path, dest: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, dest, copy_function=_link_or_copy)
    else:
        _link_or_copy(source, dest)


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


def _pace() -> Pace:
    """The default pace of archive downloads (`archives` is imported by the jobs that download one)."""
    from runner.evaluation.archives import Pace

    return Pace()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")
