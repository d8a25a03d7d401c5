"""The result viewer of a phase that bundles its results per participant, in headless Chromium."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from runner.evaluation.examples import prepare_workspace
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from tests.helpers import CHALLENGE, PHASE, REPO, add_result, commit, served, wait_for
from tests.site.test_scale import generate


@pytest.fixture(scope="module")
def site_url(tmp_path_factory) -> Iterator[str]:
    """A site whose phase bundles its results, served on 127.0.0.1."""
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("bundled") / "repo")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    for participant, dice in (("alice", 0.7), ("bob", 0.8)):
        add_result(repo, participant, "v1", dice, cases=[dice, dice - 0.1, dice + 0.1])
    commit(repo, "2026-03-01T10:00:00Z")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pages, "BUNDLE_OVER", 0)
        generate(repo)
    site = build_site(SiteConfig.read(repo))
    with served(site) as url:
        yield url


def test_the_viewer_reads_a_bundled_result(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id=bob/v1")
    assert wait_for(page, "#result-view h2")[0].text == "bob / v1"
    assert "Rank 1 of 2 ranked results" in page.find_element(By.ID, "result-view").text
    page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id=bob/v9")
    wait_for(page, "#result-view")
    WebDriverWait(page, 10).until(lambda b: "No result bob/v9" in b.find_element(By.ID, "result-view").text)
