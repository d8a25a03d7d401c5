"""Leaderboard ranking with grand-challenge.org's semantics.

Expected values are from ../shared/reference/README.md, section "grand-challenge.org leaderboard
ranking" (comic/grand-challenge.org, app/grandchallenge/evaluation/utils.py and its tests).
"""

from __future__ import annotations

import math

import pytest

from runner.model import Column, Phase, Result
from runner.ranking import competition_ranks, leaderboard, lookup

FIVE = [(0, 0), (.5, .2), (1, .3), (.7, .4), (.5, .5)]


def phase(method="absolute", display="all", b_excluded=False) -> Phase:
    return Phase(challenge="c", slug="p", title="P", submission_kind="algorithm",
                 score=Column(path="a", title="A", order="desc"),
                 extra_results_columns=(Column(path="b", title="B", order="desc", exclude_from_ranking=b_excluded),),
                 scoring_method_choice=method, result_display_choice=display)


def result(participant, metrics, created="2026-01-01T00:00:00+00:00", sub=None, status="succeeded") -> Result:
    return Result(challenge="c", phase="p", participant=participant, submission=sub or participant,
                  status=status, created_at=created, started_at=created, finished_at=created, metrics=metrics)


def ranks_by_participant(board) -> dict:
    return {r.participant: r.rank for r in board.rows}


def test_competition_ranking():
    assert competition_ranks([10, 20, 20, 30], descending=False) == [1, 2, 2, 4]
    assert competition_ranks([0.9, 0.5, 0.9], descending=True) == [1, 3, 1]


def test_reference_absolute_ranks():
    # reference: metrics (a, b) for five results, both larger better: absolute ranks 5, 3, 1, 2, 3
    results = [result(f"p{i}", {"a": a, "b": b}) for i, (a, b) in enumerate(FIVE)]
    board = leaderboard(phase("absolute"), results)
    assert [ranks_by_participant(board)[f"p{i}"] for i in range(5)] == [5, 3, 1, 2, 3]


def test_reference_mean_of_ranks():
    # reference: mean-of-ranks scores 5, 3.5, 2, 2, 2 and ranks 5, 4, 1, 1, 1
    results = [result(f"p{i}", {"a": a, "b": b}) for i, (a, b) in enumerate(FIVE)]
    board = leaderboard(phase("mean"), results)
    by = {r.participant: r for r in board.rows}
    assert [by[f"p{i}"].rank_score for i in range(5)] == [5, 3.5, 2, 2, 2]
    assert [by[f"p{i}"].rank for i in range(5)] == [5, 4, 1, 1, 1]


def test_excluded_column_does_not_rank():
    results = [result(f"p{i}", {"a": a, "b": b}) for i, (a, b) in enumerate(FIVE)]
    board = leaderboard(phase("mean", b_excluded=True), results)
    assert [ranks_by_participant(board)[f"p{i}"] for i in range(5)] == [5, 3, 1, 2, 3]


@pytest.mark.parametrize("bad", [None, "n/a", math.nan])
def test_missing_or_nan_metric_is_unranked_never_first(bad):
    # reference: a result missing a ranked metric, or with a non-number there, is not ranked
    metrics = {"a": 99.0, "b": 0.1} if bad is None else {"a": bad, "b": 0.1}
    if bad is None:
        metrics.pop("a")
    results = [result("x", metrics), result("y", {"a": 0.5, "b": 0.5})]
    board = leaderboard(phase("absolute"), results)
    assert [(r.participant, r.rank) for r in board.rows] == [("y", 1), ("x", None)]


def test_best_keeps_each_participants_best_then_reranks():
    results = [result("u", {"a": 0.9, "b": 0}, sub="u1"), result("u", {"a": 0.2, "b": 0}, sub="u2"),
               result("v", {"a": 0.5, "b": 0}, sub="v1")]
    board = leaderboard(phase("absolute", "best"), results)
    assert [(r.submission, r.rank) for r in board.rows] == [("u1", 1), ("v1", 2)]


def test_most_recent_keeps_each_participants_newest():
    results = [result("u", {"a": 0.9, "b": 0}, "2026-01-01T00:00:00+00:00", "old"),
               result("u", {"a": 0.2, "b": 0}, "2026-02-01T00:00:00+00:00", "new"),
               result("v", {"a": 0.5, "b": 0}, sub="v1")]
    board = leaderboard(phase("absolute", "most_recent"), results)
    assert [(r.submission, r.rank) for r in board.rows] == [("v1", 1), ("new", 2)]


def test_failed_results_are_listed_not_ranked():
    results = [result("u", None, status="failed"), result("v", {"a": 0.5, "b": 0.1})]
    board = leaderboard(phase(), results)
    assert [r.participant for r in board.rows] == ["v"]
    assert [r.participant for r in board.failed] == ["u"]


def test_ascending_score_and_error_paths():
    p = Phase(challenge="c", slug="p", title="P", submission_kind="algorithm",
              score=Column(path="aggregates.hd95.mean", title="HD95", order="asc", error_path="aggregates.hd95.std"))
    results = [result("u", {"aggregates": {"hd95": {"mean": 4.0, "std": 1.0}}}),
               result("v", {"aggregates": {"hd95": {"mean": 2.5, "std": 0.5}}})]
    board = leaderboard(p, results)
    assert [(r.participant, r.rank, r.errors[0]) for r in board.rows] == [("v", 1, 0.5), ("u", 2, 1.0)]


def test_lookup_ignores_non_numbers():
    assert lookup({"a": {"b": 1}}, "a.b") == 1.0
    assert lookup({"a": {"b": True}}, "a.b") is None
    assert lookup({"a": {}}, "a.b") is None
    assert lookup({"case": {"c1": {"dice": 0.5}}}, "case.c1.dice") == 0.5
