"""The leaderboard and the result viewer in headless Chromium, network cut: a submission's title, links
and supplementary PDF, and a result the organizers excluded, listed apart with its reason."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator

import pytest

from runner.evaluation.examples import prepare_workspace
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, add_result, commit, edit_yaml, phase_file

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By

from tests.helpers import served, wait_for

PDF = b"%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n"
PAPER, CODE = "https://arxiv.org/abs/2401.00001", "https://github.com/alice/unet"
REASON = "Trained on the test set (rule 4)"


@pytest.fixture(scope="module")
def site_url(tmp_path_factory) -> Iterator[str]:
    """A site where alice describes her submission, with a PDF, and carol's result is excluded."""
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("details") / "repo")
    for folder in (repo / "challenges").iterdir():
        if folder.is_dir() and folder.name != CHALLENGE:
            shutil.rmtree(folder)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    edit_yaml(phase_file(repo), supplementary_file_choice="optional", supplementary_file_label="Method paper")
    for participant, dice in (("alice", 0.8), ("bob", 0.7), ("carol", 0.95)):
        add_result(repo, participant, "v1", dice)
    folder = repo / "challenges" / CHALLENGE / "submissions" / PHASE / "alice"
    (folder / "method.pdf").write_bytes(PDF)
    edit_yaml(folder / "v1.yml", title="U-Net, 5 folds", description="Five folds, averaged.",
              publication_url=PAPER, code_url=CODE,
              supplementary={"file": "method.pdf", "sha256": hashlib.sha256(PDF).hexdigest()})
    exclusions = repo / "challenges" / CHALLENGE / "exclusions" / f"{PHASE}.yml"
    exclusions.parent.mkdir()
    exclusions.write_text(f"- result: carol/v1\n  reason: {REASON}\n")
    commit(repo, "2026-03-01T10:00:00Z")
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    site = build_site(config)
    with served(site) as url:
        yield url


def test_the_leaderboard_shows_titles_and_links_and_lists_exclusions_apart(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/leaderboard/{PHASE}/")
    tables = wait_for(page, ".lb-table table", 1)
    ranked = [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
              for r in tables[0].find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert [(row[0], row[1]) for row in ranked] == [("1", "alice"), ("2", "bob")]  # carol ranks nowhere
    assert ranked[0][2] == "v1 — U-Net, 5 folds · paper · code · Method paper"
    links = {a.text: a.get_attribute("href") for a in tables[0].find_elements(By.TAG_NAME, "a")}
    assert links["paper"] == PAPER and links["code"] == CODE
    with urllib.request.urlopen(links["Method paper"]) as answer:  # the PDF, served by the site itself
        assert answer.read() == PDF
    excluded = page.find_element(By.CSS_SELECTOR, ".lb-excluded table")
    cells = [c.text for c in excluded.find_elements(By.CSS_SELECTOR, "tbody td")]
    assert cells[:3] == ["carol", "v1", REASON]


def test_the_result_viewer_shows_the_submissions_details(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id=alice/v1")
    assert wait_for(page, "#result-view .result-title")[0].text == "U-Net, 5 folds"
    assert page.find_element(By.CSS_SELECTOR, "#result-view .result-description").text == "Five folds, averaged."
    found = page.find_elements(By.CSS_SELECTOR, "#result-view .result-links a")
    links = {a.text: a.get_attribute("href") for a in found}
    assert links["Paper"] == PAPER and links["Code"] == CODE
    assert links["Method paper"].endswith(f"/{CHALLENGE}/results/{PHASE}/alice/v1.supplementary.pdf")
    assert "Rank 1 of 2 ranked results" in page.find_element(By.ID, "result-view").text


def test_the_result_viewer_says_a_result_was_excluded_and_why(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id=carol/v1")
    note = wait_for(page, "#result-view .result-excluded")[0]
    assert note.text == f"Excluded from the ranking by the organizers: {REASON}"
    assert "Standing in this phase" not in page.find_element(By.ID, "result-view").text
