"""SVG written by hand, and the report's two figures of ranking uncertainty drawn from plain data.

The bootstrap blob plot and the significance map are drawn here from plain data (teams, their shares of
bootstrap ranks, which team beats which), for `report`. The leaderboard pages draw the same figures in
the browser (site/assets/charts.js) from their uncertainty.json: as static SVG, the significance map's
n x n tooltips cost about 600 kB a phase at 60 teams (the JSON about 20 kB), some 120 MB on a
200-phase site against GitHub Pages' 1 GB. The figures are challengeR's (Wiesenfarth et al., "Methods
and open-source toolkit for analyzing and visualizing challenge results", 2021).

Every text (team names are the participants' own) is escaped as it is written: `el`, `label`, `title_text`.
Needs no plotting library and no script: the SVG opens from a file as well as inside a page.

Knows: nothing of the tree or the ranking; only what it is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape

ACCENT, DARK, MUTED, LIGHT, INK = "#1565c0", "#0d2f6e", "#90a4ae", "#eceff1", "#263238"
# Paul Tol's colour-blind-safe "bright" and "muted" schemes; more algorithms get golden-angle hues.
PALETTE = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#332288", "#44aa99",
           "#999933", "#882255", "#117733", "#dd7722", "#6699cc", "#bbbbbb")
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"
SIGNIFICANCE_KEY = ((ACCENT, "column significantly better"), (LIGHT, "not significantly better"))


def rank_text(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:g}"


def colour(i: int) -> str:
    if i < len(PALETTE):
        return PALETTE[i]
    return f"hsl({(i * 137.508) % 360:.0f}, 55%, 45%)"


def num(value: object) -> str:
    """A number as an attribute writes it: at most two decimals, no trailing zeros."""
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return str(value)


def el(tag: str, content: str = "", **attrs: object) -> str:
    """An SVG element; attribute names are written with hyphens (text_anchor -> text-anchor)."""
    written = "".join(f' {k.rstrip("_").replace("_", "-")}="{escape(num(v))}"' for k, v in attrs.items()
                      if v is not None)
    return f"<{tag}{written}>{content}</{tag}>" if content else f"<{tag}{written}/>"


def label(x: float, y: float, content: str, **attrs: object) -> str:
    return el("text", escape(content), x=x, y=y, **{"fill": INK, **attrs})


def title_text(content: str) -> str:
    """A tooltip: the text a pointer over its parent element shows."""
    return f"<title>{escape(content)}</title>"


def svg(width: float, height: float, title: str, parts: Iterable[str]) -> str:
    """A standalone SVG, with its title as its accessible name (it is also written as a file)."""
    w, h = math.ceil(width), math.ceil(height)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
            f'aria-label="{escape(title)}" font-family="{escape(FONT)}" font-size="12">'
            f"<title>{escape(title)}</title>{''.join(parts)}</svg>")


def room(names: Iterable[str], size: float = 12) -> float:
    """Width of the longest name at font size `size` (about 0.6 em a character), plus a margin."""
    return 10 + 0.6 * size * max([len(n) for n in names] + [3])


def linear(lo: float, hi: float, a: float, b: float) -> Callable[[float], float]:
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def rotated(x: float, y: float, content: str, angle: float = -45) -> str:
    """A label ending at (x, y), turned by `angle` degrees: names under columns."""
    return label(x, y, content, text_anchor="end", transform=f"rotate({angle} {num(x)} {num(y)})")


def axis_title(x: float, y: float, content: str) -> str:
    """A vertical axis title centred on (x, y)."""
    return label(x, y, content, text_anchor="middle", transform=f"rotate(-90 {num(x)} {num(y)})")


def blob_svg(teams: Sequence[str], shares: Mapping[str, Mapping[float, float]], median: Mapping[str, float],
             low: Mapping[str, float], high: Mapping[str, float], ranks: Mapping[str, float] | None = None) -> str:
    """challengeR's blob plot of the bootstrap ranks: teams across (in this order), ranks down; a blob's area
    is the team's share of samples with that rank (`shares`: team -> rank -> share), the cross its `median`
    rank, the line from `low` to `high` its 95% interval; `ranks` (the ranking on all cases) on top, if given."""
    k = len(teams)
    size = max(24.0, min(48.0, 640 / k))
    left, top = max(56.0, 0.72 * room(teams) - size / 2), 28.0
    x = {a: left + (i + 0.5) * size for i, a in enumerate(teams)}
    y = linear(1, max(k, 2), top + size / 2, top + (max(k, 2) - 0.5) * size)
    parts = [el("line", x1=x[teams[0]], y1=y(1), x2=x[teams[-1]], y2=y(k), stroke=MUTED, stroke_dasharray="2 3")]
    parts += [label(left - 6, y(r) + 4, str(r), text_anchor="end", font_size=11) for r in range(1, k + 1)]
    for i, team in enumerate(teams):
        parts += _blobs(x[team], y, shares[team], colour(i), size * 0.48, team)
        parts += _median_and_interval(x[team], y, median[team], low[team], high[team])
        if ranks is not None:
            parts.append(label(x[team], top - 10, rank_text(ranks[team]), text_anchor="middle", font_size=11))
        parts.append(rotated(x[team] + 4, top + k * size + 10, team))
    parts += [axis_title(left - 34, top + k * size / 2, "Bootstrap rank"),
              *_size_legend(left + k * size + 24, top + 8, size * 0.48)]
    return svg(left + k * size + 140, top + k * size + 0.75 * room(teams) + 16, "Bootstrap ranks", parts)


def _blobs(x: float, y: Callable[[float], float], shares: Mapping[float, float], fill: str, biggest: float,
           name: str) -> list[str]:
    return [el("circle", title_text(f"{name}: rank {rank_text(r)} in {100 * s:.1f}% of samples"), cx=x, cy=y(r),
               r=biggest * math.sqrt(s), fill=fill, fill_opacity=0.75) for r, s in shares.items()]


def _median_and_interval(x: float, y: Callable[[float], float], median: float, low: float, high: float) -> list[str]:
    m = y(median)
    return [el("line", x1=x, x2=x, y1=y(low), y2=y(high), stroke="black", stroke_width=1.5),
            el("path", d=f"M{num(x - 5)} {num(m - 5)} l10 10 m0 -10 l-10 10", stroke="black", stroke_width=2)]


def _size_legend(x: float, y: float, biggest: float) -> list[str]:
    parts, offset = [label(x, y, "share of samples", font_size=11)], y + 10
    for share in (1.0, 0.5, 0.1):
        r = biggest * math.sqrt(share)
        parts += [el("circle", cx=x + biggest, cy=offset + r, r=r, fill=MUTED, fill_opacity=0.6),
                  label(x + 2 * biggest + 6, offset + r + 4, f"{share:.0%}", font_size=11)]
        offset += 2 * r + 6
    return parts


def significance_svg(teams: Sequence[str], better: Sequence[Sequence[bool]],
                     ranks: Mapping[str, float] | None = None) -> str:
    """challengeR's significance map: a filled cell at column A and row B where A is significantly better
    than B (`better[i][j]`: teams[i] is significantly better than teams[j]), each cell saying so as its
    tooltip; `ranks` (the ranking on all cases) on top, if given."""
    k = len(teams)
    size = max(14.0, min(32.0, 640 / k))
    left, top = room(teams) + 24, 28.0
    parts = []
    for row in range(k):
        for col in range(k):
            fill = "white" if row == col else ACCENT if better[col][row] else LIGHT
            verdict = "is" if better[col][row] else "is not"
            parts.append(el("rect", title_text(f"{teams[col]} {verdict} significantly better than {teams[row]}"),
                            x=left + col * size, y=top + row * size, width=size, height=size, fill=fill,
                            stroke="white"))
    parts.append(el("line", x1=left, y1=top, x2=left + k * size, y2=top + k * size, stroke=INK))
    parts += [label(left - 6, top + (i + 0.5) * size + 4, a, text_anchor="end") for i, a in enumerate(teams)]
    parts += [rotated(left + (i + 0.5) * size + 4, top + k * size + 10, a) for i, a in enumerate(teams)]
    if ranks is not None:
        parts += [label(left + (i + 0.5) * size, top - 10, rank_text(ranks[a]), text_anchor="middle", font_size=11)
                  for i, a in enumerate(teams)]
    parts += [axis_title(12, top + k * size / 2, "compared with"),
              *_swatches(left + k * size + 20, top, SIGNIFICANCE_KEY)]
    width = left + k * size + 40 + room(text for _, text in SIGNIFICANCE_KEY)
    return svg(width, top + k * size + 0.75 * room(teams) + 16, "Significance map", parts)


def _swatches(x: float, y: float, entries: Sequence[tuple[str, str]]) -> list[str]:
    parts = []
    for i, (fill, text) in enumerate(entries):
        parts += [el("rect", x=x, y=y + i * 20, width=14, height=14, fill=fill, stroke=MUTED),
                  label(x + 20, y + i * 20 + 11, text, font_size=11)]
    return parts
