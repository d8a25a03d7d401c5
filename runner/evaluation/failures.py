"""The two ways an evaluation stops: the submission failed (a failed result), or the runner cannot
evaluate now (nothing written, the submission stays pending)."""

from __future__ import annotations

from typing import Any

from runner.errors import ChallengeError
from runner.tree.result_model import RunRecord


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
