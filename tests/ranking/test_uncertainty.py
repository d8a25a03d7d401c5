"""Bootstrap rank intervals, Kendall's tau and the significance map (challengeR's uncertainty).

Kendall's tau between two rankings is tau-b (scipy.stats.kendalltau), and the significance map is
the one-sided paired Wilcoxon test of test-then-rank: ../shared/reference/README.md, "Ranking
(challengeR)".
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from runner.ranking.methods import RankSpec, rank
from runner.ranking.uncertainty import bootstrap

SEPARATED = pd.DataFrame([("T", f"C{c}", a, v + c / 100) for c in range(12)
                          for a, v in (("good", 0.9), ("fair", 0.5), ("poor", 0.1))],
                         columns=["task", "case", "algorithm", "value"])


def noisy(algorithms=8, cases=30, seed=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    skill = np.linspace(0, 1, algorithms)
    values = skill[:, None] + rng.normal(scale=0.8, size=(algorithms, cases))
    return pd.DataFrame([("T", f"C{c}", f"A{a}", values[a, c]) for a in range(algorithms) for c in range(cases)],
                        columns=["task", "case", "algorithm", "value"])


def test_separated_algorithms_never_change_rank():
    # every case orders good > fair > poor, so every resample does too
    summary = bootstrap(SEPARATED, samples=200, seed=5)
    assert summary.algorithms == ["good", "fair", "poor"]
    assert summary.ranks.shape == (200, 3)
    assert summary.median_rank == {"good": 1.0, "fair": 2.0, "poor": 3.0}
    assert summary.ci_low == summary.median_rank == summary.ci_high
    assert summary.kendall_tau.tolist() == [1.0] * 200


def test_significance_map_on_separated_algorithms():
    # 12 cases, all differences positive: p = 0.0016 for each better pair
    summary = bootstrap(SEPARATED, samples=10)
    assert summary.significance.loc["good"].tolist() == [False, True, True]
    assert summary.significance.loc["fair"].tolist() == [False, False, True]
    assert summary.significance.loc["poor"].tolist() == [False, False, False]
    reversed_ = bootstrap(SEPARATED, RankSpec(smaller_better=True), samples=10).significance
    assert reversed_.loc["poor"].tolist() == [True, True, False]


def test_seed_makes_it_reproducible():
    data = noisy()
    first, again = bootstrap(data, samples=300, seed=42), bootstrap(data, samples=300, seed=42)
    other = bootstrap(data, samples=300, seed=43)
    assert np.array_equal(first.ranks, again.ranks)
    assert first.median_rank == again.median_rank and first.ci_low == again.ci_low
    assert np.array_equal(first.kendall_tau, again.kendall_tau)
    assert not np.array_equal(first.ranks, other.ranks)


@pytest.mark.parametrize("spec", [RankSpec(), RankSpec(aggregate="median", smaller_better=True),
                                  RankSpec(method="rank-then-aggregate"),
                                  RankSpec(method="test-then-rank", p_adjust="holm")])
def test_each_sample_ranks_like_the_method_on_the_resampled_cases(spec):
    data, samples, seed = noisy(algorithms=5, cases=15), 20, 3
    summary = bootstrap(data, spec, samples=samples, seed=seed)
    cases = list(pd.unique(data["case"]))
    # the documented draw: rng(seed).integers(0, cases, size=(samples, cases))
    drawn = np.random.default_rng(seed).integers(0, len(cases), size=(samples, len(cases)))
    for b in (0, 7, 19):
        resample = pd.concat([data[data["case"] == cases[c]].assign(case=f"draw{i}") for i, c in enumerate(drawn[b])])
        expected = rank(resample, spec).set_index("algorithm")["rank"]
        assert summary.ranks[b].tolist() == [expected[a] for a in summary.algorithms]


def test_intervals_and_tau_summarise_the_samples():
    summary = bootstrap(noisy(), samples=400, seed=0)
    full = rank(noisy()).set_index("algorithm")["rank"]
    low, median, high = np.percentile(summary.ranks, [2.5, 50, 97.5], axis=0)
    for i, algorithm in enumerate(summary.algorithms):
        assert (summary.ci_low[algorithm], summary.median_rank[algorithm], summary.ci_high[algorithm]) == (
            low[i], median[i], high[i])
        assert summary.ci_low[algorithm] <= summary.median_rank[algorithm] <= summary.ci_high[algorithm]
    # tau-b between the full ranking and each sample's ranking
    full_ranks = [full[a] for a in summary.algorithms]
    for b in (0, 100, 399):
        assert summary.kendall_tau[b] == pytest.approx(stats.kendalltau(full_ranks, summary.ranks[b]).statistic)
    assert 0.3 < np.median(summary.kendall_tau) < 1.0  # noisy, but far from random


def test_kendall_tau_b_with_ties():
    # larger better; C1: A 4, B 3, C 2, D 1; C2: A 4, B 2, C 2, D 1. Full ranking (means) 1, 2, 3, 4;
    # a sample drawing C2 twice ranks 1, 2, 2, 4: 5 concordant pairs, one tie -> tau-b 5 / sqrt(6 * 5)
    data = pd.DataFrame([("T", c, a, v) for c, row in (("C1", (4, 3, 2, 1)), ("C2", (4, 2, 2, 1)))
                         for a, v in zip("ABCD", row)], columns=["task", "case", "algorithm", "value"])
    summary = bootstrap(data, samples=50, seed=0)
    tied = (summary.ranks == [1, 2, 2, 4]).all(axis=1)
    assert 0 < tied.sum() < 50
    assert summary.kendall_tau[tied] == pytest.approx(5 / np.sqrt(30))
    assert summary.kendall_tau[~tied].tolist() == [1.0] * int((~tied).sum())


def test_to_dict_is_json():
    summary = bootstrap(SEPARATED, samples=5)
    exported = json.loads(json.dumps(summary.to_dict()))
    assert exported["samples"] == 5
    assert exported["median_rank"] == {"good": 1.0, "fair": 2.0, "poor": 3.0}
    assert exported["ci_high"]["poor"] == 3.0
    assert exported["kendall_tau"] == [1.0] * 5
    assert exported["significantly_better_than"] == {"good": ["fair", "poor"], "fair": ["poor"], "poor": []}


def test_one_task_at_a_time():
    two = pd.concat([SEPARATED, SEPARATED.assign(task="T2")])
    with pytest.raises(ValueError, match="one task"):
        bootstrap(two)


def test_five_hundred_algorithms_stay_vectorised():
    # the vectorised path: 500 algorithms x 50 cases x 100 samples, mean and median
    rng = np.random.default_rng(0)
    values = rng.normal(size=(500, 50))
    data = pd.DataFrame({"task": "T", "case": np.tile([f"c{c}" for c in range(50)], 500),
                         "algorithm": np.repeat([f"a{a}" for a in range(500)], 50), "value": values.ravel()})
    summary = bootstrap(data, RankSpec(aggregate="median"), samples=100)
    assert summary.ranks.shape == (100, 500)
    assert summary.significance.shape == (500, 500)
    assert not np.diag(summary.significance.to_numpy()).any()


def test_vectorised_kendall_tau_b_matches_scipy():
    import numpy as np
    from scipy import stats

    from runner.ranking.uncertainty import kendall_tau_b
    rng = np.random.default_rng(3)
    reference = rng.integers(1, 6, size=12).astype(float)  # ties included
    rankings = rng.integers(1, 6, size=(50, 12)).astype(float)
    rankings[0] = 1.0  # all tied: tau undefined, NaN as in scipy
    expected = [stats.kendalltau(reference, r).statistic for r in rankings]
    np.testing.assert_allclose(kendall_tau_b(reference, rankings, chunk_elements=100), expected, rtol=1e-12,
                               equal_nan=True)
