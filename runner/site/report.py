"""A challenge's results report: self-contained HTML (inline CSS and SVG) and Markdown with SVG files.

It follows the results section of the BIAS reporting guideline (Maier-Hein et al., "BIAS:
Transparent reporting of biomedical image analysis challenges", 2020): per task (phase) the
participation, the metric and ranking method in a sentence, the ranking, its stability, and what
is missing. The figures are challengeR's (Wiesenfarth et al., "Methods and open-source toolkit
for analyzing and visualizing challenge results", 2021): podium plot, ranking heatmap, bootstrap
blob plot, significance map, and Kendall's tau across ranking methods and bootstrap samples.

The numbers come from `runner.ranking.report_data`; this module only draws and writes them. The
SVG is written by hand (`runner.site.charts`), so the report needs no plotting library, no script
and no network: it opens from a file or an e-mail attachment.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup

from runner.errors import ChallengeError
from runner.ranking.leaderboard import Leaderboard, leaderboard, phase_leaderboard
from runner.ranking.methods import RankSpec
from runner.ranking.report_data import CaseAnalysis, Participation, PhaseAnalysis, Violin, analyse_phase, participation
from runner.ranking.tables import fmt
from runner.site import templating
from runner.site.charts import (
    ACCENT,
    DARK,
    INK,
    LIGHT,
    MUTED,
    axis_title,
    blob_svg,
    colour,
    el,
    label,
    linear,
    num,
    rank_text,
    room,
    rotated,
    significance_svg,
    svg,
)
from runner.site.facts import METHOD_NAMES, ranking_method
from runner.site.pages import cell
from runner.tree.model import CASE_METHODS, Challenge
from runner.tree.phase_model import Phase
from runner.tree.policy import visibility
from runner.tree.store import Store

Progress = Callable[[int, int, str], None]  # (steps done, steps in all, what runs now)

PODIUM_MAX = 30  # more algorithms than this make a podium of k x k columns too narrow to read
# Each figure's title and caption: how to read it, in challengeR's terms.
CAPTIONS = {
    "podium": ("Podium plot", "Each dot is one team's {metric} in one case, on the podium place of the rank the "
               "team got in that case, in the team's own column there; lines join the dots of one case. The bars "
               "below count how often each team got each rank (of {cases} cases; a case without a value counts "
               "as the last rank)."),
    "heatmap": ("Ranking heatmap", "How many of the {cases} cases each team (column, best first) ranked at each "
                "place (row); darker is more. A case without a value counts as the last rank."),
    "blob": ("Bootstrap ranks (blob plot)", "Each team's rank in {samples} bootstrap samples of the cases: a blob's "
             "area is the share of samples with that rank, the cross the median rank, the black line the 95% "
             "interval; the number on top is the rank on all cases."),
    "significance": ("Significance map", "A blue cell at column A and row B: A is significantly better than B "
                     "(one-sided Wilcoxon signed-rank test over cases, alpha {alpha}{adjusted}). Teams in ranking "
                     "order; the number on top is each team's rank."),
    "tau-methods": ("Rankings by method", "Kendall's tau-b between the rankings of the teams by each ranking method "
                    "(1: the same order, 0: unrelated, −1: reversed); *: the method of the analyses above."),
    "tau-bootstrap": ("Kendall's tau over bootstrap samples", "The distribution of Kendall's tau-b between the "
                      "ranking on all cases and the ranking of each bootstrap sample (violin, and box: quartiles, "
                      "whiskers within 1.5 interquartile ranges)."),
}
FIGURES = tuple(CAPTIONS)  # in the order the report shows them


class ReportError(ChallengeError):
    """The report cannot be made as asked (no such challenge, a phase that is not public)."""


@dataclass(frozen=True)
class Figure:
    name: str  # one of FIGURES: the SVG file is figures/<phase>-<name>.svg
    title: str
    caption: str
    svg: str

    @property
    def inline(self) -> Markup:
        return Markup(self.svg)


@dataclass(frozen=True)
class PhaseSection:
    """What the report shows of one phase."""

    phase: Phase
    analysis: PhaseAnalysis | None  # None while the phase withholds scores
    participation: Participation
    withheld: str = ""
    figures: dict[str, Figure] = field(default_factory=dict)

    @property
    def board(self) -> Leaderboard | None:
        return self.analysis.board if self.analysis else None

    @property
    def cases(self) -> CaseAnalysis | None:
        return self.analysis.cases if self.analysis else None

    @property
    def method_name(self) -> str:
        return METHOD_NAMES[self.phase.scoring_method_choice]

    @property
    def method(self) -> str:
        return ranking_method(self.phase)


@dataclass(frozen=True)
class Report:
    challenge: Challenge
    sections: list[PhaseSection]
    samples: int
    seed: int


def build_report(store: Store, slug: str, *, phases: Sequence[str] = (), samples: int = 1000, seed: int = 0,
                 now: dt.datetime | None = None, progress: Progress | None = None, whole: bool = False) -> Report:
    """Analyse and draw each phase of a challenge (its public phases, or those named) from its
    published results, as its leaderboard shows them now (`whole`: as the store's keys open them, for
    organizers); `progress` hears of each phase."""
    if slug not in store.slugs():
        raise ReportError(f"no challenge {slug!r} under {store.base} (known: {', '.join(store.slugs()) or 'none'})")
    if samples < 1:
        raise ReportError(f"--samples must be at least 1, not {samples}")
    chosen = _phases(store, slug, phases)
    now = now or dt.datetime.now(dt.UTC)
    sections = []
    for done, phase in enumerate(chosen):
        if progress:
            progress(done, len(chosen), f"{phase.title}: ranking and bootstrap")
        sections.append(phase_section(store, phase, samples=samples, seed=seed, now=now, whole=whole))
    if progress:
        progress(len(chosen), len(chosen), "done")
    return Report(store.challenge(slug), sections, samples, seed)


def _phases(store: Store, slug: str, names: Sequence[str]) -> list[Phase]:
    if not names:
        return [p for p in store.phases(slug).values() if p.public]
    chosen = [store.phase(slug, name) for name in dict.fromkeys(names)]
    hidden = [p.slug for p in chosen if not p.public]
    if hidden:
        raise ReportError(f"phase {hidden[0]!r} is not public (public: false): its results are not published")
    return chosen


def phase_section(store: Store, phase: Phase, *, samples: int, seed: int, now: dt.datetime,
                  whole: bool = False) -> PhaseSection:
    """One phase's analysis and figures from what the public may see of its results (`Store.public`: no
    per-case value a phase keeps to its columns); a phase that withholds scores now shows only who took
    part. `whole`: every result as the store's keys open it."""
    results = store.results(phase.challenge, phase.slug)
    results = results if whole else store.public(phase, results, now=now)
    shown = visibility(phase, now=now)
    if not shown.scores and not whole:
        return PhaseSection(phase, None, participation(leaderboard(phase, results), results), withheld=shown.note)
    analysis = analyse_phase(phase_leaderboard(store.paths, phase, results), results, samples=samples, seed=seed)
    figures = figures_for(analysis.cases, analysis.case_metric) if analysis.cases else {}
    return PhaseSection(phase, analysis, analysis.participation, figures=figures)


