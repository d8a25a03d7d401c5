"""The report's blob plot and significance map (`runner.site.charts`), drawn from plain data: what a
participant named their team stays text."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from html import escape

from runner.site.charts import blob_svg, significance_svg

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<img src=x onerror="alert(1)">&amp;</title><script>alert(2)</script>'
TEAMS = ["alice", HOSTILE]
DRAWN = {"svg", "title", "line", "text", "circle", "path", "rect"}


def parsed(drawn: str) -> ET.Element:
    root = ET.fromstring(drawn)  # well-formed: every name escaped
    assert {e.tag.removeprefix(SVG) for e in root.iter()} <= DRAWN  # no element of theirs
    assert root.get("role") == "img"
    return root


def test_blob_plot_escapes_team_names():
    shares = {"alice": {1.0: 0.9, 2.0: 0.1}, HOSTILE: {1.0: 0.1, 2.0: 0.9}}
    median, low, high = {"alice": 1.0, HOSTILE: 2.0}, {"alice": 1.0, HOSTILE: 1.0}, {"alice": 2.0, HOSTILE: 2.0}
    drawn = blob_svg(TEAMS, shares, median, low, high)
    root = parsed(drawn)
    assert root.get("aria-label") == "Bootstrap ranks" and escape(HOSTILE) in drawn
    assert HOSTILE in [t.text for t in root.iter(f"{SVG}text")]
    assert f"{HOSTILE}: rank 2 in 90.0% of samples" in [t.text for t in root.iter(f"{SVG}title")]
    assert len(list(root.iter(f"{SVG}circle"))) == 4 + 3  # a blob per team and rank, and the size key's three
    ranked = blob_svg(TEAMS, shares, median, low, high, ranks={"alice": 1.0, HOSTILE: 2.0})
    assert {"1", "2"} <= {t.text for t in parsed(ranked).iter(f"{SVG}text")}


def test_significance_map_says_who_beats_whom():
    drawn = significance_svg(TEAMS, [[False, True], [False, False]])
    root = parsed(drawn)
    assert root.get("aria-label") == "Significance map" and escape(HOSTILE) in drawn
    tips = [t.text for t in root.iter(f"{SVG}title")][1:]  # after the figure's own title
    assert tips == ["alice is not significantly better than alice",
                    f"{HOSTILE} is not significantly better than alice",
                    f"alice is significantly better than {HOSTILE}",
                    f"{HOSTILE} is not significantly better than {HOSTILE}"]
    filled = [r.get("fill") for r in root.iter(f"{SVG}rect")][:4]
    assert filled == ["white", "#eceff1", "#1565c0", "white"]  # column alice beats row HOSTILE
