"""Submitting from the browser, in headless Chromium with the network cut: an open phase's button opens
GitHub's editor at the reader's own folder with the submission file filled in; a phase that takes no
submissions has none."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from runner.evaluation.examples import prepare_workspace
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By

from tests.helpers import SCREENS, fits_across, served, wait_for, window_size

GITHUB = "https://github.com/example-org/challenges"


@pytest.fixture(scope="module")
def site_url(tmp_path_factory) -> Iterator[str]:
    """The example challenges with mkdocs.yml's extra.repository set (the challenge's new-scanner phase takes no
    submissions: its limit is 0)."""
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("submit") / "repo")
    config_file = repo / "mkdocs.yml"
    config_file.write_text(config_file.read_text() + f"extra:\n  repository: {GITHUB}\n")
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    with served(build_site(config)) as url:
        yield url


def test_an_open_phase_opens_githubs_editor_at_the_readers_folder(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/")
    forms = wait_for(page, ".submit-form[data-ready]")
    assert len(forms) == 1  # final-test is open; new-scanner takes none
    button = forms[0].find_element(By.CSS_SELECTOR, ".submit-button")
    assert button.get_attribute("href") is None and button.get_attribute("aria-disabled") == "true"
    field = forms[0].find_element(By.CSS_SELECTOR, ".submit-login")
    field.send_keys("../../x")  # not a login: no address
    assert button.get_attribute("href") is None
    field.clear()
    field.send_keys("vision_lab.2")  # a team's name may hold what no login does
    assert "/vision_lab.2?" in button.get_attribute("href")
    field.clear()
    field.send_keys("alice-lab")
    address = urlsplit(button.get_attribute("href"))
    assert f"{address.scheme}://{address.netloc}" == "https://github.com"
    assert unquote(address.path) == (f"/example-org/challenges/new/main/challenges/{CHALLENGE}/submissions/{PHASE}/"
                                     "alice-lab")
    query = parse_qs(address.query)
    assert query["filename"] == ["v1.yml"]
    assert query["value"][0].startswith(f"phase: {PHASE}")  # the example file, as the box shows it
    assert button.get_attribute("aria-disabled") == "false"


def test_an_open_phase_links_the_submission_issue_form_with_its_challenge_and_phase(page, site_url):
    """The form's fields are answered from the query by their ids (.github/ISSUE_TEMPLATE/submission.yml)."""
    page.get(f"{site_url}{CHALLENGE}/")
    links = wait_for(page, "a.submit-issue-form")
    assert len(links) == 1  # final-test only: new-scanner takes no submissions
    address = urlsplit(links[0].get_attribute("href"))
    assert f"{address.scheme}://{address.netloc}{address.path}" == f"{GITHUB}/issues/new"
    assert parse_qs(address.query) == {"template": ["submission.yml"], "challenge": [CHALLENGE], "phase": [PHASE]}
    page.get(f"{site_url}lung-cancer-prediction/")  # a predictions phase: the form cannot carry its file
    wait_for(page, "h2#phases")
    assert not page.find_elements(By.CSS_SELECTOR, "a.submit-issue-form")


@pytest.mark.parametrize("width, height", SCREENS)
def test_the_submit_controls_fit_a_phone_and_a_desktop(page, site_url, width, height):
    with window_size(page, width, height):
        page.get(f"{site_url}{CHALLENGE}/")
        form = wait_for(page, ".submit-form[data-ready]")[0]
        assert fits_across(page, form.find_element(By.CSS_SELECTOR, ".submit-login"),
                           form.find_element(By.CSS_SELECTOR, ".submit-button"),
                           page.find_element(By.CSS_SELECTOR, "a.submit-issue-form"))
