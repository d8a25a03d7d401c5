"""The numbers of a challenge report for one phase: who took part, what is missing, and challengeR's
case-level analyses (podium, ranking heatmap, bootstrap, significance, Kendall's tau across methods).

Computed from exactly what the phase's leaderboard uses (its published results, `leaderboard`,
`case_values`), through the ranking functions the leaderboard and its uncertainty already call,
so the report can never rank differently from the site. `runner.site.report` draws and writes
these numbers; nothing here knows HTML or SVG.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import pandas as pd

from runner.ranking.leaderboard import Leaderboard, Row
from runner.ranking.methods import (
    Aggregate,
    Method,
    RankSpec,
    case_ranks,
    rank,
    task_matrix,
)
from runner.ranking.phase_uncertainty import MIN_CASES, MIN_TEAMS, PER_CASE_SCORE, case_values
from runner.ranking.uncertainty import BootstrapSummary, bootstrap, kendall_tau_b
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result

FloatArray = npt.NDArray[np.float64]

# The rankings compared by Kendall's tau, as challengeR's report compares ranking methods.
COMPARED: tuple[tuple[str, Method, Aggregate], ...] = (
    ("mean, then rank", "aggregate-then-rank", "mean"),
    ("median, then rank", "aggregate-then-rank", "median"),
    ("rank, then mean", "rank-then-aggregate", "mean"),
    ("test, then rank", "test-then-rank", "mean"),
)
DENSITY_POINTS = 96


@dataclass(frozen=True)
class Participation:
    """How many took part and how many failed: BIAS asks for both, per task."""

    submissions: int  # published results, successful or not
    succeeded: int
    failed: int
    teams: tuple[str, ...]  # every participant with a published result
    ranked_teams: tuple[str, ...]
    only_failed: tuple[str, ...]  # teams without a single successful result
    unranked: tuple[Row, ...]  # successful results missing a ranked value (listed without a rank)


@dataclass(frozen=True)
class MethodRanks:
    """One ranking method's ranks of the teams, for the comparison across methods."""

    name: str
    spec: RankSpec
    ranks: dict[str, float]
    own: bool  # the method the phase's case-level analysis uses


@dataclass(frozen=True)
class Violin:
    """A distribution drawn as a violin and a box: a density outline plus the box plot's numbers."""

    values: FloatArray  # sorted, finite
    grid: FloatArray
    density: FloatArray  # on grid; empty when all values are equal
    quartiles: tuple[float, float, float]
    whiskers: tuple[float, float]  # the most extreme values within 1.5 IQR of the box


@dataclass(frozen=True)
class CaseAnalysis:
    """The case-level analyses of one phase, algorithms (teams) ordered best first."""

    spec: RankSpec
    algorithms: list[str]
    cases: list[str]
    values: FloatArray  # algorithms x cases after the missing-value policy; NaN: missing
    case_ranks: FloatArray  # algorithms x cases, ties sharing the best rank, missing values last
    ranks: dict[str, float]  # the full ranking with the phase's (case-level) method
    bootstrap: BootstrapSummary
    rank_shares: dict[str, dict[float, float]]  # algorithm -> bootstrap rank -> share of samples
    methods: list[MethodRanks]
    method_tau: FloatArray  # methods x methods, Kendall's tau-b
    tau: Violin | None  # tau between the full ranking and each bootstrap sample's
    missing: dict[str, int]  # algorithm -> cases without a (finite) value

    @property
    def method_name(self) -> str:
        """The name (in COMPARED's words) of the method these analyses rank with."""
        return next(m.name for m in self.methods if m.own)

    @property
    def rank_counts(self) -> npt.NDArray[np.int64]:
        """algorithms x ranks 1..n: in how many cases each algorithm got each rank."""
        n = len(self.algorithms)
        places = np.clip(np.rint(self.case_ranks).astype(np.int64), 1, n)
        return np.stack([np.bincount(row - 1, minlength=n)[:n] for row in places]).astype(np.int64)


@dataclass(frozen=True)
class PhaseAnalysis:
    phase: Phase
    board: Leaderboard
    participation: Participation
    cases: CaseAnalysis | None
    why_no_cases: str = ""  # when cases is None: what the case-level analyses need

    @property
    def case_metric(self) -> str:
        """The per-case metric's name, the last part of its path (case.*.dice: dice)."""
        path = case_path(self.phase) or ""
        return path.rstrip("]").rsplit(".", 1)[-1].strip("'\"[") or self.phase.score.title


def analyse_phase(board: Leaderboard, results: Sequence[Result], *, samples: int = 1000,
                  seed: int = 0) -> PhaseAnalysis:
    """Everything a report shows of one phase, from its published results and the leaderboard they make
    (`phase_leaderboard`: exclusions applied); the seeded bootstrap makes the same results give the same report."""
    phase = board.phase
    found = case_values(phase, board, list(results))
    cases = None if found is None else analyse_cases(found.frame(), found.spec, samples=samples, seed=seed)
    return PhaseAnalysis(phase, board, participation(board, results), cases,
                         "" if cases else why_no_case_values(phase))


def participation(board: Leaderboard, results: Sequence[Result]) -> Participation:
    """Counts of submissions and teams, and who is missing from the ranking and why."""
    statuses = Counter(r.status for r in results)
    teams = tuple(dict.fromkeys(r.participant for r in results))
    succeeded = {r.participant for r in results if r.status == "succeeded"}
    ranked = tuple(dict.fromkeys(row.participant for row in board.rows if row.rank is not None))
    return Participation(
        submissions=len(results), succeeded=statuses["succeeded"], failed=statuses["failed"], teams=teams,
        ranked_teams=ranked, only_failed=tuple(t for t in teams if t not in succeeded),
        unranked=tuple(row for row in board.rows if row.rank is None))


