"""A phase's leaderboard from its results, with grand-challenge.org's ranking semantics.

Pure functions over plain data (see ../shared/reference/README.md, "grand-challenge.org
leaderboard ranking"): per ranked metric a standard competition rank (1, 2, 2, 4); "absolute" ranks
on the score alone, "mean"/"median" combine the per-metric ranks; a result missing any ranked
metric is unranked, never first; "best" ranks everything, keeps each participant's best, ranks again.
challengeR's methods rank the score's per-case values, and FLARE's "rank then average" the phase's
`ranking_metrics` per case (section "FLARE" of the same README).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from runner.tree.exclusions import ranking_exclusions
from runner.tree.jsonpaths import compiled, lookup, lookup_all
from runner.tree.model import CASE_METHODS, RANK_THEN_AVERAGE, CombinedLeaderboard
from runner.tree.paths import TreePaths
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result, scored_document

if TYPE_CHECKING:
    import pandas as pd

    from runner.ranking.methods import Aggregate, Method, Missing, RankSpec


@dataclass(frozen=True)
class Row:
    participant: str
    submission: str
    created_at: str
    values: tuple[float | None, ...]  # one per phase column, in phase.columns order
    errors: tuple[float | None, ...]
    rank: int | None = None
    rank_score: float | None = None
    case_values: tuple[tuple[str, float], ...] = ()  # the score per case, for challengeR's methods
    # each of the phase's ranking_metrics per case (case name, value), for FLARE's rank-then-average
    metric_values: tuple[tuple[tuple[str, float], ...], ...] = ()

    def ranked(self, rank: int | None, score: float | None) -> Row:
        """This row with its rank and rank score; built directly: `dataclasses.replace` costs
        several times more, and a build with history ranks about a million rows."""
        if rank is None and score is None and self.rank is None and self.rank_score is None:
            return self  # frozen: an unranked row can stand for itself
        return Row(self.participant, self.submission, self.created_at, self.values, self.errors, rank, score,
                   self.case_values, self.metric_values)


class Excluded(NamedTuple):
    """A result an organizer took out of the rankings (exclusions/<phase>.yml), listed apart."""

    result: Result
    reason: str


@dataclass(frozen=True)
class Leaderboard:
    phase: Phase
    rows: list[Row]  # ranked first (by rank), then unranked
    failed: list[Result] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)
    exclusions: Mapping[str, str] = field(default_factory=dict)  # what it was ranked with; may name others too


class Rows:
    """Each result's row in one phase, made once: a row is a function of the result and the phase
    alone, and the history's snapshots rank mostly the same results (the same objects) again."""

    def __init__(self, phase: Phase) -> None:
        self.phase = phase
        self._made: dict[int, tuple[Result, Row]] = {}  # by id; holding the result keeps its id from being reused

    def __call__(self, result: Result) -> Row:
        made = self._made.get(id(result))
        if made is None:
            made = self._made[id(result)] = (result, _row(self.phase, result))
        return made[1]


def competition_ranks(values: Sequence[float], *, descending: bool) -> list[int]:
    """Standard competition ranking: equal values share the lowest rank, the next rank skips."""
    keyed = [-v if descending else v for v in values]
    ordered = sorted(keyed)
    return [1 + bisect.bisect_left(ordered, mine) for mine in keyed]  # 1 + how many are strictly better


def rank_rows(rows: list[Row], phase: Phase) -> list[Row]:
    """Rank rows with the phase's method; rows missing any ranked value stay unranked."""
    if phase.scoring_method_choice in CASE_METHODS:
        return _rank_cases(rows, phase)
    if phase.scoring_method_choice == RANK_THEN_AVERAGE:
        return _rank_metrics(rows, phase)
    columns, method = phase.columns, phase.scoring_method_choice
    ranked_idx = [i for i, c in enumerate(columns) if i == 0 or not c.exclude_from_ranking]
    complete = [r for r in rows if all(r.values[i] is not None for i in ranked_idx)]
    if not complete:
        return _unranked(rows, complete)
    per_metric = [competition_ranks([_present(r.values[i]) for r in complete], descending=columns[i].order == "desc")
                  for i in ranked_idx]
    if method == "absolute":
        scores = [float(rank) for rank in per_metric[0]]
    else:
        combine = statistics.mean if method == "mean" else statistics.median
        scores = [float(combine(ranks)) for ranks in zip(*per_metric)]
    return _sorted(complete, competition_ranks(scores, descending=False), scores) + _unranked(rows, complete)


