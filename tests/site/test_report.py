"""`challenge report`: the BIAS results section with challengeR's figures, as self-contained HTML
and as Markdown with SVG files, reproducible from its seed, and drawn by headless Chromium with the
network cut."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path

import pytest
import yaml

from runner.cli import main
from runner.site.report import FIGURES, ReportError, build_report, write_report
from runner.tree.store import Store
from tests.helpers import CHALLENGE, NOW, PHASE, add_result, edit_yaml, phase_file, served

# Per-case Dice: bob best in every case, dave and erin last; alice and carol trade places, and carol
# has no value for the last two cases.
CASES = {
    "bob": [0.90 + 0.01 * i for i in range(8)],
    "alice": [0.80, 0.72, 0.81, 0.70, 0.79, 0.83, 0.71, 0.80],
    "carol": [0.75, 0.78, 0.74, 0.77, 0.73, 0.76],
    "dave": [0.60 + 0.01 * i for i in range(8)],
    "erin": [0.50 + 0.01 * i for i in range(8)],
}
PRELIMINARY = "preliminary"
SECTIONS = ("Participation", "Metric and ranking method", "Ranking", "Missing values", "Per-case results",
            "Ranking stability", "Ranking across methods")


@pytest.fixture
def report_repo(repo) -> Path:
    """Five teams with per-case values and a failure in the final phase; a preliminary phase ranked
    on a score without per-case values."""
    for team, values in CASES.items():
        add_result(repo, team, "v1", sum(values) / len(values), cases=values)
    add_result(repo, "frank", "broken", None, status="failed", error="Algorithm failed: boom")
    phase = yaml.safe_load(phase_file(repo).read_text())
    phase.pop("score_case_jsonpath")
    phase.update(title="Preliminary", score_jsonpath="aggregates.dice.min", score_title="Dice (worst case)")
    phase_file(repo, PRELIMINARY).write_text(yaml.safe_dump(phase))
    for team, dice in (("alice", 0.7), ("bob", 0.8)):
        add_result(repo, team, "v1", dice, phase=PRELIMINARY)
    return repo


@pytest.fixture
def report_dir(report_repo, tmp_path) -> Path:
    out = tmp_path / "report"
    assert main(["--root", str(report_repo), "report", CHALLENGE, "--output", str(out), "--samples", "300"]) == 0
    return out


def section(html: str, phase: str) -> str:
    """One phase's part of the report, its white space collapsed (sentences wrap in the template)."""
    return " ".join(html.split(f'<section id="{phase}"', 1)[1].split("</section>", 1)[0].split())


def test_html_has_every_section_and_figure(report_dir):
    html = (report_dir / "report.html").read_text()
    final = section(html, PHASE)
    assert [s for s in SECTIONS if f"<h3>{s}</h3>" not in final] == []
    assert "6 teams made 6 submissions (5 succeeded, 1 failed); 5 teams are ranked." in final
    assert final.count("<svg ") == len(FIGURES) == 6
    assert [f for f in FIGURES if f'id="{PHASE}-{f}"' not in final] == []
    # the ranking table: bob first with his mean Dice, and a certain first place in every bootstrap sample
    first = re.search(r"<tbody> <tr>(.*?)</tr>", final)[1]
    assert re.findall(r"<td[^>]*>(.*?)</td>", first)[:4] == ["1", "bob", "v1", "0.935 ± 0.010"]
    assert "1 [1–1]" in unescape(first)  # as a reader sees it: the page writes brackets as entities
    assert "Algorithm failed: boom" in final and "hence not ranked: frank" in final
    assert "2 of 40 case values are missing (carol: 2)" in final
    assert "bob, is significantly better than every other team" in final
    assert "<strong>Absolute ranking</strong>: results are ordered on Dice (mean) alone" in final


def test_html_is_self_contained(report_dir):
    html = (report_dir / "report.html").read_text()
    assert not re.search(r"<script|<img|src=|url\(", html)
    assert re.findall(r"<link[^>]*>", html) == ['<link rel="icon" href="data:,">']  # no favicon request either
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {"http://www.w3.org/2000/svg"}


def test_markdown_has_its_figures_as_svg_files(report_dir):
    markdown = (report_dir / "report.md").read_text()
    linked = re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.svg)\)", markdown)
    assert linked == [f"figures/{PHASE}-{f}.svg" for f in FIGURES]
    for path in linked:
        assert ET.parse(report_dir / path).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert sorted(p.name for p in (report_dir / "figures").iterdir()) == sorted(Path(p).name for p in linked)
    assert "| 1 | bob | v1 | 0.935 ± 0.010 |" in markdown


