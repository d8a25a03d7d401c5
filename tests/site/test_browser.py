"""The built site in headless Chromium with the network cut: the leaderboard sorts, the charts
draw, the result viewer renders a result, and no request leaves the site.

Without Chromium (Debian packages chromium and chromium-driver) these tests are skipped, except
under CI (CI=true), where a missing browser fails the run.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.evaluation.examples import prepare_workspace
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from runner.tree.store import Store
from tests.helpers import (
    CHALLENGE,
    PHASE,
    REPO,
    SCREENS,
    add_result,
    commit,
    fits_across,
    served,
    wait_for,
    window_size,
)

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CASES = 6


SHAPES = {  # metrics.json as evaluations write it besides {"case": {case: {metric}}, "aggregates": {metric: {stat}}}
    "aggregates": {"auroc": 0.91, "dice": {"liver": {"mean": 0.8, "std": 0.1}}},
    "case": {"dice": {"0": 0.7, "1": 0.9}},  # pandas' to_dict(): metric first, as grand-challenge's evalutils writes
    "thresholds": [0.25, 0.5],
    "version": "kit 1.0",
}


def add_shapes_result(repo: Path) -> None:
    """A phase scored on a plain-number aggregate, with a result in every shape of metrics.json."""
    phases = repo / "challenges" / CHALLENGE / "phases"
    text = (phases / f"{PHASE}.yml").read_text().replace("aggregates.dice.mean", "aggregates.auroc")
    (phases / "shapes.yml").write_text(text.replace("score_case_jsonpath: case.*.dice", ""))
    add_result(repo, "frank", "v1", 0.5, phase="shapes")
    path = repo / "challenges" / CHALLENGE / "results" / "shapes" / "frank" / "v1.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "metrics": SHAPES}))


@pytest.fixture(scope="module")
def site_url(tmp_path_factory) -> Iterator[str]:
    """A site built by MkDocs from a repository with several results over two days of history,
    served on 127.0.0.1."""
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("browser") / "repo")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    for participant, offset in (("alice", 0.2), ("bob", 0.3)):
        add_result(repo, participant, "v1", 0.5 + offset, cases=[0.45 + offset + 0.02 * i for i in range(CASES)])
    commit(repo, "2026-03-01T10:00:00Z")
    for participant, offset in (("carol", 0.1), ("dave", 0.0)):
        add_result(repo, participant, "v1", 0.5 + offset, cases=[0.45 + offset + 0.02 * i for i in range(CASES)])
    add_result(repo, "erin", "broken", None, status="failed", error="Algorithm failed: boom")
    add_shapes_result(repo)
    commit(repo, "2026-03-02T10:00:00Z")
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    site = build_site(config)
    with served(site) as url:
        yield url


def column(browser, index: int) -> list[str]:
    return [row.find_elements(By.TAG_NAME, "td")[index].text
            for row in browser.find_elements(By.CSS_SELECTOR, ".lb-table table tbody tr")]


def leaderboard_url(site_url: str) -> str:
    return f"{site_url}{CHALLENGE}/leaderboard/{PHASE}/"


def test_leaderboard_sorts_by_any_column(page, site_url):
    page.get(leaderboard_url(site_url))
    headers = wait_for(page, ".lb-table th.lb-sortable", 4)
    assert column(page, 1) == ["bob", "alice", "carol", "dave"]  # rank order
    headers[1].click()
    assert column(page, 1) == ["alice", "bob", "carol", "dave"]
    headers[3].click()  # Dice (mean), ascending
    assert column(page, 1) == ["dave", "carol", "alice", "bob"]
    headers[3].click()
    assert column(page, 1) == ["bob", "alice", "carol", "dave"]
    assert headers[3].get_attribute("aria-sort") == "descending"


def test_uncertainty_charts_draw(page, site_url):
    page.get(leaderboard_url(site_url))
    blobs = wait_for(page, "#lb-uncertainty .lb-blob svg circle", 4)
    assert all(float(c.get_attribute("r")) > 0 for c in blobs)
    cells = wait_for(page, "#lb-uncertainty .lb-significance svg rect", 16)
    assert len(cells) == 16  # 4 teams x 4


def test_history_snapshot_shows_in_place(page, site_url):
    page.get(leaderboard_url(site_url))
    snapshots = wait_for(page, "a.lb-snapshot", 2)
    assert [a.text for a in snapshots] == ["2026-03-02", "2026-03-01"]
    snapshots[1].click()
    rows = wait_for(page, "#lb-snapshot table tbody tr", 2)
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == ["bob", "alice"]
    assert "As of 2026-03-01" in page.find_element(By.ID, "lb-snapshot").text
    snapshots[0].click()  # the other day, from the same file: fetched once
    WebDriverWait(page, 10).until(lambda b: "As of 2026-03-02" in b.find_element(By.ID, "lb-snapshot").text)
    fetched = page.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert sum("history.json.gz" in url for url in fetched) == 1
    page.execute_script("document.querySelector('a.lb-snapshot').hash = '#1999-01-01'")  # a day it lacks
    snapshots[0].click()
    WebDriverWait(page, 10).until(lambda b: "could not be loaded" in b.find_element(By.ID, "lb-snapshot").text)


def test_result_viewer_renders_a_result(page, site_url):
    page.get(leaderboard_url(site_url))
    wait_for(page, ".lb-table table")
    page.find_element(By.LINK_TEXT, "v1").click()  # the first row: bob
    heading = wait_for(page, "#result-view h2")[0]
    assert heading.text == "bob / v1"
    assert "Rank 1 of 4 ranked results" in page.find_element(By.ID, "result-view").text
    tables = page.find_elements(By.CSS_SELECTOR, "#result-view table")
    per_case = [t for t in tables if t.find_element(By.TAG_NAME, "th").text == "Case"]
    assert [len(t.find_elements(By.CSS_SELECTOR, "tbody tr")) for t in per_case] == [CASES, CASES]  # metrics, runner
    charts = page.find_elements(By.CSS_SELECTOR, "#result-view svg.chart")
    assert len(charts) >= 4 and all(c.find_elements(By.TAG_NAME, "circle") for c in charts)
    assert f"ghcr.io/bob/a@sha256:{'cd' * 32}" in page.find_element(By.ID, "result-view").text
    command = page.find_element(By.CSS_SELECTOR, "#result-view pre.result-run").text
    assert command == f"challenge run challenges/{CHALLENGE}/results/{PHASE}/bob/v1.json --input MY_CASES " \
                      "--output MY_OUTPUTS"


@pytest.mark.parametrize("width, height", SCREENS)
def test_a_result_page_fits_a_phone_and_a_desktop(page, site_url, width, height):
    with window_size(page, width, height):
        page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id=bob/v1")
        assert wait_for(page, "#result-view h2")[0].text == "bob / v1"
        assert fits_across(page, page.find_element(By.CSS_SELECTOR, "#result-view pre.result-run"))


def test_result_viewer_shows_a_failure(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id=erin/broken")
    status = wait_for(page, "#result-view .result-status")[0]
    assert status.text == "Failed: Algorithm failed: boom"


def test_result_viewer_shows_every_shape_of_metrics(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/results/shapes/view/?id=frank/v1")
    wait_for(page, "#result-view table", 3)
    tables = {t.find_element(By.TAG_NAME, "th").text: [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
                                                       for r in t.find_elements(By.CSS_SELECTOR, "tbody tr")]
              for t in page.find_elements(By.CSS_SELECTOR, "#result-view table")}
    assert [row[0] for row in tables["Metric"]] == ["auroc", "dice"]
    assert tables["Metric"][0][1] == "0.910"  # a plain number is its own row, no longer an empty one
    assert "0.800" in tables["Metric"][1] and "0.100" in tables["Metric"][1]  # liver.mean, liver.std
    assert tables["Case"] == [["dice", "0.700", "0.900"]]
    assert tables["Name"] == [["thresholds", "0.250, 0.500"], ["version", "kit 1.0"]]


def test_challenge_page_counts_down_to_the_next_deadline(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/")
    countdown = wait_for(page, ".phase-facts .countdown")[0]
    WebDriverWait(page, 10).until(lambda _: countdown.text)
    assert re.fullmatch(r"\((in \d+ (days?|hours?|minutes?)|\d+ (days?|hours?|minutes?) ago)\)", countdown.text)
