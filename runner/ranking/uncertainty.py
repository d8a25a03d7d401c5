"""How certain a task's ranking is: bootstrap over cases, and the significance map (as challengeR).

Each bootstrap sample draws the task's cases with replacement and ranks again with the same method;
all samples are ranked at once (cases are weighted by how often each is drawn, see rank_methods).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from runner.ranking.methods import (
    RankSpec,
    method_scores,
    score_ranks,
    significance,
    task_matrix,
)

# Up to here Kendall's tau over all samples at once beats scipy's per-sample call (1,000 samples: 0.06 s
# against 0.15 s at 200 teams, 0.26 s against 0.17 s at 400), and scipy.stats (0.7 s to import) is not loaded.
SMALL_TEAMS = 300


@dataclass(frozen=True)
class BootstrapSummary:
    algorithms: list[str]
    ranks: np.ndarray  # samples x algorithms, in the order of `algorithms`
    median_rank: dict[str, float]
    ci_low: dict[str, float]  # 2.5th percentile of the bootstrap ranks
    ci_high: dict[str, float]  # 97.5th percentile
    kendall_tau: np.ndarray  # tau-b between the full ranking and each sample's ranking
    significance: pd.DataFrame  # [row, column]: row significantly better than column

    def to_dict(self) -> dict[str, Any]:
        """For JSON: the summaries, tau per sample, and for each algorithm the ones it beats."""
        beats = self.significance.loc[self.algorithms, self.algorithms].to_numpy()  # one lookup, not one per pair
        return {
            "samples": len(self.ranks),
            "algorithms": self.algorithms,
            "median_rank": self.median_rank,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "kendall_tau": [None if np.isnan(t) else float(t) for t in self.kendall_tau],
            "significantly_better_than": {a: [b for b, yes in zip(self.algorithms, row) if yes]
                                          for a, row in zip(self.algorithms, beats)},
        }


def bootstrap(frame: pd.DataFrame, spec: RankSpec = RankSpec(), *, samples: int = 1000,
              seed: int | None = 0) -> BootstrapSummary:
    """Bootstrap one task's ranking over its cases (frame: long format, one task); the same seed
    gives the same samples. Test-then-rank runs all pairwise tests again for every sample: fine
    for tens of algorithms; the other methods rank hundreds in about a second."""
    if frame["task"].nunique(dropna=False) != 1:
        raise ValueError("bootstrap ranks one task at a time")
    if samples < 1:
        raise ValueError("samples must be at least 1")
    algorithms, values = task_matrix(frame, spec)
    cases = values.shape[1]
    drawn = np.random.default_rng(seed).integers(0, cases, size=(samples, cases))
    weights = np.vstack([np.ones((1, cases), dtype=np.int64), _counts(drawn, cases)])  # the full ranking first
    ranks = score_ranks(method_scores(values, spec, weights=weights), spec)
    full, ranks = ranks[0], ranks[1:]
    low, median, high = np.percentile(ranks, [2.5, 50, 97.5], axis=0)
    return BootstrapSummary(
        algorithms=algorithms,
        ranks=ranks,
        median_rank=dict(zip(algorithms, median.tolist())),
        ci_low=dict(zip(algorithms, low.tolist())),
        ci_high=dict(zip(algorithms, high.tolist())),
        kendall_tau=_kendall(full, ranks),
        significance=pd.DataFrame(significance(values, spec), index=algorithms, columns=algorithms),
    )


def _kendall(reference: np.ndarray, rankings: np.ndarray) -> np.ndarray:
    """Pairwise signs for the few teams of a typical leaderboard (scipy's per-call overhead
    dominates there); scipy's O(n log n) per sample for hundreds of teams."""
    if len(reference) <= SMALL_TEAMS:
        return kendall_tau_b(reference, rankings)
    from scipy import stats  # here: its import takes 0.7 s, and most leaderboards never need it

    return np.array([stats.kendalltau(reference, r).statistic for r in rankings])


def kendall_tau_b(reference: np.ndarray, rankings: np.ndarray, *, chunk_elements: int = 4_000_000) -> np.ndarray:
    """Kendall's tau-b between the ranking `reference` and each row of `rankings` (ranks: whole numbers
    or halves, as `rank_values` gives them), all rows at once:
    sum(sx * sy) / sqrt(sum(sx^2) * sum(sy^2)) over pairs, sx, sy the signs of the pair's
    differences (a tie counts 0), which is tau-b as scipy.stats.kendalltau computes it."""
    first, second = np.triu_indices(len(reference), k=1)  # each pair once: no n x n differences
    sx = np.sign(reference[first] - reference[second])
    # In float32, which is several times faster here: ranks (halves at most) and the sums of signs are exact.
    sx32, rankings32 = sx.astype(np.float32), rankings.astype(np.float32)
    out = np.empty(len(rankings))
    step = max(1, chunk_elements // max(1, len(sx)))
    for start in range(0, len(rankings), step):
        block = rankings32[start:start + step]
        sy = np.sign(block[:, first] - block[:, second])
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + step] = (sy @ sx32).astype(np.float64) / np.sqrt((sx @ sx) * np.count_nonzero(sy, axis=1))
    return out


def _counts(drawn: np.ndarray, cases: int) -> np.ndarray:
    """How often each case is drawn in each sample (samples x cases)."""
    offsets = np.arange(len(drawn))[:, None] * cases
    return np.bincount((drawn + offsets).ravel(), minlength=drawn.size).reshape(drawn.shape)
