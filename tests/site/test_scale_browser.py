"""A large phase in headless Chromium: the result viewer finds each result in its gzipped shard (the
hash computed in the browser as in Python), and a long leaderboard draws all its rows on request."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from runner.evaluation.examples import prepare_workspace
from runner.site import datafiles, pages
from runner.site.build import SiteConfig, build_site
from tests.helpers import CHALLENGE, PHASE, REPO, add_result, commit, served, wait_for
from tests.site.test_scale import generate

TEAMS = [f"team-{n}" for n in range(6)]


@pytest.fixture(scope="module")
def site_url(tmp_path_factory) -> Iterator[str]:
    """A site whose phase keeps its six results in eight shards (one large one alone) and draws two rows a
    table, on 127.0.0.1."""
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("sharded") / "repo")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    for n, participant in enumerate(TEAMS):
        dice = 0.9 - n / 10
        add_result(repo, participant, "v1", dice, cases=[dice, dice - 0.05, dice + 0.05] * (100 if n == 2 else 1))
    commit(repo, "2026-03-01T10:00:00Z")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datafiles, "SHARD_OVER", 0)
        patch.setattr(datafiles, "SHARD_SIZE", 1)
        patch.setattr(pages, "PAGE_ROWS", 2)
        patch.setattr(datafiles, "ALONE_OVER", 4000)  # team-2's 300 per-case values: in a file of its own
        generate(repo)
    site = build_site(SiteConfig.read(repo))
    assert len(list((site / CHALLENGE / "results" / PHASE / "shards").glob("*.json.gz"))) == 8
    assert (site / CHALLENGE / "results" / PHASE / "team-2" / "v1.json").is_file()
    assert (site / CHALLENGE / "leaderboard" / PHASE / "leaderboard.json.gz").is_file()  # what "Show all" reads
    with served(site) as url:
        yield url


def test_the_viewer_reads_each_result_from_its_shard(page, site_url):
    for n, team in enumerate(TEAMS):  # six keys over eight shards: a hash that differed would miss some
        page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id={team}/v1")
        assert wait_for(page, "#result-view h2")[0].text == f"{team} / v1"
        assert f"Rank {n + 1} of 6 ranked results" in page.find_element(By.ID, "result-view").text
    page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id=team-0/v9")
    wait_for(page, "#result-view")
    WebDriverWait(page, 10).until(lambda b: "No result team-0/v9" in b.find_element(By.ID, "result-view").text)


def test_a_long_leaderboard_draws_all_its_rows_on_request(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/leaderboard/{PHASE}/")
    assert len(wait_for(page, ".lb-table table tbody tr", 2)) == 2
    assert "The first 2 of 6 rows." in page.find_element(By.CSS_SELECTOR, ".lb-more").text
    page.find_element(By.CSS_SELECTOR, "button.lb-all").click()
    rows = wait_for(page, ".lb-table table tbody tr", 6)
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == TEAMS
    assert not page.find_elements(By.CSS_SELECTOR, ".lb-more")
    page.find_element(By.CSS_SELECTOR, ".lb-table thead th").click()  # the whole table sorts: rank, ascending
    page.find_element(By.CSS_SELECTOR, ".lb-table thead th").click()
    assert page.find_elements(By.CSS_SELECTOR, ".lb-table tbody tr td")[1].text == TEAMS[-1]
