"""A phase's ranking uncertainty: its score's per-case values, bootstrapped as challengeR does.

What the leaderboard page's blob plot and significance map show. The values are read, and keyed for a
cache, without numpy or pandas: a build whose bootstrap is kept never imports them (in the worker that
computes one new result's phase, importing them was most of its time). Only bootstrapping imports them,
and scipy (through `uncertainty`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from runner.ranking.leaderboard import Leaderboard, rank_spec
from runner.tree.jsonpaths import lookup_all
from runner.tree.model import CASE_METHODS
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result, scored_document

if TYPE_CHECKING:
    import pandas as pd

    from runner.ranking.methods import Aggregate, Method, RankSpec

# A score that aggregates a per-case metric, whose values are then at case.*.<metric> by convention.
PER_CASE_SCORE = re.compile(r"\$?\.?aggregates\.(?P<metric>[A-Za-z0-9_]+)\.(?P<stat>mean|median)")
MIN_TEAMS, MIN_CASES = 2, 3


@dataclass(frozen=True)
class CaseValues:
    """A phase's per-case values (team, case, value; finite values only), ranked as the leaderboard ranks
    them, or by `method` and `aggregate` where given (`rank_spec`)."""

    phase: Phase
    rows: tuple[tuple[str, str, float], ...]
    method: Method | None = None
    aggregate: Aggregate | None = None

    @property
    def spec(self) -> RankSpec:
        return rank_spec(self.phase, method=self.method, aggregate=self.aggregate)

    def frame(self) -> pd.DataFrame:
        """The long format that `uncertainty.bootstrap` takes: algorithm, case, value, task."""
        import pandas as pd

        return pd.DataFrame(list(self.rows), columns=["algorithm", "case", "value"]).assign(task=self.phase.slug)

    def key(self) -> str:
        """Text that changes whenever the values or how they are ranked do (a cache key's part, beside the
        code's): the phase and the options `spec` derives from them, and the values, each by its repr."""
        return repr((self.phase, self.method, self.aggregate, self.rows))


def case_values(phase: Phase, board: Leaderboard, results: list[Result], *,
                teams: int | None = None) -> CaseValues | None:
    """The score's per-case values of each ranked team (its best row), or of the first `teams` teams, and
    how to rank them as the leaderboard does. The values are at the phase's score_case_jsonpath, else at
    `case.*.<metric>` for a score `aggregates.<metric>.mean` (or `.median`). None without such values, or
    with fewer than MIN_TEAMS teams or MIN_CASES cases."""

    match = PER_CASE_SCORE.fullmatch(phase.score.path)
    path = phase.score_case_jsonpath or (match and f"case.*.{match['metric']}")
    if not path:
        return None
    by_id = {(r.participant, r.submission): r for r in results}
    best: dict[str, Result] = {}
    for row in board.rows:
        if row.rank is not None and (teams is None or len(best) < teams or row.participant in best):
            best.setdefault(row.participant, by_id[row.participant, row.submission])
    rows = tuple((team, case, value) for team, result in best.items()
                 for case, value in lookup_all(scored_document(result), path) if math.isfinite(value))
    if len({team for team, _, _ in rows}) < MIN_TEAMS or len({case for _, case, _ in rows}) < MIN_CASES:
        return None
    if phase.scoring_method_choice in CASE_METHODS:
        return CaseValues(phase, rows)
    stat = cast("Aggregate", match["stat"]) if match else None  # PER_CASE_SCORE matches mean or median only
    return CaseValues(phase, rows, "aggregate-then-rank", stat)


def ranking_uncertainty(phase: Phase, board: Leaderboard, results: list[Result]) -> dict[str, Any] | None:
    """The bootstrap of the score's ranking over cases, for the blob plot and the significance
    map: teams by median rank, how often each got each rank, and which beats which; None where
    `case_values` finds too little."""
    found = case_values(phase, board, results)
    return None if found is None else bootstrap_summary(found)


def bootstrap_summary(values: CaseValues) -> dict[str, Any]:
    """The bootstrap of `values`' ranking, as the leaderboard page's plots read it."""
    import numpy as np

    from runner.ranking.uncertainty import bootstrap

    summary = bootstrap(values.frame(), values.spec)
    teams = sorted(summary.algorithms, key=lambda a: (summary.median_rank[a], summary.ci_high[a], a))
    frequencies = {}
    for team, ranks in zip(summary.algorithms, summary.ranks.T):
        found, counts = np.unique(ranks, return_counts=True)  # as Python numbers: rounding numpy's is 10x slower
        frequencies[team] = {f"{v:g}": round(c / len(ranks), 4) for v, c in zip(found.tolist(), counts.tolist())}
    return {**summary.to_dict(), "algorithms": teams, "score": values.phase.score.title,
            "cases": len({case for _, case, _ in values.rows}),
            "rank_frequencies": frequencies, "significance": summary.significance.loc[teams, teams].to_numpy().tolist()}