def write_report(report: Report, output: Path, templates: Path) -> list[Path]:
    """report.html (everything inline), report.md and its figures/*.svg; figures of earlier runs
    that this one did not draw are removed, so the folder always matches the Markdown."""
    names = ("report.html", "report.md")
    if missing := [n for n in names if not (templates / f"{n}.j2").is_file()]:
        raise ReportError(f"template {missing[0]}.j2 not found in {templates}: copy site/templates/ from the "
                          "runner's repository")
    env = environment(templates)
    figures = output / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    wanted = {figures / f"{s.phase.slug}-{f.name}.svg": f.svg + "\n"
              for s in report.sections for f in s.figures.values()}
    for stale in set(figures.glob("*.svg")) - set(wanted):
        stale.unlink()
    for name in names:
        wanted[output / name] = env.get_template(f"{name}.j2").render(report=report, **_helpers())
    for path, text in wanted.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return sorted(wanted)


def environment(templates: Path) -> jinja2.Environment:
    """The site's template settings (`templating`: every value text unless marked safe)."""
    return templating.environment(templates, fmt=fmt, cell=cell, rank=rank_text, plural=plural)


def _helpers() -> dict[str, Any]:
    return {"intervals": intervals, "missing_policy": missing_policy, "better": better, "case_method": case_method,
            "podium_max": PODIUM_MAX,
            "significance_summary": significance_summary, "tau_summary": tau_summary}


