"""challengeR's ranking methods over long-format results, and FLARE's rank-then-average.

Pure functions (see ../shared/reference/README.md, "Ranking (challengeR)" and "FLARE"). A results
frame has one row per task, case and algorithm, with columns task, case, algorithm and value;
NaN, or no row at all for a case, is a missing value. Each task is ranked on its own.

- aggregate-then-rank: mean or median per algorithm, then rank.
- rank-then-aggregate: rank the algorithms within each case, then mean or median of those ranks.
- test-then-rank: a one-sided paired Wilcoxon signed-rank test for every ordered pair; the score is
  the share of the other algorithms significantly beaten.

Ties take the minimum rank by default (R's ties.method = "min"), between aggregates computed
exactly (see exact): teams whose means, medians or mean ranks are equal on paper share a rank,
whatever the order of the cases. Missing values are dropped by default, or replaced by a number
(challengeR's na.treat). Rank-then-aggregate never drops one: as in challengeR (rankNA2) a missing
value ranks after every present value of its case, so a failure can never improve an algorithm's
rank. Test-then-rank's score, a count of wins over a count of rivals, is exact as it stands; its
tests take differences in floating point, as R's wilcox.test does.

The numeric core works on matrices (algorithms x cases) and on case weights (samples x cases: how
often each case is drawn), so one code path ranks the data and every bootstrap sample at once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pandas as pd

from runner.ranking.exact import fixed, infinite_part, printed, ratio, whole

Method = Literal["aggregate-then-rank", "rank-then-aggregate", "test-then-rank"]
Aggregate = Literal["mean", "median"]
Ties = Literal["min", "max", "average"]
PAdjust = Literal["none", "holm", "bonferroni", "hochberg", "fdr_bh"]
Missing = Literal["drop"] | float

COLUMNS = ("task", "case", "algorithm", "value")
_CHUNK = 250_000  # elements per temporary array: small enough to stay in the CPU cache
_INF_BITS = np.float64(np.inf).view(np.uint64)  # any larger bit pattern of |d| is NaN


@dataclass(frozen=True)
class RankSpec:
    """How to rank one task: the method and its options."""

    method: Method = "aggregate-then-rank"
    aggregate: Aggregate = "mean"
    smaller_better: bool = False
    ties: Ties = "min"
    missing: Missing = "drop"
    alpha: float = 0.05
    p_adjust: PAdjust = "none"

    def __post_init__(self) -> None:
        for name, allowed in (("method", Method), ("aggregate", Aggregate), ("ties", Ties),
                              ("p_adjust", PAdjust)):
            if getattr(self, name) not in get_args(allowed):
                raise ValueError(f"{name} must be one of {', '.join(get_args(allowed))}, "
                                 f"not {getattr(self, name)!r}")
        if self.missing != "drop" and (isinstance(self.missing, bool) or not isinstance(self.missing, (int, float))
                                       or np.isnan(self.missing)):
            raise ValueError(f"missing must be 'drop' or a number, not {self.missing!r}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must lie between 0 and 1, not {self.alpha!r}")


@dataclass(frozen=True)
class Metric:
    """One metric of a FLARE-style ranking: its direction and its weight in a team's mean rank."""

    name: str
    smaller_better: bool = False
    weight: float = 1.0


def rank(frame: pd.DataFrame, spec: RankSpec = RankSpec()) -> pd.DataFrame:
    """One row per task and algorithm: task, algorithm, value (aggregate, mean rank or share of
    wins) and rank, best first within each task."""
    _check_columns(frame, COLUMNS)
    parts = []
    for task, group in frame.groupby("task", sort=False, dropna=False):
        algorithms, values = task_matrix(group, spec)
        scores = method_scores(values, spec, weights=np.ones((1, values.shape[1]), dtype=np.int64))
        parts.append(_ranked(task, algorithms, scores=scores[0], ranks=score_ranks(scores, spec)[0], ties=spec.ties))
    return _concat(parts)


