"""Evaluate a list of submissions, each exactly once, under a lock, with progress.

A submission that already has a result is skipped unless a re-run is asked for; one that another
runner process holds is skipped; a runner problem leaves it pending and is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from runner.evaluation.job import CaseCallback, RunnerConfig, RunnerError, evaluate
from runner.execution import images
from runner.execution.sandbox import DockerSandbox, SandboxError
from runner.tree.model import Phase, Result, Submission
from runner.tree.store import Store


@dataclass(frozen=True)
class JobReport:
    submission: str
    status: str  # succeeded, failed, skipped (has a result), busy (another runner), error (still pending)
    detail: str = ""
    result_path: Path | None = None


@dataclass(frozen=True)
class Retry:
    """How transient runner failures (engine hiccups, pulls) are retried."""

    attempts: int = 3
    backoff_s: float = 2.0
    sleep: Callable[[float], None] = time.sleep


def evaluation_image(phase: Phase, store: Store, sandbox: DockerSandbox, base: str | None) -> str:
    """The phase's pinned evaluation image, or one built from the challenge's evaluation/ folder."""
    if phase.evaluation_image:
        return phase.evaluation_image
    folder = store.base / phase.challenge / "evaluation"
    if not (folder / "Dockerfile").is_file():
        raise RunnerError(f"{phase.challenge}/{phase.slug}: no evaluation_image and no {folder}/Dockerfile")
    try:
        return images.build(sandbox.client, folder, name=f"challenge-eval/{phase.challenge}", base=base)
    except SandboxError as exc:
        raise RunnerError(str(exc), transient=exc.transient) from None


def run_jobs(submissions: Iterable[Submission], *, store: Store, sandbox: DockerSandbox,
             config: RunnerConfig, base: str | None = None, rerun: bool = False, retry: Retry = Retry(),
             on_done: Callable[[JobReport], None] = lambda report: None,
             on_case: CaseCallback | None = None) -> list[JobReport]:
    built: dict[tuple[str, str], str] = {}
    reports = []
    for submission in submissions:
        report = _run_one(submission, store=store, sandbox=sandbox, config=config, base=base,
                          rerun=rerun, built=built, retry=retry, on_case=on_case)
        on_done(report)
        reports.append(report)
    return reports


def _run_one(submission: Submission, *, store: Store, sandbox: DockerSandbox, config: RunnerConfig,
             base: str | None, rerun: bool, built: dict[tuple[str, str], str], retry: Retry,
             on_case: CaseCallback | None) -> JobReport:
    with store.lock(submission) as held:
        if not held:
            return JobReport(submission.key, "busy", "another runner is evaluating it")
        if store.result_path(submission).exists() and not rerun:
            return JobReport(submission.key, "skipped", "already has a result (use --rerun to replace it)",
                             store.result_path(submission))
        try:
            result = _attempts(submission, store=store, sandbox=sandbox, config=config, base=base,
                               built=built, retry=retry, on_case=on_case)
        except RunnerError as exc:
            return JobReport(submission.key, "error", f"{exc} (left pending)")
        path = store.write_result(submission, result)
        return JobReport(submission.key, result.status, result.error or "", path)


def _attempts(submission: Submission, *, store: Store, sandbox: DockerSandbox, config: RunnerConfig,
              base: str | None, built: dict[tuple[str, str], str], retry: Retry,
              on_case: CaseCallback | None) -> Result:
    """Evaluate, retrying transient runner failures with exponential backoff."""
    for attempt in range(1, retry.attempts + 1):
        try:
            # Whatever a runner that died holding this submission left behind is ours to remove.
            sandbox.remove_labelled(submission.key)
            phase = store.phase(submission.challenge, submission.phase)
            key = (phase.challenge, phase.slug)
            if key not in built:
                built[key] = evaluation_image(phase, store, sandbox, base)
            result = evaluate(submission, store=store, backend=sandbox, config=config,
                              evaluation_image=built[key], on_case=on_case)
            result.attempts = attempt
            return result
        except (RunnerError, SandboxError) as exc:
            if not getattr(exc, "transient", False) or attempt == retry.attempts:
                raise RunnerError(f"{exc}" + (f" after {attempt} attempts" if attempt > 1 else "")) from None
            retry.sleep(retry.backoff_s * 2 ** (attempt - 1))
    raise AssertionError("unreachable")