# --- sentences and table cells the templates share ----------------------------------------------

def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def better(phase: Phase) -> str:
    return "higher is better" if phase.score.order == "desc" else "lower is better"


def intervals(section: PhaseSection) -> dict[tuple[str, str], str]:
    """Median bootstrap rank and 95% interval on each team's row that the analysis used (its best)."""
    cases, board = section.cases, section.board
    if cases is None or board is None:
        return {}
    b, used = cases.bootstrap, dict[str, tuple[str, str]]()
    for row in board.rows:
        if row.rank is not None and row.participant in b.median_rank:
            used.setdefault(row.participant, (row.participant, row.submission))
    return {key: f"{rank_text(b.median_rank[p])} [{rank_text(b.ci_low[p])}–{rank_text(b.ci_high[p])}]"
            for p, key in used.items()}


def case_method(section: PhaseSection) -> str:
    """Which challengeR method the case-level analyses rank with, and why that one."""
    cases = section.cases
    if cases is None:
        return ""
    if section.phase.scoring_method_choice in CASE_METHODS:
        return f"The case-level analyses below rank as the leaderboard does ({cases.method_name})."
    metric = section.analysis.case_metric if section.analysis else section.phase.score.title
    return (f"The case-level analyses below rank the per-case {metric} values by aggregate-then-rank with the "
            f"{cases.spec.aggregate} ({cases.method_name}), as the score {section.phase.score.title} aggregates them.")


def missing_policy(spec: RankSpec) -> str:
    """How the ranking treats a case without a value, in a sentence."""
    if spec.missing != "drop":
        return f"A missing value is replaced by {spec.missing:g} before ranking (ranking_options.missing)."
    return {"aggregate-then-rank": "A missing value is left out of the team's aggregate.",
            "rank-then-aggregate": "A missing value ranks after every present value of its case.",
            "test-then-rank": "A missing value leaves that case out of the team's pairwise tests."}[spec.method]


def significance_summary(cases: CaseAnalysis) -> str:
    """How many ordered pairs differ significantly, and whom the first-ranked team beats."""
    beats = cases.bootstrap.significance.loc[cases.algorithms, cases.algorithms].to_numpy()
    k, first = len(cases.algorithms), cases.algorithms[0]
    beaten = int(beats[0].sum())
    whom = "every other team" if beaten == k - 1 else f"{beaten} of the other {k - 1}"
    return (f"{int(beats.sum())} of {k * (k - 1)} ordered pairs differ significantly; "
            f"the first-ranked team, {first}, is significantly better than {whom}.")


def tau_summary(cases: CaseAnalysis) -> str:
    tau = cases.tau
    if tau is None:
        return "Kendall's tau is undefined for every sample (all teams tied)."
    q1, median, q3 = tau.quartiles
    return (f"Kendall's tau between the full ranking and the {len(tau.values)} bootstrap rankings: "
            f"median {median:.3f}, interquartile range {q1:.3f}–{q3:.3f}, mean {float(tau.values.mean()):.3f}.")


# --- figures ------------------------------------------------------------------------------------

def figures_for(cases: CaseAnalysis, metric: str) -> dict[str, Figure]:
    """challengeR's figures of one phase (`metric`: the per-case values' name), each with the
    caption that says how to read it (CAPTIONS)."""
    spec = cases.spec
    adjusted = "" if spec.p_adjust == "none" else f", p adjusted by {spec.p_adjust}"
    words = {"metric": metric, "cases": len(cases.cases), "samples": len(cases.bootstrap.ranks),
             "alpha": f"{spec.alpha:g}", "adjusted": adjusted}
    drawn = {"podium": podium_svg(cases, f"{metric} per case") if len(cases.algorithms) <= PODIUM_MAX else None,
             "heatmap": heatmap_svg(cases), "blob": _blob(cases), "significance": _significance(cases),
             "tau-methods": tau_matrix_svg(cases), "tau-bootstrap": tau_violin_svg(cases)}
    return {name: Figure(name, CAPTIONS[name][0], CAPTIONS[name][1].format(**words), image)
            for name, image in drawn.items() if image is not None}