def flare_rank(frame: pd.DataFrame, metrics: Sequence[Metric], *, ties: Ties = "min") -> pd.DataFrame:
    """FLARE's "rank then average": in each case rank all teams on each metric, a missing (failed
    or timed-out) value taking the worst value; a team's value is its (weighted) mean rank divided
    by the number of teams; smaller is better. The frame has a `metric` column beside COLUMNS."""
    _check_columns(frame, (*COLUMNS, "metric"))
    _check_metrics(frame, metrics)
    parts = []
    for task, group in frame.groupby("task", sort=False, dropna=False):
        algorithms = list(pd.unique(group["algorithm"]))
        cases = list(pd.unique(group["case"]))
        ranks = np.hstack([_flare_case_ranks(group, metric, algorithms=algorithms, cases=cases, ties=ties)
                           for metric in metrics])  # algorithms x (metric, case)
        weights = np.repeat(_whole_weights(metrics), len(cases))[None]
        score = _mean(ranks, weights, divisor=len(algorithms))[0]
        parts.append(_ranked(task, algorithms, scores=score, ranks=rank_values(score, ties=ties), ties=ties))
    return _concat(parts)


def _flare_case_ranks(group: pd.DataFrame, metric: Metric, *, algorithms: list[str], cases: list[str],
                      ties: Ties) -> np.ndarray:
    """Each team's rank on one metric in each case (algorithms x cases), a missing value the worst."""
    values = _matrix(group[group["metric"] == metric.name], algorithms=algorithms, cases=cases)
    worst = np.inf if metric.smaller_better else -np.inf
    return rank_values(np.where(np.isnan(values), worst, values).T, ties=ties, descending=not metric.smaller_better).T


def _whole_weights(metrics: Sequence[Metric]) -> np.ndarray:
    """The metrics' weights as whole numbers in the proportions of their printed decimals (0.5 and
    1.5 become 5 and 15), so that a weighted mean of ranks stays a ratio of integers."""
    numerators, _ = whole([printed(m.weight) for m in metrics])
    return np.array(numerators, dtype=float)


def task_matrix(frame: pd.DataFrame, spec: RankSpec) -> tuple[list[str], np.ndarray]:
    """One task's values as algorithms x cases, after the missing-value policy. Algorithms with no
    value at all are left out, except by rank-then-aggregate, which ranks them last."""
    algorithms = list(pd.unique(frame["algorithm"]))
    values = _matrix(frame, algorithms=algorithms, cases=list(pd.unique(frame["case"])))
    if spec.missing != "drop":
        values = np.where(np.isnan(values), float(spec.missing), values)
    elif spec.method != "rank-then-aggregate":
        present = ~np.isnan(values).all(axis=1)
        algorithms, values = [a for a, keep in zip(algorithms, present) if keep], values[present]
    return algorithms, values


def method_scores(values: np.ndarray, spec: RankSpec, *, weights: np.ndarray) -> np.ndarray:
    """Each algorithm's score (samples x algorithms) with cases weighted by how often each is drawn
    (weights: samples x cases, integers)."""
    if spec.method == "aggregate-then-rank":
        return _aggregate(values, weights, spec.aggregate)
    if spec.method == "rank-then-aggregate":
        return _aggregate(case_ranks(values, spec), weights, spec.aggregate)
    cases = np.arange(values.shape[1])
    return np.stack([significance(values[:, np.repeat(cases, w)], spec).sum(axis=1) / max(len(values) - 1, 1)
                     for w in weights])


def score_ranks(scores: np.ndarray, spec: RankSpec) -> np.ndarray:
    """Ranks of method_scores along the last axis; a NaN score (nothing left to aggregate) is last."""
    descending = spec.method == "test-then-rank" or (spec.method == "aggregate-then-rank" and not spec.smaller_better)
    return rank_values(scores, ties=spec.ties, descending=descending)


def case_ranks(values: np.ndarray, spec: RankSpec) -> np.ndarray:
    """Rank of each algorithm within each case (algorithms x cases), missing values last."""
    return rank_values(values.T, ties=spec.ties, descending=not spec.smaller_better).T


