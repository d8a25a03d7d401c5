"""Evaluate a list of submissions, each exactly once, under a lock, with progress.

A submission that already has a result is skipped unless a re-run is asked for; one that another
runner process holds is skipped; one past its participant's limit when it landed is failed without
running (`Store.refusal_at_landing`); a runner problem leaves it pending and is reported. Transient
runner problems are tried again under the package's one retry policy (`runner.errors.Retry`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import ChallengeError, Retry
from runner.evaluation.job import CaseCallback, RunnerConfig, RunnerError, evaluate
from runner.evaluation.sweep import sweep
from runner.execution.images import context_digest
from runner.execution.sandbox import Executor, Log, SandboxError
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result, load_result
from runner.tree.store import Store
from runner.tree.submission_model import Submission

# The evaluation kit joins every evaluation image's build context as `evalkit/`, so an organizer's
# Dockerfile can `COPY evalkit /opt/evaluation/evalkit` (a path, not an import: evalkit stands alone).
EVALKIT = Path(__file__).resolve().parents[1] / "evalkit"
EVALUATION_CONTEXT = {"evalkit": EVALKIT}  # what joins the organizers' folder in every evaluation build


@dataclass(frozen=True)
class JobReport:
    submission: str
    status: str  # succeeded, failed, skipped (has a result), busy (another runner), error (still pending)
    detail: str = ""
    result_path: Path | None = None


@dataclass
class _Queue:
    """What every submission of one `run_jobs` call shares: the executor, the settings, and the
    evaluation images built so far (one build per phase per call)."""

    store: Store
    executor: Executor
    config: RunnerConfig
    base: str | None
    retry: Retry
    on_case: CaseCallback | None
    log: Log
    built: dict[tuple[str, str], tuple[str, str | None]] = field(default_factory=dict)  # image, its context


def evaluation_image(phase: Phase, store: Store, *, executor: Executor, base: str | None) -> str:
    """The phase's pinned evaluation image, or one built from the challenge's evaluation/ folder."""
    if phase.evaluation_image:
        return phase.evaluation_image
    folder = store.paths.evaluation(phase.challenge)
    if not (folder / "Dockerfile").is_file():
        raise RunnerError(f"{phase.challenge}/{phase.slug}: no evaluation_image and no {folder}/Dockerfile")
    try:
        return executor.build(folder, name=f"challenge-eval/{phase.challenge}", base=base,
                              extra_context=EVALUATION_CONTEXT)
    except SandboxError as exc:
        raise RunnerError(str(exc), transient=exc.transient) from None


def evaluation_context(phase: Phase, store: Store) -> str | None:
    """The digest of the build context `evaluation_image` builds from; None for a pinned image."""
    if phase.evaluation_image:
        return None
    return context_digest(store.paths.evaluation(phase.challenge), EVALUATION_CONTEXT)


def run_jobs(submissions: Iterable[Submission], *, store: Store, executor: Executor, config: RunnerConfig,
             base: str | None = None, rerun: bool = False, retry: Retry = Retry(),
             on_done: Callable[[JobReport], None] = lambda report: None,
             on_case: CaseCallback | None = None, log: Log = lambda line: None,
             sweep_dead: bool = True) -> list[JobReport]:
    """Evaluate each submission in turn and write its result; `log` hears of each retry, and of what the
    runner could not remove (`evaluate`). First, what dead runners left is removed (unless `sweep_dead` is
    False: a warm runner sweeps now and then, not per job); after each submission, the output cache is
    brought within bounds."""
    queue = _Queue(store, executor, config, base, retry, on_case, log)
    if sweep_dead:
        sweep(executor, config, log=log)
    cache = config.output_cache()
    reports = []
    for submission in submissions:
        report = _run_one(submission, queue, rerun=rerun)
        on_done(report)
        reports.append(report)
        if cache is not None:
            cache.evict()
    return reports


def _run_one(submission: Submission, queue: _Queue, *, rerun: bool) -> JobReport:
    store = queue.store
    with store.lock(submission) as held:
        if not held:
            return JobReport(submission.key, "busy", "another runner is evaluating it")
        if store.result_path(submission).exists() and not rerun:
            return JobReport(submission.key, "skipped", "already has a result (use --rerun to replace it)",
                             store.result_path(submission))
        try:
            result = queue.retry.call(lambda attempt: _attempt(submission, queue, attempt), log=queue.log)
            path = store.write_result(submission, result)
            # What the record says of a failure, not the whole reason: the report reaches an Actions log,
            # which is public, and an evaluation's last line may hold what the phase withholds.
            error = load_result(path).error or ""
        except (ChallengeError, OSError) as exc:  # the runner's problem (or the host's): left pending
            return JobReport(submission.key, "error", f"{exc} (left pending)")
        except Exception as exc:  # a bug of ours must not stop the queue behind this submission
            return JobReport(submission.key, "error", f"runner error {type(exc).__name__}: {exc} (left pending)")
        return JobReport(submission.key, result.status, error, path)


def evaluate_again(submission: Submission, *, store: Store, executor: Executor, config: RunnerConfig,
                   base: str | None = None, retry: Retry = Retry(), log: Log = lambda line: None) -> Result:
    """The submission evaluated as the queue evaluates it (the phase's evaluation image built or found, transient
    runner failures retried), its result returned and never written: what `challenge reproduce` compares."""
    queue = _Queue(store, executor, config, base, retry, None, log)
    with store.lock(submission) as held:
        if not held:
            raise RunnerError(f"{submission.key}: another runner is evaluating it now; try again later")
        return retry.call(lambda attempt: _attempt(submission, queue, attempt), log=log)


def _attempt(submission: Submission, queue: _Queue, attempt: int) -> Result:
    """One try at a submission; executor failures become RunnerError (transient ones are retried)."""
    try:
        # Whatever a runner that died holding this submission left behind is ours to remove.
        queue.executor.remove_labelled(submission.key)
        phase = queue.store.phase(submission.challenge, submission.phase)
        key = (phase.challenge, phase.slug)
        if key not in queue.built:
            queue.built[key] = (evaluation_image(phase, queue.store, executor=queue.executor, base=queue.base),
                                evaluation_context(phase, queue.store))
        image, context = queue.built[key]
        result = evaluate(submission, store=queue.store, executor=queue.executor, config=queue.config,
                          evaluation_image=image, evaluation_context=context, on_case=queue.on_case,
                          refusal=queue.store.refusal_at_landing(submission), log=queue.log)
    except SandboxError as exc:
        raise RunnerError(str(exc), transient=exc.transient) from None
    result.attempts = attempt
    return result