def _blob(cases: CaseAnalysis) -> str:
    """The blob plot (`charts.blob_svg`) of the teams in ranking order, with their ranks on all cases."""
    b = cases.bootstrap
    return blob_svg(cases.algorithms, cases.rank_shares, b.median_rank, b.ci_low, b.ci_high, ranks=cases.ranks)


def _significance(cases: CaseAnalysis) -> str:
    """The significance map (`charts.significance_svg`) of the teams in ranking order, with their ranks."""
    names = cases.algorithms
    better = cases.bootstrap.significance.loc[names, names].to_numpy().tolist()
    return significance_svg(names, better, ranks=cases.ranks)


def ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round numbers from lo to hi, about `count` of them (1, 2 or 5 times a power of ten apart)."""
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= raw)
    first = math.ceil(lo / step - 1e-9)
    return [round(i * step, 12) for i in range(first, math.floor(hi / step + 1e-9) + 1)]


def tick_text(value: float, values: Sequence[float]) -> str:
    step = abs(values[1] - values[0]) if len(values) > 1 else abs(value) or 1
    places = max(0, -math.floor(math.log10(step)))
    return f"{value:.{places}f}"


def legend(x: float, y: float, names: Sequence[str]) -> list[str]:
    parts = []
    for i, name in enumerate(names):
        parts.append(el("circle", cx=x + 6, cy=y + i * 18, r=5, fill=colour(i)))
        parts.append(label(x + 16, y + i * 18 + 4, name))
    return parts


def y_axis(x: float, scale: Callable[[float], float], marks: Sequence[float], *, width: float) -> list[str]:
    """Tick labels left of x and light grid lines across the plot."""
    parts = []
    for v in marks:
        y = scale(v)
        parts.append(el("line", x1=x, x2=x + width, y1=y, y2=y, stroke=LIGHT))
        parts.append(label(x - 6, y + 4, tick_text(v, marks), text_anchor="end", font_size=11))
    return parts


def podium_svg(cases: CaseAnalysis, score: str) -> str:
    """challengeR's podium: k places (ranks within a case), each split into k team columns; a dot
    per team and case at its value; lines join one case's dots; bars count each team's ranks."""
    k, m, values, ranks = len(cases.algorithms), len(cases.cases), cases.values, cases.case_ranks
    sub = max(3.0, min(24.0, 900 / (k * k)))
    place, left, top, high, bars = k * sub, 64.0, 16.0, 260.0, 90.0
    finite = values[np.isfinite(values)]
    pad = float(finite.max() - finite.min()) * 0.05 or 0.05
    y = linear(float(finite.min()) - pad, float(finite.max()) + pad, top + high, top)
    parts = y_axis(left, y, ticks(float(finite.min()) - pad, float(finite.max()) + pad), width=k * place)
    x = [[left + (ranks[i, j] - 1) * place + (i + 0.5) * sub for j in range(m)] for i in range(k)]
    parts += _podium_lines(values, ranks, x, y)
    dot = max(1.6, min(4.0, sub * 0.35))
    parts += [el("circle", cx=x[i][j], cy=y(float(values[i, j])), r=dot, fill=colour(i), fill_opacity=0.85)
              for i in range(k) for j in range(m) if np.isfinite(values[i, j])]
    parts += _podium_bars(cases.rank_counts, left=left, top=top + high, height=bars, sub=sub, cases=m)
    parts += _podium_frame(k, place, left=left, top=top, high=high, bars=bars, score=score)
    parts += legend(left + k * place + 16, top + 8, cases.algorithms)
    width = left + k * place + 32 + room(cases.algorithms)
    return svg(width, max(top + high + bars + 48, top + 18 * k + 16), "Podium plot", parts)


def _podium_frame(k: int, place: float, *, left: float, top: float, high: float, bars: float, score: str) -> list[str]:
    """The podium's borders, dashed places, place numbers and axis titles."""
    bottom = top + high + bars
    parts = [el("line", x1=left + p * place, x2=left + p * place, y1=top, y2=bottom, stroke=MUTED,
                stroke_dasharray="4 3") for p in range(k + 1)]
    parts += [label(left + (p + 0.5) * place, bottom + 16, f"{p + 1}.", text_anchor="middle") for p in range(k)]
    return parts + [el("rect", x=left, y=top, width=k * place, height=high + bars, fill="none", stroke=INK),
                    el("line", x1=left, x2=left + k * place, y1=top + high, y2=top + high, stroke=INK),
                    axis_title(16, top + high / 2, score), axis_title(30, top + high + bars / 2, "cases"),
                    label(left + k * place / 2, bottom + 36, "Podium place (rank in the case)", text_anchor="middle")]