def rank_values(x: np.ndarray, *, ties: Ties = "min", descending: bool = False) -> np.ndarray:
    """Ranks along the last axis, 1 for the smallest (largest if descending), like R's rank().
    NaN ranks after every number as in challengeR's rankNA2: one past the largest rank for "min",
    the mean of the following ranks for "average", and (our extension) the last of them for "max"."""
    key = -x if descending else x
    order = np.argsort(key, axis=-1, kind="stable")  # NaN sorts last
    ordered = np.take_along_axis(key, order, axis=-1)
    first, last = _tie_groups(ordered)
    by_position = {"min": first + 1.0, "max": last + 1.0, "average": (first + last) / 2 + 1}[ties]
    missing = np.isnan(ordered)
    count = missing.sum(axis=-1, keepdims=True)
    top = np.where(missing, 0, by_position).max(axis=-1, keepdims=True, initial=0)
    behind = {"min": np.ones_like(count), "max": count, "average": (count + 1) / 2}[ties]
    by_position = np.where(missing, top + behind, by_position)
    ranks = np.empty(x.shape)
    np.put_along_axis(ranks, order, by_position, axis=-1)
    return ranks


def significance(values: np.ndarray, spec: RankSpec) -> np.ndarray:
    """beats[i, j]: algorithm i is significantly better than j (adjusted p <= alpha)."""
    p = pairwise_wilcoxon(values, smaller_better=spec.smaller_better)
    adjusted = p_adjust(p.ravel(), spec.p_adjust).reshape(p.shape)
    return adjusted <= spec.alpha  # NaN (no non-zero difference) is never significant


