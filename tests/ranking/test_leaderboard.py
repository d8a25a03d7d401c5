"""Leaderboard ranking with grand-challenge.org's semantics.

Expected values are from ../shared/reference/README.md, section "grand-challenge.org leaderboard
ranking" (comic/grand-challenge.org, app/grandchallenge/evaluation/utils.py and its tests).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from runner.ranking.leaderboard import Rows, competition_ranks, leaderboard, lookup
from runner.tree.phase_model import Column, Phase
from runner.tree.result_model import Result

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


@pytest.mark.parametrize("display", ["all", "best", "most_recent"])
def test_rows_shared_across_boards_rank_as_fresh_ones(display):
    # the history's snapshots share one Rows per phase: each board still ranks its own results alone
    results = [result(f"p{i % 3}", {"a": a, "b": b}, sub=f"s{i}", created=f"2026-01-0{i + 1}T00:00:00+00:00")
               for i, (a, b) in enumerate(FIVE)]
    shown = phase("mean", display)
    made = Rows(shown)
    for upto in (2, 5, 3):
        assert leaderboard(shown, results[:upto], made=made) == leaderboard(shown, results[:upto])
    assert made(results[0]) is made(results[0])  # made once
    other = Rows(replace(shown, score=Column(path="b", title="B", order="desc")))  # another phase's rows: not used
    assert leaderboard(shown, results, made=other) == leaderboard(shown, results)


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


def case_phase(method: str, **options) -> Phase:
    from runner.tree.phase_model import RankingOptions
    return Phase(challenge="c", slug="p", title="P", submission_kind="algorithm",
                 score=Column(path="aggregates.v", title="V", order="desc"), scoring_method_choice=method,
                 score_case_jsonpath="case.*.v", ranking_options=RankingOptions(**options))


def case_result(participant, values: dict) -> Result:
    return result(participant, {"aggregates": {"v": 0}, "case": {c: {"v": v} for c, v in values.items()}})


def test_rank_then_aggregate_over_cases_with_a_missing_value():
    # ../shared/reference/README.md (challengeR): larger better, case values (0.9, NA, 0.9) rank
    # 1, 2, 1 with ties "min"; here a second case (0.5, 0.7, 0.1) ranks 2, 1, 3, so the mean ranks
    # are 1.5, 1.5, 2 and the final ranks 1, 1, 3.
    results = [case_result("a", {"c1": 0.9, "c2": 0.5}), case_result("b", {"c1": math.nan, "c2": 0.7}),
               case_result("c", {"c1": 0.9, "c2": 0.1})]
    board = leaderboard(case_phase("rank-then-aggregate"), results)
    assert [(r.participant, r.rank, r.rank_score) for r in board.rows] == [("a", 1, 1.5), ("b", 1, 1.5), ("c", 3, 2.0)]


def test_aggregate_then_rank_median_and_a_result_without_cases():
    results = [case_result("a", {"c1": 0.2, "c2": 0.4, "c3": 0.9}), case_result("b", {"c1": 0.5, "c2": 0.5, "c3": 0.5}),
               result("z", {"aggregates": {"v": 1.0}})]
    board = leaderboard(case_phase("aggregate-then-rank", aggregate="median"), results)
    assert [(r.participant, r.rank, r.rank_score) for r in board.rows] == [
        ("b", 1, 0.5), ("a", 2, 0.4), ("z", None, None)]


def test_test_then_rank_share_of_wins():
    # ../shared/reference/README.md (challengeR): A1 = 0.2, A2 = 1.0 on 4 cases, smaller better:
    # p = 0.0359303, so A1 beats A2: shares 1, 0; ranks 1, 2.
    phase = Phase(challenge="c", slug="p", title="P", submission_kind="algorithm",
                  score=Column(path="aggregates.v", title="V", order="asc"), scoring_method_choice="test-then-rank",
                  score_case_jsonpath="case.*.v")
    results = [case_result("a1", dict.fromkeys(["c1", "c2", "c3", "c4"], 0.2)),
               case_result("a2", dict.fromkeys(["c1", "c2", "c3", "c4"], 1.0))]
    board = leaderboard(phase, results)
    assert [(r.participant, r.rank, r.rank_score) for r in board.rows] == [("a1", 1, 1.0), ("a2", 2, 0.0)]


def test_best_of_last_n_counts_only_recent_results():
    # L2L: the participant's best of their last 3 submissions counts (../shared/seeds/l2l-fewshot-challenge.txt)
    from dataclasses import replace as dc_replace
    days = [f"2026-01-0{d}T00:00:00+00:00" for d in range(1, 6)]
    scores = [0.99, 0.1, 0.2, 0.3, 0.25]
    results = [result("u", {"a": a, "b": 0}, day, f"u{i}") for i, (a, day) in enumerate(zip(scores, days))]
    results.append(result("v", {"a": 0.5, "b": 0}, days[0], "v0"))
    p = dc_replace(phase("absolute", "best"), best_of_last=3)
    board = leaderboard(p, results)
    assert [(r.submission, r.rank) for r in board.rows] == [("v0", 1), ("u3", 2)]  # u0's 0.99 is too old


def test_combined_leaderboard_reference():
    # ../shared/reference/README.md: combined values 10, 20, 20, 30 give ranks 1, 2, 2, 4; only
    # participants present in every phase appear; each participant's best rank per phase counts.
    from runner.ranking.leaderboard import Leaderboard, Row, combined
    from runner.tree.model import CombinedLeaderboard

    def board(ranks: dict[str, list[int]]) -> Leaderboard:
        rows = [Row(p, f"{p}{i}", "", (0.0,), (None,), rank=r) for p, rs in ranks.items() for i, r in enumerate(rs)]
        return Leaderboard(phase(), rows)

    boards = {"t1": board({"a": [5, 15], "b": [20], "c": [10], "d": [30], "e": [1]}),
              "t2": board({"a": [15], "b": [20], "c": [30], "d": [30]})}
    spec = CombinedLeaderboard("all", "All tasks", (("t1", 1.0), ("t2", 1.0)), "mean")
    rows = combined(spec, boards)
    assert [(r.participant, r.value, r.rank) for r in rows] == [("a", 10, 1), ("b", 20, 2), ("c", 20, 2), ("d", 30, 4)]
    weighted = combined(CombinedLeaderboard("w", "W", (("t1", 3.0), ("t2", 1.0)), "sum"), boards)
    assert [(r.participant, r.value) for r in weighted] == [("a", 30.0), ("c", 60.0), ("b", 80.0), ("d", 120.0)]


@pytest.mark.parametrize("how", ["sum", "mean"])
def test_combined_weights_add_as_their_decimals(how):
    # phase weights 0.1, 0.2, 0.3: ranks (1, 1, 2) and (2, 2, 1) both give 0.9 on paper (issue 27);
    # 0.1 * 2 + 0.2 * 2 + 0.3 * 1 was 0.9000000000000001 in floating point
    from runner.ranking.leaderboard import Leaderboard, Row, combined
    from runner.tree.model import CombinedLeaderboard

    ranks = {"t1": {"a": 1, "b": 2}, "t2": {"a": 1, "b": 2}, "t3": {"a": 2, "b": 1}}
    boards = {t: Leaderboard(phase(), [Row(p, p, "", (0.0,), (None,), rank=r) for p, r in by.items()])
              for t, by in ranks.items()}
    spec = CombinedLeaderboard("w", "W", (("t1", 0.1), ("t2", 0.2), ("t3", 0.3)), how)
    assert [(r.participant, r.rank) for r in combined(spec, boards)] == [("a", 1), ("b", 1)]


def test_exact_decimal_ties_share_a_rank_on_a_leaderboard():
    # per-case values 0.1 + 0.2 and 0.3 + 0.0 have the same mean on paper (issue 27)
    results = [case_result("a", {"c1": 0.1, "c2": 0.2}), case_result("b", {"c1": 0.3, "c2": 0.0}),
               case_result("c", {"c1": 0.1, "c2": 0.1})]
    board = leaderboard(case_phase("aggregate-then-rank"), results)
    assert [(r.participant, r.rank, r.rank_score) for r in board.rows] == [("a", 1, 0.15), ("b", 1, 0.15),
                                                                          ("c", 3, 0.1)]
