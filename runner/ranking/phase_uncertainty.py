"""A phase's ranking uncertainty: its score's per-case values, bootstrapped as challengeR does.

What the leaderboard page's blob plot and significance map show. Imports scipy (through
`uncertainty`), so only the phases that have per-case values load this module's work.
"""

from __future__ import annotations

import re
from typing import Any, cast

import numpy as np
import pandas as pd

from runner.ranking.leaderboard import Leaderboard, rank_spec
from runner.ranking.methods import Aggregate, RankSpec
from runner.ranking.uncertainty import bootstrap
from runner.tree.jsonpaths import lookup_all
from runner.tree.model import CASE_METHODS
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result, scored_document

# A score that aggregates a per-case metric, whose values are then at case.*.<metric> by convention.
PER_CASE_SCORE = re.compile(r"\$?\.?aggregates\.(?P<metric>[A-Za-z0-9_]+)\.(?P<stat>mean|median)")
MIN_TEAMS, MIN_CASES = 2, 3


def case_values(phase: Phase, board: Leaderboard, results: list[Result], *,
                teams: int | None = None) -> tuple[pd.DataFrame, RankSpec] | None:
    """The score's per-case values of each ranked team (its best row), or of the first `teams` teams, in
    the long format that `uncertainty.bootstrap` takes, and how to rank them as the leaderboard does. The
    values are at the phase's score_case_jsonpath, else at `case.*.<metric>` for a score
    `aggregates.<metric>.mean` (or `.median`). None without such values, or with fewer than MIN_TEAMS
    teams or MIN_CASES cases."""

    match = PER_CASE_SCORE.fullmatch(phase.score.path)
    path = phase.score_case_jsonpath or (match and f"case.*.{match['metric']}")
    if not path:
        return None
    by_id = {(r.participant, r.submission): r for r in results}
    best: dict[str, Result] = {}
    for row in board.rows:
        if row.rank is not None and (teams is None or len(best) < teams or row.participant in best):
            best.setdefault(row.participant, by_id[row.participant, row.submission])
    rows = [(team, case, value) for team, result in best.items()
            for case, value in lookup_all(scored_document(result), path) if np.isfinite(value)]
    frame = pd.DataFrame(rows, columns=["algorithm", "case", "value"]).assign(task=phase.slug)
    if frame["algorithm"].nunique() < MIN_TEAMS or frame["case"].nunique() < MIN_CASES:
        return None
    if phase.scoring_method_choice in CASE_METHODS:
        return frame, rank_spec(phase)
    stat = cast("Aggregate", match["stat"]) if match else None  # PER_CASE_SCORE matches mean or median only
    return frame, rank_spec(phase, method="aggregate-then-rank", aggregate=stat)


def ranking_uncertainty(phase: Phase, board: Leaderboard, results: list[Result]) -> dict[str, Any] | None:
    """The bootstrap of the score's ranking over cases, for the blob plot and the significance
    map: teams by median rank, how often each got each rank, and which beats which; None where
    `case_values` finds too little."""
    found = case_values(phase, board, results)
    return None if found is None else bootstrap_summary(phase, *found)


def bootstrap_summary(phase: Phase, frame: pd.DataFrame, spec: RankSpec) -> dict[str, Any]:

    summary = bootstrap(frame, spec)
    teams = sorted(summary.algorithms, key=lambda a: (summary.median_rank[a], summary.ci_high[a], a))
    frequencies = {}
    for team, ranks in zip(summary.algorithms, summary.ranks.T):
        values, counts = np.unique(ranks, return_counts=True)  # as Python numbers: rounding numpy's is 10x slower
        frequencies[team] = {f"{v:g}": round(c / len(ranks), 4) for v, c in zip(values.tolist(), counts.tolist())}
    return {**summary.to_dict(), "algorithms": teams, "score": phase.score.title, "cases": int(frame["case"].nunique()),
            "rank_frequencies": frequencies, "significance": summary.significance.loc[teams, teams].to_numpy().tolist()}