def _rank_cases(rows: list[Row], phase: Phase) -> list[Row]:
    """challengeR's aggregate-then-rank, rank-then-aggregate or test-then-rank over the score's
    per-case values; the row's rank_score is the aggregate, the mean rank or the share of wins."""
    import pandas as pd  # here, as the methods: a phase ranked by its results' scores needs neither

    from runner.ranking.methods import rank  # scipy is needed only by phases that rank this way

    complete = [r for r in rows if r.case_values]
    if not complete:
        return _unranked(rows, complete)
    frame = pd.DataFrame([("phase", case, str(i), value) for i, r in enumerate(complete)
                          for case, value in r.case_values], columns=["task", "case", "algorithm", "value"])
    table = rank(frame, rank_spec(phase)).set_index("algorithm")
    kept = [(r, str(i)) for i, r in enumerate(complete) if str(i) in table.index]
    rows_kept = [r for r, _ in kept]
    ranks, values = table["rank"].to_dict(), table["value"].to_dict()
    return (_sorted(rows_kept, [int(ranks[key]) for _, key in kept], [float(values[key]) for _, key in kept])
            + _unranked(rows, rows_kept))


def _rank_metrics(rows: list[Row], phase: Phase) -> list[Row]:
    """FLARE's rank then average over the phase's ranking_metrics: every case any result has, each
    result ranked on each metric in each case (a missing value, or a case the result lacks, ranks
    last), then the weighted mean of a result's ranks divided by the number of results; the row's
    rank_score is that number, smaller is better. A result with no value at all is unranked."""
    from runner.ranking.methods import Metric, flare_rank

    complete = [r for r in rows if any(not math.isnan(v) for metric in r.metric_values for _, v in metric)]
    if not complete:
        return _unranked(rows, [])
    metrics = [Metric(str(j), smaller_better=m.order == "asc", weight=m.weight)
               for j, m in enumerate(phase.ranking_metrics)]
    table = flare_rank(_metrics_frame(complete), metrics, ties=phase.ranking_options.ties)
    by_row = dict(zip(table["algorithm"], table["value"]))
    scores = [float(by_row[str(i)]) for i in range(len(complete))]
    return _sorted(complete, competition_ranks(scores, descending=False), scores) + _unranked(rows, complete)


def _metrics_frame(rows: list[Row]) -> pd.DataFrame:
    """flare_rank's long format: one row per result (its index), metric (its index) and case, for
    every case any result has; a value a result lacks is NaN, which ranks last."""
    import pandas as pd  # here: a phase ranked by its results' scores needs none

    cases = list(dict.fromkeys(case for r in rows for metric in r.metric_values for case, _ in metric))
    records = []
    for i, row in enumerate(rows):
        for j, pairs in enumerate(row.metric_values):
            given = dict(pairs)
            records += [("phase", case, str(i), str(j), given.get(case, math.nan)) for case in cases]
    return pd.DataFrame(records, columns=["task", "case", "algorithm", "metric", "value"])


def case_metric(document: dict[str, Any], path: str) -> tuple[tuple[str, float], ...]:
    """Each case's number at `path`, a JSONPath whose one `*` stands for the case (case.*.dsc,
    runner.cases.*.wall_time_s), as (case name, value); a value that is not a finite number is NaN.
    A case is named by its key up to the first dot: the runner keys its per-case measurements by
    input file (case-001.nii.gz), the evaluation its metrics by case (case-001)."""
    head, _, tail = path.partition("*")
    head, tail = head.rstrip(".[").removeprefix("$").lstrip("."), tail.lstrip("].")
    found = compiled(head).find(document) if head else None
    container = document if not head else (found[0].value if found else None)
    if not isinstance(container, dict):
        return ()
    pairs = []
    for key, item in container.items():
        value = lookup(item, tail) if tail else lookup({"value": item}, "value")
        pairs.append((str(key).partition(".")[0], math.nan if value is None else value))
    return tuple(pairs)


def rank_spec(phase: Phase, *, method: Method | None = None, aggregate: Aggregate | None = None) -> RankSpec:
    """The challengeR options of a phase (its `ranking_options`): the one mapping from a phase to a
    RankSpec. `method` and `aggregate` override the phase's, e.g. to bootstrap a mean-of-Dice score."""
    from runner.ranking.methods import RankSpec

    options = phase.ranking_options
    chosen = method or cast("Method", phase.scoring_method_choice)  # a case method: the callers ask for one
    return RankSpec(method=chosen, aggregate=aggregate or options.aggregate,
                    smaller_better=phase.score.order == "asc", ties=options.ties,
                    missing=cast("Missing", options.missing),
                    alpha=options.alpha, p_adjust=options.p_adjust)


def _present(value: float | None) -> float:
    assert value is not None  # callers rank complete rows only
    return value


def _sorted(rows: list[Row], ranks: list[int], scores: list[float]) -> list[Row]:
    ranked = [r.ranked(k, s) for r, k, s in zip(rows, ranks, scores)]
    return sorted(ranked, key=lambda r: (r.rank, r.created_at))


def _unranked(rows: list[Row], ranked: list[Row]) -> list[Row]:
    kept = {id(r) for r in ranked}
    return [r.ranked(None, None) for r in rows if id(r) not in kept]