def test_phase_without_case_values_says_so(report_dir):
    html = (report_dir / "report.html").read_text()
    preliminary = section(html, PRELIMINARY)
    assert "<svg" not in preliminary and "<h3>Ranking</h3>" in preliminary
    assert "set score_case_jsonpath" in unescape(preliminary)
    assert "## Preliminary" in (report_dir / "report.md").read_text()


def test_same_seed_same_report(report_repo, report_dir, tmp_path):
    again, other = tmp_path / "again", tmp_path / "other"
    for out, seed in ((again, "0"), (other, "7")):
        assert main(["--root", str(report_repo), "report", CHALLENGE, "--phase", PHASE, "--output", str(out),
                     "--samples", "300", "--seed", seed]) == 0
    first = section((report_dir / "report.html").read_text(), PHASE)
    assert section((again / "report.html").read_text(), PHASE) == first
    blob = f"figures/{PHASE}-blob.svg"
    assert (again / blob).read_bytes() == (report_dir / blob).read_bytes()
    assert (other / blob).read_bytes() != (again / blob).read_bytes()
    assert f'id="{PRELIMINARY}"' not in (again / "report.html").read_text()  # --phase chose one


def test_errors_are_one_line(report_repo, capsys):
    assert main(["--root", str(report_repo), "report", "no-such-challenge"]) == 1
    assert capsys.readouterr().err.strip().startswith("error: no challenge 'no-such-challenge'")
    phase = yaml.safe_load(phase_file(report_repo, PRELIMINARY).read_text())
    phase_file(report_repo, PRELIMINARY).write_text(yaml.safe_dump({**phase, "public": False}))
    with pytest.raises(ReportError, match="not public"):
        build_report(Store(report_repo), CHALLENGE, phases=[PRELIMINARY])
    report = build_report(Store(report_repo), CHALLENGE, samples=10)
    shown = [s.phase.slug for s in report.sections]
    assert PHASE in shown and PRELIMINARY not in shown  # a private phase is left out


def test_blind_phase_shows_only_who_took_part(report_repo, tmp_path):
    edit_yaml(phase_file(report_repo), blind=True)  # the phase closes at the end of 2027
    report = build_report(Store(report_repo), CHALLENGE, phases=[PHASE], samples=10, now=NOW)
    write_report(report, tmp_path / "out", report_repo / "site" / "templates")
    final = section((tmp_path / "out" / "report.html").read_text(), PHASE)
    assert "6 teams made 6 submissions" in final and "Scores are withheld (scores withheld until 2027-12-31" in final
    assert "<svg" not in final and "0.935" not in final and "bob" not in final
    assert list((tmp_path / "out" / "figures").iterdir()) == []


# --- in the browser -----------------------------------------------------------------------------

def test_report_renders_offline_in_chromium(report_dir, browser, tmp_path):
    """Headless Chromium with the network cut (tests/site/conftest.py) opens the report alone."""
    from selenium.webdriver.common.by import By

    chromium = browser
    chromium.get_log("performance"), chromium.get_log("browser")  # start from empty logs
    with served(report_dir) as site:
        url = f"{site}report.html"
        chromium.get(url)
        figures = chromium.find_elements(By.CSS_SELECTOR, f"#{PHASE} figure svg")
        sizes = [(f.size["width"], f.size["height"]) for f in figures]
        blobs = chromium.find_elements(By.CSS_SELECTOR, f"#{PHASE}-blob circle")
        chromium.save_screenshot(str(tmp_path / "report.png"))
    assert len(sizes) == 6 and all(w > 100 and h > 100 for w, h in sizes), sizes
    assert blobs and all(b.size["width"] > 0 for b in blobs[:5])
    log = [json.loads(entry["message"])["message"] for entry in chromium.get_log("performance")]
    urls = [m["params"]["request"]["url"] for m in log if m["method"] == "Network.requestWillBeSent"]
    assert urls and [u for u in urls if u != url] == []  # the page alone: no asset, nothing from elsewhere
    assert [e["message"] for e in chromium.get_log("browser") if e["level"] == "SEVERE"] == []
    assert (tmp_path / "report.png").stat().st_size > 10_000
