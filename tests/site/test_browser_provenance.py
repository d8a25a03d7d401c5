"""Signed results in headless Chromium, network cut: each leaderboard row says it verified, with its data
manifest and evaluation; a result page shows its provenance; an edited result is named and left out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runner.evaluation.examples import prepare_workspace
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from runner.tree.signing import new_key, signers_line
from runner.tree.store import Store
from runner.tree.verification import Verifier, signers_path
from tests.helpers import CHALLENGE, PHASE, REPO, add_signed_result

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By

from tests.helpers import served, wait_for


@pytest.fixture(scope="module")
def site_url(tmp_path_factory) -> Iterator[str]:
    """alice's and bob's results signed by gpu-1; bob's score then edited by hand."""
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("provenance") / "repo")
    key = new_key()
    signers_path(repo).write_text(signers_line("gpu-1", key) + "\n")
    store = Store(repo, signer=key)
    add_signed_result(repo, store, "alice", 0.91)
    bob = add_signed_result(repo, store, "bob", 0.84)
    bob.write_text(bob.read_text().replace("0.84", "0.99"))
    config = SiteConfig.read(repo)
    pages.generate(Store(repo, verifier=Verifier.of(repo)), config.stage, config.templates, config.assets)
    with served(build_site(config)) as url:
        yield url


def test_rows_show_their_verification_and_an_edited_result_is_named(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/leaderboard/{PHASE}/")
    table = wait_for(page, ".lb-table table")[0]
    header = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in table.find_elements(By.CSS_SELECTOR,
                                                                                                    "tbody tr")]
    assert [row[header.index("Participant")] for row in rows] == ["alice"]
    assert rows[0][header.index("Provenance")] == "✓ verified · data dddddddddddd · eval cccccccccccc"
    left_out = page.find_element(By.CSS_SELECTOR, ".admonition.failure").text
    assert "Results left out: they do not verify" in left_out and "bob/v1: the signature does not match" in left_out


def test_a_result_page_shows_its_provenance(page, site_url):
    page.get(f"{site_url}{CHALLENGE}/results/{PHASE}/view/?id=alice/v1")
    verdict = wait_for(page, ".result-verification")[0]
    assert verdict.text == "Verified: signed by the runner gpu-1, and its provenance matches the repository."
    cells = {tr.find_elements(By.TAG_NAME, "td")[0].text: tr.find_elements(By.TAG_NAME, "td")[1].text
             for tr in page.find_elements(By.CSS_SELECTOR, ".result-provenance tr")}
    assert cells["Data manifest"] == "sha256:" + "d" * 64
    assert cells["Evaluation build context"] == "sha256:" + "c" * 64
    assert cells["Hidden data: ground-truth"] == "sha256:" + "d" * 64
    assert cells["Algorithm"] == "ghcr.io/alice/a@sha256:" + "a" * 64
