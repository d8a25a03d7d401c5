"""Comparing a result evaluated again with its record: every value, within a tolerance, counted honestly."""

from __future__ import annotations

from runner.evaluation.reproduce import Tolerance, compare
from runner.tree.result_model import Result


def result(status: str, metrics: dict) -> Result:
    when = "2026-03-01T10:00:00+00:00"
    return Result(challenge="c", phase="p", participant="alice", submission="v1", status=status, created_at=when,
                  started_at=when, finished_at=when, metrics=metrics)


def test_every_value_either_record_has_is_compared_and_counted():
    recorded = result("succeeded", {"aggregates": {"dice": 0.8, "hd": 4.0}, "case": [0.7, 0.9]})
    again = result("succeeded", {"aggregates": {"dice": 0.8 + 1e-12, "jaccard": 0.6}, "case": [0.7, 0.91]})
    found = compare(recorded, again, Tolerance(relative=1e-9, absolute=0.0))
    assert found.differences == ["aggregates.hd: recorded 4.0, now missing",
                                 "aggregates.jaccard: not recorded, now 0.6", "case.1: recorded 0.9, now 0.91"]
    assert found.compared == 1 + 5  # the status, and the five metric paths of the two: never fewer than differ
    failed = compare(recorded, result("failed", {}), Tolerance())
    assert (len(failed.differences), failed.compared) == (5, 5)  # the status and each of the four values