def leaderboard(phase: Phase, results: Sequence[Result], *, excluded: Mapping[str, str] | None = None,
                made: Rows | None = None) -> Leaderboard:
    """The phase's leaderboard; results named in `excluded` (participant/id -> reason) rank nowhere and
    are listed apart, as `Excluded`. `made`: the phase's rows made so far, shared across calls."""
    excluded = excluded or {}
    out = [Excluded(r, excluded[f"{r.participant}/{r.submission}"]) for r in results
           if f"{r.participant}/{r.submission}" in excluded]
    results = [r for r in results if f"{r.participant}/{r.submission}" not in excluded]
    succeeded = [r for r in results if r.status == "succeeded"]
    if phase.best_of_last:
        succeeded = _last_per_participant(succeeded, phase.best_of_last)
    row_of = made if made is not None and made.phase is phase else Rows(phase)
    rows = [row_of(r) for r in succeeded]
    display = phase.result_display_choice
    if display == "most_recent":
        rows = _keep_per_participant(rows, key=lambda r: r.created_at, newest=True)
    rows = rank_rows(rows, phase)
    if display == "best":
        best = _keep_per_participant([r for r in rows if r.rank is not None], key=lambda r: r.rank, newest=False)
        unranked = [r for r in rows if r.rank is None and r.participant not in {b.participant for b in best}]
        rows = rank_rows(best, phase) + _keep_per_participant(unranked, key=lambda r: r.created_at, newest=True)
    failed = sorted((r for r in results if r.status == "failed"), key=lambda r: r.created_at, reverse=True)
    return Leaderboard(phase, rows, failed, out, excluded)


def phase_leaderboard(paths: TreePaths, phase: Phase, results: Sequence[Result], *,
                      made: Rows | None = None) -> Leaderboard:
    """The phase's leaderboard of `results` with its exclusions applied: the organizers' and, unless the phase
    ranks across data changes, those scored on other data or evaluation (`ranking_exclusions`)."""
    return leaderboard(phase, results, excluded=ranking_exclusions(paths, phase, results), made=made)


def _row(phase: Phase, result: Result) -> Row:
    document = scored_document(result)
    return Row(
        participant=result.participant,
        submission=result.submission,
        created_at=result.created_at,
        values=tuple(lookup(document, c.path) for c in phase.columns),
        errors=tuple(lookup(document, c.error_path) for c in phase.columns),
        case_values=tuple(lookup_all(document, phase.score_case_jsonpath)) if phase.score_case_jsonpath else (),
        metric_values=tuple(case_metric(document, m.path) for m in phase.ranking_metrics),
    )


def _last_per_participant(results: list[Result], count: int) -> list[Result]:
    """Each participant's `count` most recent results (best of N counts only the last N)."""
    newest = sorted(results, key=lambda r: r.created_at, reverse=True)
    seen: dict[str, int] = {}
    kept = []
    for result in newest:
        seen[result.participant] = seen.get(result.participant, 0) + 1
        if seen[result.participant] <= count:
            kept.append(result)
    return kept


@dataclass(frozen=True)
class CombinedRow:
    participant: str
    phase_ranks: tuple[int, ...]  # in the order of the combined leaderboard's phases
    value: float
    rank: int


def combined(spec: CombinedLeaderboard, boards: dict[str, Leaderboard]) -> list[CombinedRow]:
    """grand-challenge's combined leaderboard: each participant's best rank per phase, only those
    ranked in every phase, combined by (weighted) mean, median or (weighted) sum, competition-ranked."""
    best: list[dict[str, int]] = []
    for slug, _ in spec.phases:
        ranks: dict[str, int] = {}
        for row in boards[slug].rows:
            if row.rank is not None and row.rank < ranks.get(row.participant, row.rank + 1):
                ranks[row.participant] = row.rank
        best.append(ranks)
    everywhere = sorted(set.intersection(*(set(r) for r in best)))
    weights = [w for _, w in spec.phases]
    values = [_combine([ranks[p] for ranks in best], weights, spec.combine) for p in everywhere]
    rows = [CombinedRow(p, tuple(ranks[p] for ranks in best), v, k)
            for p, v, k in zip(everywhere, values, competition_ranks(values, descending=False))]
    return sorted(rows, key=lambda r: (r.rank, r.participant))


def _combine(ranks: list[int], weights: list[float], how: str) -> float:
    if how == "median":
        return float(statistics.median(ranks))
    from runner.ranking.exact import weighted  # here: its module imports numpy, which the rest does not need

    return weighted(ranks, weights, mean=how == "mean")  # exact: equal on paper, equal here


def _keep_per_participant(rows: list[Row], *, key: Callable[[Row], Any], newest: bool) -> list[Row]:
    kept: dict[str, Row] = {}
    for row in rows:
        held = kept.get(row.participant)
        if held is None or (key(row) > key(held) if newest else key(row) < key(held)):
            kept[row.participant] = row
    return [r for r in rows if kept.get(r.participant) is r]
