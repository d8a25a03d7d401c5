"""challengeR's ranking methods and FLARE's rank-then-average.

Expected values are from ../shared/reference/README.md: section "Ranking (challengeR)"
(wiesenfa/challengeR, tests/testthat/test-aggregateThenRank.R, test-rankThenAggregate.R,
test-testThenRank.R and R/rankNA2.R) and section "FLARE" (JunMa11/FLARE, FLARE22 ranking).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from runner.ranking.methods import (
    Metric,
    RankSpec,
    case_ranks,
    flare_rank,
    method_scores,
    p_adjust,
    pairwise_wilcoxon,
    rank,
    rank_values,
)

NA = math.nan


def results(rows, task="T1") -> pd.DataFrame:
    """Long format from (algorithm, case, value) rows."""
    return pd.DataFrame([(task, c, a, v) for a, c, v in rows], columns=["task", "case", "algorithm", "value"])


def by_algorithm(ranking: pd.DataFrame, column: str) -> dict:
    return dict(zip(ranking["algorithm"], ranking[column]))


# --- aggregate-then-rank ---------------------------------------------------------------------

def test_aggregate_then_rank_one_case_smaller_better():
    # challengeR test-aggregateThenRank.R: A1 = 0.6, A2 = 0.8, smallBetter -> ranks 1, 2
    ranking = rank(results([("A1", "C1", 0.6), ("A2", "C1", 0.8)]), RankSpec(smaller_better=True))
    assert by_algorithm(ranking, "rank") == {"A1": 1, "A2": 2}
    assert by_algorithm(ranking, "value") == {"A1": 0.6, "A2": 0.8}


def test_aggregate_then_rank_larger_better_reverses():
    # challengeR test-aggregateThenRank.R: the same data, large values better -> ranks 2, 1
    ranking = rank(results([("A2", "C1", 0.8), ("A1", "C1", 0.6)]))
    assert by_algorithm(ranking, "rank") == {"A1": 2, "A2": 1}
    assert list(ranking["algorithm"]) == ["A2", "A1"]  # best first


@pytest.mark.parametrize("aggregate", ["mean", "median"])
def test_aggregate_then_rank_two_cases(aggregate):
    # challengeR test-aggregateThenRank.R: A1 = (0.6, 0.4), A2 = (0.8, 1.0) -> 0.5, 0.9; ranks 1, 2
    data = results([("A1", "C1", 0.6), ("A1", "C2", 0.4), ("A2", "C1", 0.8), ("A2", "C2", 1.0)])
    ranking = rank(data, RankSpec(aggregate=aggregate, smaller_better=True))
    assert by_algorithm(ranking, "value") == pytest.approx({"A1": 0.5, "A2": 0.9})
    assert by_algorithm(ranking, "rank") == {"A1": 1, "A2": 2}


@pytest.mark.parametrize(("ties", "expected"), [("min", 1), ("max", 2), ("average", 1.5)])
def test_aggregate_then_rank_ties(ties, expected):
    # challengeR test-aggregateThenRank.R: A1 = A2 = 0.6 -> ranks 1, 1 (min); 2, 2 (max)
    ranking = rank(results([("A1", "C1", 0.6), ("A2", "C1", 0.6)]), RankSpec(smaller_better=True, ties=ties))
    assert by_algorithm(ranking, "rank") == {"A1": expected, "A2": expected}


def test_missing_replaced_by_number():
    # challengeR test-aggregateThenRank.R, "NAs are replaced by numeric value": larger better,
    # A1 missing, na.treat = 0 -> A1 mean 0.0 rank 2; A2 0.8 rank 1
    ranking = rank(results([("A1", "C1", NA), ("A2", "C1", 0.8)]), RankSpec(missing=0))
    assert by_algorithm(ranking, "value") == {"A1": 0.0, "A2": 0.8}
    assert by_algorithm(ranking, "rank") == {"A1": 2, "A2": 1}


def test_missing_dropped_by_default():
    # challengeR test-aggregateThenRank.R, "NAs are removed": na.treat = "na.rm" -> A1 absent; A2 0.8 rank 1
    ranking = rank(results([("A1", "C1", NA), ("A2", "C1", 0.8)]))
    assert by_algorithm(ranking, "value") == {"A2": 0.8}
    assert by_algorithm(ranking, "rank") == {"A2": 1}


def test_dropped_missing_value_leaves_the_others():
    ranking = rank(results([("A1", "C1", NA), ("A1", "C2", 0.4), ("A2", "C1", 0.8), ("A2", "C2", 0.2)]))
    assert by_algorithm(ranking, "value") == pytest.approx({"A1": 0.4, "A2": 0.5})


def test_multi_task_ranked_per_task():
    # challengeR test-aggregateThenRank.R, multi-task with na.treat = 100, smallBetter:
    # T1: 0.6, 0.8 -> ranks 1, 2; T2: A1 NA -> 100 rank 2, A2 0.4 rank 1
    data = pd.concat([results([("A1", "C1", 0.6), ("A2", "C1", 0.8)], task="T1"),
                      results([("A1", "C1", NA), ("A2", "C1", 0.4)], task="T2")])
    ranking = rank(data, RankSpec(smaller_better=True, missing=100))
    assert [tuple(r) for r in ranking.itertuples(index=False)] == [
        ("T1", "A1", 0.6, 1), ("T1", "A2", 0.8, 2), ("T2", "A2", 0.4, 1), ("T2", "A1", 100.0, 2)]


# --- rank-then-aggregate ---------------------------------------------------------------------

@pytest.mark.parametrize(("ties", "expected"), [("min", [1, 2, 1]), ("average", [1.5, 2.5, 1.5])])
def test_case_ranks_put_missing_last(ties, expected):
    # reference table: rank-then-aggregate, larger better, case values (0.9, NA, 0.9) ->
    # case ranks 1, 2, 1 (min); 1.5, 2.5, 1.5 (average) -- challengeR R/rankNA2.R
    values = np.array([[0.9], [NA], [0.9]])
    assert case_ranks(values, RankSpec(method="rank-then-aggregate", ties=ties))[:, 0].tolist() == expected


def test_rank_then_aggregate_missing_ranks_last():
    # challengeR test-rankThenAggregate.R, "assigns worst rank for NA": A1 NA, A2 0.8, larger
    # better -> rank_mean 2, 1
    ranking = rank(results([("A1", "C1", NA), ("A2", "C1", 0.8)]), RankSpec(method="rank-then-aggregate"))
    assert by_algorithm(ranking, "value") == {"A1": 2.0, "A2": 1.0}
    assert by_algorithm(ranking, "rank") == {"A1": 2, "A2": 1}


@pytest.mark.parametrize("aggregate", ["mean", "median"])
def test_rank_then_aggregate_two_cases(aggregate):
    # challengeR test-rankThenAggregate.R: A1 = (0.6, 0.4), A2 = (0.8, 1.0), smallBetter ->
    # rank_mean (rank_median) 1, 2; ranks 1, 2
    data = results([("A1", "C1", 0.6), ("A1", "C2", 0.4), ("A2", "C1", 0.8), ("A2", "C2", 1.0)])
    ranking = rank(data, RankSpec(method="rank-then-aggregate", aggregate=aggregate, smaller_better=True))
    assert by_algorithm(ranking, "value") == {"A1": 1.0, "A2": 2.0}
    assert by_algorithm(ranking, "rank") == {"A1": 1, "A2": 2}


def test_rank_then_aggregate_ties_max():
    # challengeR test-rankThenAggregate.R: A1 = A2 = 0.6, ties.method "max" -> rank_mean 2, rank 2
    data = results([("A1", "C1", 0.6), ("A2", "C1", 0.6)])
    ranking = rank(data, RankSpec(method="rank-then-aggregate", smaller_better=True, ties="max"))
    assert by_algorithm(ranking, "value") == {"A1": 2.0, "A2": 2.0}
    assert by_algorithm(ranking, "rank") == {"A1": 2, "A2": 2}


def test_rank_then_aggregate_mixed_cases():
    # per case (larger better): C1 A 0.9, B 0.5, C 0.7 -> 1, 3, 2; C2 A NA, B 0.8, C 0.8 -> 2, 1, 1
    data = results([("A", "C1", 0.9), ("B", "C1", 0.5), ("C", "C1", 0.7),
                    ("A", "C2", NA), ("B", "C2", 0.8), ("C", "C2", 0.8)])
    ranking = rank(data, RankSpec(method="rank-then-aggregate"))
    assert by_algorithm(ranking, "value") == {"A": 1.5, "B": 2.0, "C": 1.5}
    assert by_algorithm(ranking, "rank") == {"A": 1, "B": 3, "C": 1}


# --- test-then-rank --------------------------------------------------------------------------

FOUR_CASES = [(a, f"C{i}", v) for a, v in (("A1", 0.2), ("A2", 1.0)) for i in range(1, 5)]


def test_wilcoxon_p_value_four_cases():
    # reference table: A1 = 0.2, A2 = 1.0 on 4 cases, smaller better -> p = 0.0359303
    p = pairwise_wilcoxon(np.array([[0.2] * 4, [1.0] * 4]), smaller_better=True)
    assert p[0, 1] == pytest.approx(0.0359303, abs=5e-8)
    assert np.isnan(p[0, 0]) and np.isnan(p[1, 1])


def test_test_then_rank_four_cases():
    # challengeR test-testThenRank.R: prop_significance 1, 0; ranks 1, 2 (2, 1 when larger is better)
    ranking = rank(results(FOUR_CASES), RankSpec(method="test-then-rank", smaller_better=True))
    assert by_algorithm(ranking, "value") == {"A1": 1.0, "A2": 0.0}
    assert by_algorithm(ranking, "rank") == {"A1": 1, "A2": 2}
    ranking = rank(results(FOUR_CASES), RankSpec(method="test-then-rank"))
    assert by_algorithm(ranking, "rank") == {"A1": 2, "A2": 1}


def test_test_then_rank_two_cases_not_significant():
    # reference table: 2 cases, 0.6 vs 0.8 -> p = 0.172889; both rank 1 (both 2 with ties "max")
    assert pairwise_wilcoxon(np.array([[0.6, 0.6], [0.8, 0.8]]), smaller_better=True)[0, 1] == pytest.approx(
        0.172889, abs=5e-7)
    data = results([("A1", "C1", 0.6), ("A1", "C2", 0.6), ("A2", "C1", 0.8), ("A2", "C2", 0.8)])
    ranking = rank(data, RankSpec(method="test-then-rank", smaller_better=True))
    assert by_algorithm(ranking, "value") == {"A1": 0.0, "A2": 0.0}
    assert by_algorithm(ranking, "rank") == {"A1": 1, "A2": 1}
    ranking = rank(data, RankSpec(method="test-then-rank", smaller_better=True, ties="max"))
    assert by_algorithm(ranking, "rank") == {"A1": 2, "A2": 2}


@pytest.mark.parametrize(("missing", "expected"), [(100.0, {"A1": 0.0, "A2": 0.0}), (0.0, {"A1": 1.0, "A2": 0.0}),
                                                   ("drop", {"A1": 0.0, "A2": 0.0})])
def test_test_then_rank_missing(missing, expected):
    # challengeR test-testThenRank.R: A1 NA in C1; na.treat = 100 -> 0, 0 (ranks 1, 1);
    # replaced by 0 -> 1, 0; "na.rm" -> 0, 0 (3 pairs left: not significant)
    data = results([("A1", "C1", NA)] + FOUR_CASES[1:])
    ranking = rank(data, RankSpec(method="test-then-rank", smaller_better=True, missing=missing))
    assert by_algorithm(ranking, "value") == expected


@pytest.mark.parametrize(("spec", "expected"), [
    (RankSpec(method="test-then-rank", smaller_better=True), {"A1": 1, "A2": 2}),
    (RankSpec(method="test-then-rank", smaller_better=True, alpha=0.01), {"A1": 1, "A2": 1}),
    # two ordered pairs: 0.0359303 * 2 > 0.05
    (RankSpec(method="test-then-rank", smaller_better=True, p_adjust="bonferroni"), {"A1": 1, "A2": 1}),
    (RankSpec(method="test-then-rank", smaller_better=True, p_adjust="holm"), {"A1": 1, "A2": 1}),
    (RankSpec(method="test-then-rank", smaller_better=True, p_adjust="hochberg"), {"A1": 1, "A2": 1}),
    (RankSpec(method="test-then-rank", smaller_better=True, p_adjust="fdr_bh"), {"A1": 1, "A2": 1}),
])
def test_test_then_rank_alpha_and_adjustment(spec, expected):
    assert by_algorithm(rank(results(FOUR_CASES), spec), "rank") == expected


@pytest.mark.parametrize(("p_adjust", "expected"), [
    ("none", {"A": 1, "B": 2, "C": 3}), ("bonferroni", {"A": 1, "B": 1, "C": 1}),
    ("holm", {"A": 1, "B": 1, "C": 1}), ("hochberg", {"A": 1, "B": 1, "C": 1}),
    ("fdr_bh", {"A": 1, "B": 2, "C": 3})])
def test_test_then_rank_adjusted_over_all_ordered_pairs(p_adjust, expected):
    # A > B > C on all 10 cases, no ties: each better pair has p = 0.00296; the six ordered pairs
    # adjusted at alpha 0.01: bonferroni 0.018, holm 0.018, hochberg 0.0119, BH 0.0059
    rows = [(a, f"C{c}", v) for c in range(10) for a, v in (("A", c + 1.0), ("B", 0.0), ("C", -(c + 1) / 100))]
    ranking = rank(results(rows), RankSpec(method="test-then-rank", alpha=0.01, p_adjust=p_adjust))
    assert by_algorithm(ranking, "rank") == expected


def test_wilcoxon_matches_scipy_on_random_inputs():
    # scipy.stats.wilcoxon(x, y, alternative=..., correction=True, method="approx") is R's
    # wilcox.test(paired = TRUE, exact = FALSE) (reference README); zeros, ties, missing pairs
    rng = np.random.default_rng(7)
    compared = 0
    for _ in range(60):
        k, m = rng.integers(2, 6), rng.integers(1, 30)
        values = np.round(rng.normal(size=(k, m)), int(rng.integers(0, 3)))
        values[rng.random((k, m)) < 0.1] = NA
        smaller_better = bool(rng.integers(2))
        p = pairwise_wilcoxon(values, smaller_better=smaller_better)
        for i in range(k):
            for j in range(k):
                both = ~np.isnan(values[i]) & ~np.isnan(values[j])
                x, y = values[i][both], values[j][both]
                if i == j or not (x != y).any():
                    assert np.isnan(p[i, j])
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "sample size too small for normal approximation"
                    expected = stats.wilcoxon(x, y, alternative="less" if smaller_better else "greater",
                                              correction=True, method="approx").pvalue
                assert p[i, j] == pytest.approx(expected, rel=1e-12, abs=1e-15)
                compared += 1
    assert compared > 300


# --- p-value adjustment (R's p.adjust) -------------------------------------------------------

P = np.array([0.01, 0.04, 0.03, 0.005])


@pytest.mark.parametrize(("method", "expected"), [
    ("none", [0.01, 0.04, 0.03, 0.005]),
    ("bonferroni", [0.04, 0.16, 0.12, 0.02]),
    ("holm", [0.03, 0.06, 0.06, 0.02]),
    ("hochberg", [0.03, 0.04, 0.04, 0.02]),
    ("fdr_bh", [0.02, 0.04, 0.04, 0.02]),
])
def test_p_adjust(method, expected):
    assert p_adjust(P, method) == pytest.approx(expected)


def test_p_adjust_leaves_nan_out_and_caps_at_one():
    assert p_adjust(np.array([0.01, NA, 0.6]), "bonferroni") == pytest.approx([0.02, NA, 1.0], nan_ok=True)


# --- ranking helpers and the weighted core ---------------------------------------------------

def test_rank_values_rows_and_nan():
    x = np.array([[3.0, 1.0, 3.0, NA], [NA, NA, 2.0, 2.0]])
    assert rank_values(x).tolist() == [[2, 1, 2, 3], [2, 2, 1, 1]]
    assert rank_values(x, ties="max").tolist() == [[3, 1, 3, 4], [4, 4, 2, 2]]
    # rankNA2 for "average": the largest rank plus mean(1:k), so two NaN behind 1.5, 1.5 get 3, 3
    assert rank_values(x, ties="average").tolist() == [[2.5, 1, 2.5, 3.5], [3, 3, 1.5, 1.5]]
    assert rank_values(np.array([1.0, 3.0, 2.0]), descending=True).tolist() == [3, 1, 2]
    assert rank_values(np.array([NA, NA])).tolist() == [1, 1]


@pytest.mark.parametrize("spec", [RankSpec(), RankSpec(aggregate="median"),
                                  RankSpec(method="rank-then-aggregate", smaller_better=True),
                                  RankSpec(method="rank-then-aggregate", aggregate="median", ties="average")])
def test_weighted_cases_equal_the_resample(spec):
    # a bootstrap sample weights each case by how often it is drawn; it must aggregate like numpy
    # does on the sample itself (odd and even sample sizes, missing values dropped)
    rng = np.random.default_rng(3)
    values = np.round(rng.normal(size=(6, 9)), 1)
    values[rng.random(values.shape) < 0.15] = NA
    weights = rng.integers(0, 3, size=(6, 9))
    per_case = case_ranks(values, spec) if spec.method == "rank-then-aggregate" else values
    aggregate = np.nanmean if spec.aggregate == "mean" else np.nanmedian
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an algorithm with nothing drawn: NaN
        expected = [aggregate(per_case[:, np.repeat(np.arange(9), w)], axis=1) for w in weights]
    assert method_scores(values, spec, weights=weights) == pytest.approx(np.array(expected), nan_ok=True)


@pytest.mark.parametrize(("aggregate", "expected"), [
    ("mean", [[1.5, 4.5], [math.inf, 13 / 3], [math.nan, 4.5]]),
    ("median", [[1.5, 4.5], [2.0, 5.0], [math.nan, 4.5]])])
def test_an_infinite_value_counts_only_where_drawn(aggregate, expected):
    # HD95 is inf for an empty prediction: a bootstrap sample that does not draw that case has a
    # finite aggregate (0 x inf must not make it NaN); +inf and -inf together have none
    values = np.array([[math.inf, 1.0, 2.0, -math.inf], [3.0, 4.0, 5.0, 6.0]])
    weights = np.array([[0, 1, 1, 0], [1, 0, 2, 0], [1, 0, 0, 1]])
    scores = method_scores(values, RankSpec(aggregate=aggregate, smaller_better=True), weights=weights)
    np.testing.assert_array_equal(scores, expected)


def test_median_of_odd_and_even_counts():
    data = results([("A1", "C1", 0.1), ("A1", "C2", 0.5), ("A1", "C3", 0.3),
                    ("A2", "C1", 0.2), ("A2", "C2", 0.9), ("A2", "C3", NA)])
    assert by_algorithm(rank(data, RankSpec(aggregate="median")), "value") == pytest.approx({"A1": 0.3, "A2": 0.55})


def test_duplicate_value_is_an_error():
    with pytest.raises(ValueError, match="more than one value for case 'C1'"):
        rank(results([("A1", "C1", 0.6), ("A1", "C1", 0.7)]))


def test_bad_options_and_columns():
    with pytest.raises(ValueError, match="ties must be one of"):
        RankSpec(ties="first")
    with pytest.raises(ValueError, match="missing must be"):
        RankSpec(missing="zero")
    with pytest.raises(ValueError, match="alpha"):
        RankSpec(alpha=5)
    with pytest.raises(ValueError, match="missing column: value"):
        rank(pd.DataFrame({"task": ["T"], "case": ["C"], "algorithm": ["A"]}))


# --- FLARE -----------------------------------------------------------------------------------

# FLARE22: DSC larger better, time smaller better; Z fails case c2 (DSC NaN, no time row):
# it gets the worst value of every metric there.
FLARE = pd.DataFrame(
    [("T", c, a, "DSC", v) for c, a, v in [("c1", "X", 0.9), ("c1", "Y", 0.8), ("c1", "Z", 0.8),
                                           ("c2", "X", 0.9), ("c2", "Y", 0.7), ("c2", "Z", NA)]]
    + [("T", c, a, "time", v) for c, a, v in [("c1", "X", 10), ("c1", "Y", 5), ("c1", "Z", 20),
                                              ("c2", "X", 10), ("c2", "Y", 5)]],
    columns=["task", "case", "algorithm", "metric", "value"])


def test_flare_rank_then_average():
    # reference README, FLARE: rank all teams per case and metric, average, divide by the number of
    # teams. DSC ranks: c1 X 1, Y 2, Z 2; c2 X 1, Y 2, Z 3. time ranks: c1 Y 1, X 2, Z 3; c2 Y 1, X 2, Z 3.
    # X (1+1+2+2)/4/3 = 0.5, Y (2+2+1+1)/4/3 = 0.5, Z (2+3+3+3)/4/3 = 11/12
    ranking = flare_rank(FLARE, [Metric("DSC"), Metric("time", smaller_better=True)])
    assert by_algorithm(ranking, "value") == pytest.approx({"X": 0.5, "Y": 0.5, "Z": 11 / 12})
    assert by_algorithm(ranking, "rank") == {"X": 1, "Y": 1, "Z": 3}


def test_flare_weights():
    # DSC weighted 3: X (3*1 + 2)/4/3 = 5/12, Y (3*2 + 1)/4/3 = 7/12, Z (3*2.5 + 3)/4/3 = 10.5/12
    ranking = flare_rank(FLARE, [Metric("DSC", weight=3), Metric("time", smaller_better=True)])
    assert by_algorithm(ranking, "value") == pytest.approx({"X": 5 / 12, "Y": 7 / 12, "Z": 10.5 / 12})
    assert by_algorithm(ranking, "rank") == {"X": 1, "Y": 2, "Z": 3}


def test_flare_failure_takes_the_worst_value():
    # the worst value, not challengeR's "one past the largest rank": (0.9, 0.9, failed) -> 1, 1, 3
    data = pd.DataFrame([("T", "c1", a, "DSC", v) for a, v in (("X", 0.9), ("Y", 0.9), ("Z", NA))],
                        columns=FLARE.columns)
    ranking = flare_rank(data, [Metric("DSC")])
    assert by_algorithm(ranking, "value") == pytest.approx({"X": 1 / 3, "Y": 1 / 3, "Z": 1.0})


def test_flare_metrics_must_match():
    with pytest.raises(ValueError, match="must be the metrics to rank on"):
        flare_rank(FLARE, [Metric("DSC")])