def pairwise_wilcoxon(values: np.ndarray, *, smaller_better: bool = False) -> np.ndarray:
    """p[i, j]: one-sided p-value of the paired Wilcoxon signed-rank test that algorithm i is better
    than j, over the cases where both have a value; zero differences dropped, normal approximation
    with tie and continuity correction: scipy.stats.wilcoxon(..., correction=True, method="approx").
    The diagonal, and pairs with no non-zero difference, are NaN."""
    x = -values if smaller_better else values  # then "better" is always "greater"
    k, m = x.shape
    p = np.full((k, k), np.nan)
    step = max(1, _CHUNK // max(k * m, 1))

    def block(a: int) -> None:  # blocks write disjoint parts of p, so they run in threads
        b = min(a + step, k)
        # d[i, j] = x[i] - x[j] for i in a:b, j in a:k; the reverse pairs are its mirror image
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, a pair left out like a missing one
            d = x[a:b, None, :] - x[None, a:, :]
        r_plus, n, tie_sum = _signed_rank_sums(d)
        p[a:b, a:] = _greater_p(r_plus, n, tie_sum)
        p[a:, a:b] = _greater_p(n * (n + 1) / 2 - r_plus, n, tie_sum).T

    with ThreadPoolExecutor(os.cpu_count()) as pool:  # numpy releases the GIL in sorts and loops
        list(pool.map(block, range(0, k, step)))
    np.fill_diagonal(p, np.nan)
    return p


def p_adjust(p: np.ndarray, method: PAdjust) -> np.ndarray:
    """R's p.adjust over a 1-D array; NaN stays NaN and does not count as a test."""
    adjusted = np.array(p, dtype=float)
    tested = ~np.isnan(adjusted)
    q = adjusted[tested]
    n = q.size
    if method == "bonferroni":
        q = np.minimum(1, n * q)
    elif method == "holm":
        order = np.argsort(q, kind="stable")
        q[order] = np.minimum(1, np.maximum.accumulate((n - np.arange(n)) * q[order]))
    elif method in ("hochberg", "fdr_bh"):
        order = np.argsort(q, kind="stable")[::-1]
        i = np.arange(n, 0, -1)  # ascending position of each p, largest first
        factor = n + 1 - i if method == "hochberg" else n / i
        q[order] = np.minimum(1, np.minimum.accumulate(factor * q[order]))
    adjusted[tested] = q
    return adjusted


def _signed_rank_sums(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of differences: the sum of the (average) ranks of |d| over the positive ones, the
    number of non-zero differences, and sum(t^3 - t) over tie groups; zeros and NaN left out."""
    shape, m = d.shape[:-1], d.shape[-1]
    # One sort gives both: |d| as ordered bits (non-negative floats sort like their bit patterns)
    # shifted up one, with the sign in the lowest bit; zeros sort first, NaN last, and within a run
    # of equal |d| the positive differences come last.
    key = np.sort((np.abs(d).view(np.uint64) << np.uint64(1)) | (d > 0), axis=-1).reshape(-1, m)
    positive = (key & np.uint64(1)).astype(np.int32)  # 1 where the difference is positive
    zeros = np.count_nonzero(d == 0, axis=-1).ravel()
    n = m - zeros - np.count_nonzero(np.isnan(d), axis=-1).ravel()
    # ranks by position first (rank 1 is the first non-zero difference) ...
    r_plus = positive @ np.arange(1, m + 1, dtype=np.int32) - zeros * positive.sum(axis=1)
    # ... then each run of t equal |d| holding p positives: average ranks lower their sum by p(t - p)/2
    magnitude = key >> np.uint64(1)
    run, size, positives, row = _runs(magnitude, positive)
    counted = (magnitude.ravel()[run] != 0) & (magnitude.ravel()[run] <= _INF_BITS)  # zeros, NaN: no ties
    r_plus = r_plus - np.bincount(row, positives * (size - positives) / 2, minlength=len(r_plus))
    tie_sum = np.bincount(row, np.where(counted, size ** 3 - size, 0), minlength=len(r_plus))
    return r_plus.reshape(shape), n.reshape(shape), tie_sum.reshape(shape)


def _runs(ordered: np.ndarray, positive: np.ndarray) -> tuple[np.ndarray, ...]:
    """Runs of two or more equal values in the rows of `ordered`: flat start, length, how many
    are positive, and row."""
    m = ordered.shape[-1]
    flat = ordered.ravel()
    starts = np.ones(flat.size, dtype=bool)
    starts[1:] = flat[1:] != flat[:-1]
    starts[::m] = True  # a run never crosses rows
    start = np.flatnonzero(starts)
    size = np.diff(start, append=flat.size)
    tied = size > 1
    start, size = start[tied], size[tied]
    before = np.zeros(flat.size + 1, dtype=np.int32)  # before[i]: positives before flat position i
    np.cumsum(positive.ravel(), out=before[1:])  # in int32: several times faster than int64
    return start, size, before[start + size] - before[start], start // m


def _greater_p(r_plus: np.ndarray, n: np.ndarray, tie_sum: np.ndarray) -> np.ndarray:
    from scipy import special  # here: its import takes 0.3 s, which only significance tests need

    # in scipy's order of operations (scipy/stats/_wilcoxon.py), so results agree to the last bit
    mn = n * (n + 1.0) * 0.25
    se = np.sqrt((n * (n + 1.0) * (2.0 * n + 1.0) - tie_sum / 2) / 24)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (r_plus - mn) / se - 0.5 / se
    return special.ndtr(-z)


def _tie_groups(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted rows: the first and last position of each element's run of equal values."""
    m = ordered.shape[-1]
    position = np.arange(m)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    ends = np.ones(ordered.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, position, m - 1), -1), axis=-1), -1)
    return first, last


def _aggregate(values: np.ndarray, weights: np.ndarray, how: Aggregate) -> np.ndarray:
    """Weighted mean or median of each row of values (NaN left out), for each row of weights; in
    exact arithmetic (see exact), so that equal aggregates are equal floats."""
    return _mean(values, weights) if how == "mean" else _median(values, weights)


def _mean(values: np.ndarray, weights: np.ndarray, *, divisor: int = 1) -> np.ndarray:
    """Weighted mean of each row of values (NaN left out) for each row of integer weights, divided
    by `divisor`, rounded once."""
    present = ~np.isnan(values)
    numerators = fixed(values, headroom=int(weights.sum(axis=1).max(initial=0)).bit_length())
    counts = weights.astype(float)
    mean = ratio(numerators.like(np.stack([counts @ limb.T for limb in numerators.limbs])),
                 (counts @ present.T) * divisor)
    if np.isinf(values).any():  # a drawn infinity decides the mean; 0 x inf would make it NaN
        mean += infinite_part(counts @ np.isposinf(values).T > 0, counts @ np.isneginf(values).T > 0)
    return mean