def case_path(phase: Phase) -> str | None:
    """Where `case_values` reads the score's per-case values: score_case_jsonpath, else
    case.*.<metric> for a score aggregates.<metric>.mean (or .median); None without either."""
    match = PER_CASE_SCORE.fullmatch(phase.score.path)
    return phase.score_case_jsonpath or (f"case.*.{match['metric']}" if match else None)


def why_no_case_values(phase: Phase) -> str:
    """Why `case_values` found nothing to analyse, in a sentence an organizer can act on."""
    path = case_path(phase)
    if path is None:
        return ("The case-level figures need the score's per-case values: set score_case_jsonpath "
                f"(for example case.*.dice) in phases/{phase.slug}.yml.")
    return (f"The case-level figures need per-case values of the score (score_case_jsonpath: {path}) "
            f"for at least {MIN_TEAMS} ranked teams and {MIN_CASES} cases; the published results have fewer.")


def analyse_cases(frame: pd.DataFrame, spec: RankSpec, *, samples: int, seed: int) -> CaseAnalysis:
    """challengeR's analyses of one task's per-case values (long format, one row per team and case)."""
    ranking = rank(frame, spec)
    order = [str(a) for a in ranking["algorithm"]]
    algorithms, values = task_matrix(frame, spec)
    position = {a: i for i, a in enumerate(algorithms)}
    values = values[[position[a] for a in order]]
    summary = bootstrap(frame, spec, samples=samples, seed=seed)
    methods = method_rankings(frame, spec)
    return CaseAnalysis(
        spec=spec, algorithms=order, cases=[str(c) for c in pd.unique(frame["case"])], values=values,
        case_ranks=case_ranks(values, replace(spec, ties="min")),
        ranks=dict(zip(order, ranking["rank"].astype(float))), bootstrap=summary,
        rank_shares=rank_shares(summary), methods=methods, method_tau=method_tau(methods, order),
        tau=violin(summary.kendall_tau), missing=missing_cases(frame, order))


def rank_shares(summary: BootstrapSummary) -> dict[str, dict[float, float]]:
    """For each algorithm, the share of bootstrap samples in which it got each rank."""
    shares = {}
    for algorithm, ranks in zip(summary.algorithms, summary.ranks.T):
        values, counts = np.unique(ranks, return_counts=True)
        shares[algorithm] = {float(v): float(c) / len(ranks) for v, c in zip(values, counts)}
    return shares


def method_rankings(frame: pd.DataFrame, spec: RankSpec) -> list[MethodRanks]:
    """The teams ranked by each compared method, with the phase's other options (direction, ties,
    missing values, alpha); the phase's own method is added where it is none of them."""
    # test-then-rank aggregates nothing: it keeps the phase's aggregate, so it can match the phase's spec
    compared = [(name, replace(spec, method=method, aggregate=spec.aggregate if method == "test-then-rank" else how))
                for name, method, how in COMPARED]
    if all(s != spec for _, s in compared):
        compared.append((f"{spec.method} ({spec.aggregate})", spec))
    out = []
    for name, method_spec in compared:
        table = rank(frame, method_spec)
        ranks = {str(a): float(r) for a, r in zip(table["algorithm"], table["rank"])}
        out.append(MethodRanks(name, method_spec, ranks, own=method_spec == spec))
    return out


def method_tau(methods: list[MethodRanks], algorithms: list[str]) -> FloatArray:
    """Kendall's tau-b between every two methods' rankings (a team one method leaves out ranks last)."""
    last = float(len(algorithms) + 1)
    ranks = np.array([[m.ranks.get(a, last) for a in algorithms] for m in methods], dtype=np.float64)
    return np.stack([kendall_tau_b(row, ranks) for row in ranks]).astype(np.float64)


def missing_cases(frame: pd.DataFrame, algorithms: list[str]) -> dict[str, int]:
    """How many of the task's cases each algorithm has no finite value for."""
    present = frame.dropna(subset=["value"]).groupby("algorithm")["case"].nunique()
    total = frame["case"].nunique()
    return {a: int(total - present.get(a, 0)) for a in algorithms}


def violin(values: FloatArray) -> Violin | None:
    """A Gaussian kernel density over the range of the finite values (trimmed there, as ggplot's
    violins are; Scott's bandwidth) and the box plot's numbers; None when there are none."""
    finite = np.sort(values[np.isfinite(values)]).astype(np.float64)
    if finite.size == 0:
        return None
    q1, q2, q3 = (float(q) for q in np.percentile(finite, [25, 50, 75]))
    reach = 1.5 * (q3 - q1)
    low = float(finite[finite >= q1 - reach].min())
    high = float(finite[finite <= q3 + reach].max())
    spread = float(finite.std())
    if spread == 0:
        empty = np.zeros(0, dtype=np.float64)
        return Violin(finite, empty, empty, (q1, q2, q3), (low, high))
    bandwidth = spread * finite.size ** (-1 / 5)
    grid = np.linspace(finite[0], finite[-1], DENSITY_POINTS)
    kernel = np.exp(-0.5 * ((grid[:, None] - finite[None, :]) / bandwidth) ** 2)
    density = kernel.mean(axis=1) / (bandwidth * np.sqrt(2 * np.pi))
    return Violin(finite, grid.astype(np.float64), density.astype(np.float64), (q1, q2, q3), (low, high))
