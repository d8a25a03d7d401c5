"""Whether a result reproduces: its metrics measured again against those it records, and what changed.

`challenge reproduce` evaluates a result's submission again on the runner (`queue.evaluate_again`) and
compares here: every numeric metric within a tolerance, everything else exactly, and each part of the
provenance, so a difference comes with its likely cause (other hidden data, another evaluation, another
algorithm image) or with none (a non-deterministic algorithm or evaluation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from runner.tree.result_model import Provenance, Result

PROVENANCE_PARTS = (("data_manifest", "the hidden data"), ("evaluation", "the evaluation"),
                    ("algorithm", "the algorithm"), ("submission_blob", "the submission file"))


@dataclass(frozen=True)
class Tolerance:
    """Two numbers agree when |a - b| <= absolute + relative * |recorded|."""

    absolute: float = 1e-9
    relative: float = 1e-6

    def agree(self, recorded: float, again: float) -> bool:
        if math.isnan(recorded) or math.isnan(again):
            return math.isnan(recorded) and math.isnan(again)
        return abs(recorded - again) <= self.absolute + self.relative * abs(recorded)


@dataclass(frozen=True)
class Comparison:
    compared: int  # values compared: the status, and each metric path either record has
    differences: list[str]  # one line per value that differs: its path, recorded, now
    changes: list[str]  # what produced the two differently, from their provenance

    @property
    def equal(self) -> bool:
        return not self.differences


def compare(recorded: Result, again: Result, tolerance: Tolerance) -> Comparison:
    """`again` (just measured) against `recorded`, value by value, and their provenance part by part."""
    differences: list[str] = []
    if recorded.status != again.status:
        differences.append(f"status: recorded {recorded.status}, now {again.status}"
                           + (f" ({again.error})" if again.error else ""))
    old, new = flatten(recorded.metrics or {}), flatten(again.metrics or {})
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            differences.append(f"{path}: recorded {old[path]!r}, now missing")
        elif path not in old:
            differences.append(f"{path}: not recorded, now {new[path]!r}")
        elif not _same(old[path], new[path], tolerance):
            differences.append(f"{path}: recorded {old[path]!r}, now {new[path]!r}")
    return Comparison(1 + len(old.keys() | new.keys()), differences,
                      provenance_changes(recorded.provenance, again.provenance))


def provenance_changes(recorded: Provenance | None, again: Provenance | None) -> list[str]:
    if recorded is None or again is None:
        return ["the recorded result carries no provenance: what produced it cannot be compared"] if again else []
    found = []
    for part, what in PROVENANCE_PARTS:
        then = recorded.evaluation() if part == "evaluation" else getattr(recorded, part)
        now = again.evaluation() if part == "evaluation" else getattr(again, part)
        if then != now:
            found.append(f"{what} changed: {then} then, {now} now")
    return found


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested metrics as dotted paths to their leaves (lists by index)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flatten(item, f"{prefix}{key}.").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{prefix}{i}.").items()}
    return {prefix.removesuffix("."): value}


def _same(recorded: Any, again: Any, tolerance: Tolerance) -> bool:
    numbers = (int, float)
    if isinstance(recorded, numbers) and isinstance(again, numbers) and not isinstance(recorded, bool) \
            and not isinstance(again, bool):
        return tolerance.agree(float(recorded), float(again))
    return bool(recorded == again)
