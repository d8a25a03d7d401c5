"""Exact ties: aggregates equal in exact arithmetic rank equal on every ranking path, with
challengeR's tie rule (issue 27).

Expected ranks are computed here on their own, with fractions.Fraction on the decimals the values
print as, and R's rank() with challengeR's rankNA2 for missing values (../shared/reference/README.md,
"Ranking (challengeR)": ties "min" by default; a missing value ranks after every present one).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.ranking.methods import Metric, RankSpec, flare_rank, method_scores, rank, score_ranks, task_matrix

NA, INF = math.nan, math.inf
PROPERTY = settings(max_examples=200, deadline=None, derandomize=True, database=None)

# Values full of exact ties: accuracies k/200, Dice to three places, metrics saturating at 1.0.
ACCURACY = st.integers(185, 200).map(lambda k: k / 200)
DICE = st.integers(0, 12).map(lambda k: (680 + k) / 1000)
SATURATING = st.sampled_from([1.0, 1.0, 0.999, 0.99, 0.9, 0.1])
TIED = (ACCURACY, DICE, SATURATING)  # one kind of value per data set, as one metric has
ANY = st.one_of(*TIED, st.floats(-1e6, 1e6), st.sampled_from([NA, INF, -INF]))
WEIGHTS = st.sampled_from([0.1, 0.2, 0.3, 0.5, 1.0, 1.5, 2.0])

SPECS = st.builds(RankSpec, method=st.sampled_from(["aggregate-then-rank", "rank-then-aggregate", "test-then-rank"]),
                  aggregate=st.sampled_from(["mean", "median"]), smaller_better=st.booleans(),
                  ties=st.sampled_from(["min", "max", "average"]), missing=st.sampled_from(["drop", 0.0]))


def frame(rows: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([("T", f"C{c}", a, v) for a, values in rows.items() for c, v in enumerate(values)],
                        columns=["task", "case", "algorithm", "value"])


def by_algorithm(ranking: pd.DataFrame, column: str) -> dict:
    return dict(zip(ranking["algorithm"], ranking[column]))


# --- the reference: exact arithmetic and R's rank() ---------------------------------------------

def r_rank(scores: list[Fraction | None], *, ties: str, descending: bool) -> list[Fraction]:
    """R's rank() of the scores, best first; None after every score, as challengeR's rankNA2."""
    present = [s for s in scores if s is not None]

    def one(score: Fraction) -> Fraction:
        better = sum(o > score if descending else o < score for o in present)
        equal = sum(o == score for o in present)
        return {"min": Fraction(better + 1), "max": Fraction(better + equal),
                "average": better + Fraction(equal + 1, 2)}[ties]

    top = max((one(s) for s in present), default=Fraction(0))
    k = len(scores) - len(present)
    behind = {"min": Fraction(1), "max": Fraction(k), "average": Fraction(k + 1, 2)}[ties]
    return [top + behind if s is None else one(s) for s in scores]


def aggregate(values: list[Fraction], how: str) -> Fraction:
    ordered, n = sorted(values), len(values)
    return sum(ordered, Fraction(0)) / n if how == "mean" else (ordered[(n - 1) // 2] + ordered[n // 2]) / 2


def exact_scores(rows: dict[str, list[float]], spec: RankSpec) -> dict[str, Fraction]:
    """challengeR's aggregate (aggregateThenRank) or mean or median rank (rankThenAggregate) of
    each team, in exact arithmetic; a team with no value at all is left out of the first."""
    def value(v: float) -> Fraction | None:
        if math.isnan(v):
            return None if spec.missing == "drop" else Fraction(repr(spec.missing))
        return Fraction(repr(float(v)))

    exact = {a: [value(v) for v in values] for a, values in rows.items()}
    if spec.method == "aggregate-then-rank":
        return {a: aggregate([v for v in values if v is not None], spec.aggregate)
                for a, values in exact.items() if any(v is not None for v in values)}
    cases = [r_rank([values[c] for values in exact.values()], ties=spec.ties, descending=not spec.smaller_better)
             for c in range(len(next(iter(rows.values()))))]
    return {a: aggregate([case[i] for case in cases], spec.aggregate) for i, a in enumerate(exact)}


def expected_ranks(rows: dict[str, list[float]], spec: RankSpec) -> dict[str, Fraction]:
    scores = exact_scores(rows, spec)
    descending = spec.method == "aggregate-then-rank" and not spec.smaller_better
    return dict(zip(scores, r_rank(list(scores.values()), ties=spec.ties, descending=descending)))


@st.composite
def tied_data(draw: st.DrawFn, *, teams: int = 0, cases: int = 0) -> dict[str, list[float]]:
    """Teams' values of one kind (one metric's), some missing or not."""
    teams, cases = teams or draw(st.integers(2, 7)), cases or draw(st.integers(1, 12))
    values = draw(st.sampled_from(TIED))
    value = st.one_of(values, st.just(NA)) if draw(st.booleans()) else values
    return {f"A{t}": [draw(value) for _ in range(cases)] for t in range(teams)}


# --- data full of exact ties rank as challengeR ranks them ------------------------------------

def test_two_teams_with_the_same_decimal_mean_and_median_tie():
    # 0.1 + 0.2 and 0.3 + 0.0 are both 0.3 on paper; in binary floating point the first is
    # 0.30000000000000004, which split the tie
    data = frame({"X": [0.1, 0.2], "Y": [0.3, 0.0], "Z": [0.1, 0.1]})
    for spec in (RankSpec(), RankSpec(aggregate="median")):
        ranking = rank(data, spec)
        assert by_algorithm(ranking, "rank") == {"X": 1, "Y": 1, "Z": 3}
        assert by_algorithm(ranking, "value") == {"X": 0.15, "Y": 0.15, "Z": 0.1}


@PROPERTY
@given(tied_data(), SPECS.filter(lambda s: s.method != "test-then-rank"))
def test_exact_ties_rank_as_challenger(rows, spec):
    # challengeR's aggregateThenRank and rankThenAggregate, ties "min" (its default), "max" and
    # "average", on data full of exact ties
    ranking = rank(frame(rows), spec)
    assert by_algorithm(ranking, "rank") == expected_ranks(rows, spec)
    # each value is the exact one rounded once: a mean of 17457/25000 reads 0.69828 (the issue's
    # example), not 0.6982799999999999
    assert by_algorithm(ranking, "value") == {a: float(score) for a, score in exact_scores(rows, spec).items()}


@PROPERTY
@given(SPECS.filter(lambda s: s.method != "test-then-rank"), st.data())
def test_every_bootstrap_sample_ranks_its_exact_ties(spec, data):
    # a bootstrap sample weights each case by how often it is drawn: its ranks are those of the
    # drawn cases in exact arithmetic
    rows = data.draw(tied_data(teams=data.draw(st.integers(3, 7)), cases=data.draw(st.integers(4, 12))))
    algorithms, values = task_matrix(frame(rows), spec)
    weights = np.array(data.draw(st.lists(st.lists(st.integers(0, 3), min_size=values.shape[1],
                                                   max_size=values.shape[1]), min_size=8, max_size=8)))
    for ranks, w in zip(score_ranks(method_scores(values, spec, weights=weights), spec), weights):
        drawn = {a: [v for v, times in zip(rows[a], w) for _ in range(times)] for a in algorithms}
        emptied = spec.method == "aggregate-then-rank" and any(all(map(math.isnan, v)) for v in drawn.values())
        if not w.any() or emptied:
            continue  # a team with nothing drawn has no aggregate (NaN, ranked last): R's rank() has none
        assert dict(zip(algorithms, ranks)) == expected_ranks(drawn, spec)


# --- twins: one team's case values permuted into another's order -----------------------------

@st.composite
def twins(draw: st.DrawFn, metrics: int = 1) -> tuple[list[dict[str, list[float]]], list[int]]:
    """Per metric, team A, its twin B (A's values with cases swapped in pairs) and other teams with
    equal values in each swapped pair: swapping A and B and the paired cases leaves the data as it
    was, so in exact arithmetic every method gives A and B the same score. Returns those and the swap."""
    cases, others, kind = draw(st.integers(1, 12)), draw(st.integers(0, 3)), draw(st.sampled_from([*TIED, ANY]))
    order = draw(st.permutations(range(cases)))
    swap = list(range(cases))
    for i in range(0, cases - 1, 2):
        swap[order[i]], swap[order[i + 1]] = order[i + 1], order[i]
    per_metric = []
    for _ in range(metrics):
        a = [draw(kind) for _ in range(cases)]
        rows = {"A": a, "B": [a[swap[c]] for c in range(cases)]}
        for t in range(others):
            drawn = [draw(kind) for _ in range(cases)]
            rows[f"O{t}"] = [drawn[min(c, swap[c])] for c in range(cases)]
        per_metric.append(rows)
    return per_metric, swap


def assert_twins_equal(ranking: pd.DataFrame) -> None:
    ranks, values = by_algorithm(ranking, "rank"), by_algorithm(ranking, "value")
    if "A" in ranks:  # dropped together when neither has a value
        assert ranks["A"] == ranks["B"]
        assert values["A"] == values["B"] or (math.isnan(values["A"]) and math.isnan(values["B"]))


@PROPERTY
@given(st.data(), SPECS.filter(lambda s: s.method == "aggregate-then-rank"))
def test_twins_in_any_order_of_cases_aggregate_equal(data, spec):
    # a mean or median is a function of the values alone, so B may hold A's values in any order
    rows = data.draw(tied_data(teams=data.draw(st.integers(2, 6)), cases=data.draw(st.integers(3, 12))))
    a = rows["A0"]
    rows = {"A": a, "B": data.draw(st.permutations(a)), **rows}
    assert_twins_equal(rank(frame(rows), spec))


@PROPERTY
@given(twins(), SPECS)
def test_twins_rank_equal_under_every_method_and_tie_rule(data, spec):
    (rows,), _ = data
    assert_twins_equal(rank(frame(rows), spec))


@PROPERTY
@given(twins(), SPECS.filter(lambda s: s.method != "test-then-rank"), st.data())
def test_twins_score_equal_in_bootstrap_samples_that_draw_both_alike(data, spec, draws):
    (rows,), swap = data
    cases = len(swap)
    per_pair = draws.draw(st.lists(st.integers(0, 3), min_size=cases, max_size=cases))
    weights = np.array([[per_pair[min(c, swap[c])] for c in range(cases)]])
    values = np.array(list(rows.values()))
    if spec.missing != "drop":
        values = np.where(np.isnan(values), spec.missing, values)
    scores = method_scores(values, spec, weights=weights)[0]
    assert scores[0] == scores[1] or (np.isnan(scores[0]) and np.isnan(scores[1]))


@PROPERTY
@given(twins(metrics=3), st.lists(WEIGHTS, min_size=3, max_size=3), st.sampled_from(["min", "max", "average"]))
def test_twins_rank_equal_in_flare_rank_then_average(data, weights, ties):
    per_metric, _ = data
    long = pd.concat([frame(rows).assign(metric=f"m{i}") for i, rows in enumerate(per_metric)])
    metrics = [Metric(f"m{i}", smaller_better=i == 1, weight=w) for i, w in enumerate(weights)]
    assert_twins_equal(flare_rank(long, metrics, ties=ties))


@PROPERTY
@given(st.data(), st.sampled_from(["min", "max", "average"]))
def test_flare_scores_are_exact(data, ties):
    # FLARE's rank then average (reference README, "FLARE"): per metric and case, ranks with a
    # missing value the worst; each team's weighted mean rank over the number of teams, in exact
    # arithmetic on the weights' decimals
    teams, cases, weights = data.draw(st.integers(2, 6)), data.draw(st.integers(1, 8)), data.draw(
        st.lists(WEIGHTS, min_size=1, max_size=3))
    per_metric = [data.draw(tied_data(teams=teams, cases=cases)) for _ in weights]
    long = pd.concat([frame(rows).assign(metric=f"m{i}") for i, rows in enumerate(per_metric)])
    metrics = [Metric(f"m{i}", smaller_better=i == 1, weight=w) for i, w in enumerate(weights)]
    total = dict.fromkeys(per_metric[0], Fraction(0))
    for metric, rows in zip(metrics, per_metric):
        worst = Fraction(10**9 if metric.smaller_better else -10**9)
        for c in range(cases):
            scores = [worst if math.isnan(values[c]) else Fraction(repr(values[c])) for values in rows.values()]
            for a, r in zip(rows, r_rank(scores, ties=ties, descending=not metric.smaller_better)):
                total[a] += Fraction(repr(metric.weight)) * r
    share = sum(Fraction(repr(m.weight)) for m in metrics) * cases * teams
    expected = {a: t / share for a, t in total.items()}
    ranking = flare_rank(long, metrics, ties=ties)
    assert by_algorithm(ranking, "value") == {a: float(v) for a, v in expected.items()}
    assert by_algorithm(ranking, "rank") == dict(zip(expected, r_rank(list(expected.values()), ties=ties,
                                                                      descending=False)))


@PROPERTY
@given(tied_data(), SPECS, st.randoms(use_true_random=False))
def test_the_order_of_the_rows_changes_nothing(rows, spec, rnd):
    data = frame(rows)
    shuffled = data.sample(frac=1, random_state=rnd.randrange(2**32))  # and so the order of the cases
    ranked, again = rank(data, spec).set_index("algorithm"), rank(shuffled, spec).set_index("algorithm")
    pd.testing.assert_frame_equal(ranked.sort_index(), again.sort_index(), check_exact=True)


# --- FLARE's weights --------------------------------------------------------------------------

def test_flare_weights_weigh_ranks_as_their_decimals():
    # weights 0.1, 0.2, 0.3; X ranks (1, 1, 2) and Y (2, 2, 1): both 0.9 on paper, so both score
    # 0.9 / 0.6 / 2 teams = 0.75; rounding 0.1 * 1 + 0.2 * 1 first made X 0.7499999999999999
    long = pd.DataFrame([("T", "c1", a, f"m{i}", v) for i, (x, y) in enumerate([(0.9, 0.8), (0.9, 0.8), (0.8, 0.9)])
                         for a, v in (("X", x), ("Y", y))], columns=["task", "case", "algorithm", "metric", "value"])
    ranking = flare_rank(long, [Metric("m0", weight=0.1), Metric("m1", weight=0.2), Metric("m2", weight=0.3)])
    assert by_algorithm(ranking, "value") == {"X": 0.75, "Y": 0.75}
    assert by_algorithm(ranking, "rank") == {"X": 1, "Y": 1}