def _median(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted median of each row of values (NaN left out) for each row of weights: half the sum
    of the two middle values (one value twice for an odd count), rounded once."""
    order = np.argsort(values, axis=1)  # NaN last
    ordered = np.take_along_axis(values, order, axis=1)
    present = np.take_along_axis(~np.isnan(values), order, axis=1).astype(np.int32)
    weights = weights.astype(np.int32)  # int32 sums are several times faster than int64 ones
    step = max(1, _CHUNK // max(values.size, 1))
    below, above, drawn = (np.concatenate(part) for part in zip(*(
        _middle(np.take(weights[s:s + step], order, axis=1) * present) for s in range(0, len(weights), step))))
    numerators = fixed(ordered, headroom=1)  # a median adds two values
    sums = numerators.like(np.stack([_pick(limb, below) + _pick(limb, above) for limb in numerators.limbs]))
    median = ratio(sums, np.full(below.shape, 2.0))
    if np.isinf(ordered).any():
        low, high = _pick(ordered, below), _pick(ordered, above)
        median += infinite_part(np.isposinf(low) | np.isposinf(high), np.isneginf(low) | np.isneginf(high))
    return np.where(drawn, median, np.nan)  # nothing drawn: no median


def _middle(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the two middle values are in each sorted row of values (algorithms x cases) repeated
    counts[s] times (samples x algorithms x cases), without building the repeated samples; and
    whether anything was drawn."""
    cumulative = np.cumsum(counts, axis=-1, out=counts)
    n = cumulative[..., -1:]
    return _kth(cumulative, (n + 1) // 2), _kth(cumulative, n // 2 + 1), n[..., 0] > 0


def _kth(cumulative: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Where the k-th smallest value of each weighted row is (1-based; clipped, for rows with none drawn)."""
    position: np.ndarray = np.minimum(np.count_nonzero(cumulative < k, axis=-1), cumulative.shape[-1] - 1)
    return position


def _pick(ordered: np.ndarray, position: np.ndarray) -> np.ndarray:
    """ordered[algorithm, position[sample, algorithm]] for each sample and algorithm."""
    return np.take_along_axis(ordered[None], position[..., None], axis=-1)[..., 0]


def _matrix(frame: pd.DataFrame, *, algorithms: list[str], cases: list[str]) -> np.ndarray:
    rows = pd.Index(algorithms).get_indexer(pd.Index(frame["algorithm"]))
    cols = pd.Index(cases).get_indexer(pd.Index(frame["case"]))
    flat = rows * len(cases) + cols
    _, first_seen, counts = np.unique(flat, return_index=True, return_counts=True)
    if (counts > 1).any():
        row = frame.iloc[first_seen[np.argmax(counts > 1)]]
        raise ValueError(f"algorithm {row['algorithm']!r} has more than one value for case {row['case']!r}")
    values = np.full((len(algorithms), len(cases)), np.nan)
    values[rows, cols] = frame["value"].to_numpy(dtype=float)
    return values


def _ranked(task: object, algorithms: list[str], *, scores: np.ndarray, ranks: np.ndarray,
            ties: Ties) -> pd.DataFrame:
    frame = pd.DataFrame({"task": task, "algorithm": algorithms, "value": scores,
                          "rank": ranks if ties == "average" else ranks.astype(np.int64)})
    return frame.sort_values(["rank", "algorithm"], kind="stable")


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame(columns=["task", "algorithm", "value", "rank"])
    return pd.concat(parts, ignore_index=True)


def _check_columns(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"missing column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    if not pd.api.types.is_numeric_dtype(frame["value"]) or pd.api.types.is_bool_dtype(frame["value"]):
        raise ValueError("column value must hold numbers")


def _check_metrics(frame: pd.DataFrame, metrics: Sequence[Metric]) -> None:
    named = {m.name for m in metrics}
    present = set(frame["metric"])
    if not metrics or named - present or present - named:
        raise ValueError(f"metrics in the results ({', '.join(sorted(map(str, present)))}) must be "
                         f"the metrics to rank on ({', '.join(sorted(named))})")