def _podium_lines(values: np.ndarray, ranks: np.ndarray, x: list[list[float]],
                  y: Callable[[float], float]) -> list[str]:
    """One grey line per case through its teams' dots, in podium order."""
    parts = []
    for j in range(values.shape[1]):
        order = [i for i in np.argsort(ranks[:, j], kind="stable") if np.isfinite(values[i, j])]
        points = " ".join(f"{num(x[i][j])},{num(y(float(values[i, j])))}" for i in order)
        if len(order) > 1:
            parts.append(el("polyline", points=points, fill="none", stroke="#607d8b", stroke_opacity=0.3))
    return parts


def _podium_bars(counts: np.ndarray, *, left: float, top: float, height: float, sub: float, cases: int) -> list[str]:
    k = len(counts)
    parts = [label(left - 6, top + 12, str(cases), text_anchor="end", font_size=11),
             label(left - 6, top + height, "0", text_anchor="end", font_size=11)]
    for i in range(k):
        for p in range(k):
            h = height * counts[i, p] / cases
            if h > 0:
                parts.append(el("rect", x=left + p * k * sub + i * sub, y=top + height - h, width=sub, height=h,
                                fill=colour(i)))
    return parts


def shade(share: float, dark: str = ACCENT) -> str:
    """From white (0) to `dark` (1)."""
    base = [int(dark[i:i + 2], 16) for i in (1, 3, 5)]
    mixed = [round(255 + (c - 255) * min(max(share, 0.0), 1.0)) for c in base]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def heatmap_svg(cases: CaseAnalysis) -> str:
    """challengeR's ranking heatmap: teams (columns) by rank (rows), shaded by the number of cases."""
    k, m, counts = len(cases.algorithms), len(cases.cases), cases.rank_counts
    size = max(14.0, min(44.0, 640 / k))
    left, top = max(56.0, 0.72 * room(cases.algorithms) - size / 2), 12.0
    parts = []
    for i in range(k):
        for p in range(k):
            share = counts[i, p] / m
            x, y = left + i * size, top + p * size
            parts.append(el("rect", x=x, y=y, width=size, height=size, fill=shade(share, DARK), stroke=LIGHT))
            if counts[i, p] and size >= 18:
                parts.append(label(x + size / 2, y + size / 2 + 4, str(counts[i, p]), text_anchor="middle",
                                   font_size=11, fill="white" if share > 0.5 else INK))
    parts += [label(left - 6, top + (p + 0.5) * size + 4, str(p + 1), text_anchor="end", font_size=11)
              for p in range(k)]
    parts += [rotated(left + (i + 0.5) * size + 4, top + k * size + 10, a) for i, a in enumerate(cases.algorithms)]
    parts += [axis_title(left - 34, top + k * size / 2, "Rank"), *_colour_bar(left + k * size + 20, top, m)]
    return svg(left + k * size + 90, top + k * size + 0.75 * room(cases.algorithms) + 16, "Ranking heatmap", parts)


def _colour_bar(x: float, y: float, cases: int) -> list[str]:
    steps = 5
    parts = [el("rect", x=x, y=y + s * 16, width=14, height=16, fill=shade(1 - s / (steps - 1), DARK), stroke=LIGHT)
             for s in range(steps)]
    return parts + [label(x + 20, y + 12, f"{cases} cases", font_size=11),
                    label(x + 20, y + steps * 16, "0", font_size=11)]


def diverging(value: float) -> str:
    """Blue for 1, white for 0, red for −1; grey where undefined."""
    if not math.isfinite(value):
        return LIGHT
    return shade(value) if value >= 0 else shade(-value, "#c62828")


def tau_matrix_svg(cases: CaseAnalysis) -> str:
    """Kendall's tau-b between every two ranking methods, with the values written in."""
    names = [m.name + (" *" if m.own else "") for m in cases.methods]
    n, size = len(names), 64.0
    left, top = room(names) + 10, 12.0
    parts = []
    for r in range(n):
        for c in range(n):
            tau = float(cases.method_tau[r, c])
            x, y = left + c * size, top + r * size
            parts += [el("rect", x=x, y=y, width=size, height=size, fill=diverging(tau), stroke="white"),
                      label(x + size / 2, y + size / 2 + 4, "–" if not math.isfinite(tau) else f"{tau:.2f}",
                            text_anchor="middle", fill="white" if abs(tau) > 0.6 else INK)]
    parts += [label(left - 8, top + (i + 0.5) * size + 4, name, text_anchor="end") for i, name in enumerate(names)]
    parts += [rotated(left + (i + 0.5) * size + 4, top + n * size + 10, name, -30) for i, name in enumerate(names)]
    return svg(left + n * size + 16, top + n * size + 0.55 * room(names) + 20, "Kendall's tau between methods", parts)


def tau_violin_svg(cases: CaseAnalysis) -> str:
    """challengeR's violin of the bootstrap Kendall's tau, with a box plot inside."""
    tau, left, top, height, centre = cases.tau, 64.0, 16.0, 240.0, 170.0
    if tau is None:
        return svg(320, 60, "Kendall's tau over bootstrap samples",
                   [label(10, 30, "Kendall's tau is undefined for every sample.")])
    lo = min(0.0, float(tau.values[0]))
    y = linear(lo, 1.0, top + height, top)
    marks = ticks(lo, 1.0)
    parts = y_axis(left, y, marks, width=220) + [_violin_shape(tau, centre, y), *_box(tau, centre, y)]
    parts += [axis_title(18, top + height / 2, "Kendall's tau"),
              label(centre, top + height + 24, cases.method_name, text_anchor="middle")]
    return svg(left + 240, top + height + 36, "Kendall's tau over bootstrap samples", parts)


def _violin_shape(tau: Violin, centre: float, y: Callable[[float], float]) -> str:
    if tau.density.size == 0:  # every sample gave the same tau
        v = y(float(tau.values[0]))
        return el("line", x1=centre - 70, x2=centre + 70, y1=v, y2=v, stroke=ACCENT, stroke_width=3)
    half = 70 * tau.density / tau.density.max()
    right = [f"{num(centre + w)},{num(y(float(g)))}" for g, w in zip(tau.grid, half)]
    left = [f"{num(centre - w)},{num(y(float(g)))}" for g, w in zip(tau.grid[::-1], half[::-1])]
    return el("polygon", points=" ".join(right + left), fill=ACCENT, fill_opacity=0.3, stroke=ACCENT)


def _box(tau: Violin, centre: float, y: Callable[[float], float]) -> list[str]:
    (q1, q2, q3), (low, high) = tau.quartiles, tau.whiskers
    outliers = tau.values[(tau.values < low) | (tau.values > high)]
    parts = [el("line", x1=centre, x2=centre, y1=y(low), y2=y(q1), stroke=INK),
             el("line", x1=centre, x2=centre, y1=y(q3), y2=y(high), stroke=INK),
             el("rect", x=centre - 9, y=y(q3), width=18, height=max(y(q1) - y(q3), 1.0), fill="white", stroke=INK),
             el("line", x1=centre - 9, x2=centre + 9, y1=y(q2), y2=y(q2), stroke=INK, stroke_width=2)]
    return parts + [el("circle", cx=centre, cy=y(float(v)), r=1.8, fill=INK) for v in np.unique(outliers)]
