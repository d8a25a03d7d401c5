"""What participants write stays text on every page: failure lines, an evaluation's error quoting their
file, titles and descriptions with HTML, Markdown links and images, attr_list attributes, metric names.
Built by MkDocs and opened in headless Chromium with the network cut: no script of theirs runs, no
element of theirs appears, and no request leaves the site (the `page` fixture checks the last)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from runner.evaluation.examples import prepare_workspace
from runner.site import catalog, pages
from runner.site.build import SiteConfig, build_site
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, add_result, edit_yaml, phase_file, served, wait_for

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By

SCRIPT = "document.title='pwned'"
PAYLOADS = {
    "failure line": f"Algorithm failed: <img src=x onerror=\"{SCRIPT}\"><script>{SCRIPT}</script>",
    "csv header": f"Evaluation failed: column '<svg onload=\"{SCRIPT}\">' of predictions.csv is not a case",
    "title": f"<img src=x onerror=\"{SCRIPT}\"> **bold** [link](javascript:{SCRIPT})",
    "description": f"![tracker](http://evil.example/pixel.png) [x](javascript:{SCRIPT}) "
                   f"text{{: onclick=\"{SCRIPT}\" }}",
    "comment": f"<img src=x onerror=\"{SCRIPT}\"> [x](javascript:{SCRIPT})",
    "link": f"https://example.org/\"><svg/onload={SCRIPT}>",
    # The organizers' own Markdown, set in the challenge page: its raw HTML stays text, its links stay safe.
    "submission page": f"<div><img src=x onerror=\"{SCRIPT}\"><script>{SCRIPT}</script>\n\n[x](javascript:{SCRIPT})",
    # Titles the theme writes into <title> and the header: an organization's name (anyone may propose a
    # listing that names one) and a phase's title.
    "organization": f"Org</title><script>{SCRIPT}</script><img src=x onerror=\"{SCRIPT}\">",
    "phase title": f"Final </title><img src=x onerror=\"{SCRIPT}\">",
    "combined title": f"All </title><img src=x onerror=\"{SCRIPT}\">",  # a title from the navigation alone
    "score title": f"Dice <img src=x onerror=\"{SCRIPT}\">",  # in the sentence saying how the board ranks
}
ORGANIZATION = catalog.slugify(PAYLOADS["organization"])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("hostile-pages") / "repo")
    add_result(repo, "alice", "v1", 0.8, cases=[0.7, 0.8, 0.9])
    add_result(repo, "bob", "v1", None, status="failed", error=PAYLOADS["failure line"])
    add_result(repo, "carol", "v1", None, status="failed", error=PAYLOADS["csv header"])
    submission = repo / "challenges" / CHALLENGE / "submissions" / PHASE / "alice" / "v1.yml"
    edit_yaml(submission, title=PAYLOADS["title"], description=PAYLOADS["description"], comment=PAYLOADS["comment"],
              supplementary_url=PAYLOADS["link"])
    edit_yaml(phase_file(repo), allow_submission_comments=True, display_submission_comments=True,
              supplementary_url_choice="optional", show_supplementary_url=True,
              submission_page_markdown=PAYLOADS["submission page"], title=PAYLOADS["phase title"],
              score_title=PAYLOADS["score title"])
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", organizations=[{"name": PAYLOADS["organization"]}],
              combined_leaderboards=[{"slug": "all", "title": PAYLOADS["combined title"],
                                      "phases": [{"phase": PHASE}, {"phase": "new-scanner"}]}])
    path = repo / "challenges" / CHALLENGE / "results" / PHASE / "alice" / "v1.json"
    record = json.loads(path.read_text())  # a case named by what a participant's file held
    record["metrics"]["case"][f"<img src=x onerror=\"{SCRIPT}\">"] = {"dice": 0.5}
    path.write_text(json.dumps(record))
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    return build_site(config)


@pytest.fixture(scope="module")
def site_url(built) -> Iterator[str]:
    with served(built) as url:
        yield url


PAGES = {"leaderboard": f"{CHALLENGE}/leaderboard/{PHASE}/", "challenge": f"{CHALLENGE}/",
         "organization": f"organizations/{ORGANIZATION}/", "organizations": "organizations/",
         "combined leaderboard": f"{CHALLENGE}/leaderboard/all/",
         **{f"result of {p}": f"{CHALLENGE}/results/{PHASE}/view/?id={p}/v1" for p in ("alice", "bob", "carol")}}


@pytest.mark.parametrize("where", sorted(PAGES))
def test_participants_text_is_text_on_every_page(page, site_url, where):
    page.get(site_url + PAGES[where])
    if where.startswith("result"):
        wait_for(page, "#result-view h2")
    assert page.title != "pwned"
    assert page.find_elements(By.CSS_SELECTOR, "img[src='x'], svg[onload], [onclick], [onerror]") == []
    assert page.find_elements(By.CSS_SELECTOR, "a[href^='javascript'], img[src*='evil.example']") == []
    text = page.find_element(By.TAG_NAME, "body").text
    if where == "leaderboard":  # each payload shows as the text it is
        assert PAYLOADS["failure line"] in text and PAYLOADS["csv header"] in text
        assert PAYLOADS["title"] in text
    if where == "result of alice":
        assert PAYLOADS["title"] in text and PAYLOADS["description"] in text and PAYLOADS["comment"] in text
        link = page.find_element(By.LINK_TEXT, "Publication")
        assert unquote(link.get_attribute("href")) == PAYLOADS["link"]  # an address, as the browser encodes it
    if where == "organization":  # the name, as text, in the tab's title and the page's header
        assert PAYLOADS["organization"] in page.title and PAYLOADS["organization"] in text
    if where == "leaderboard":
        assert PAYLOADS["phase title"] in page.title and f"ordered on {PAYLOADS['score title']}" in text
    if where == "combined leaderboard":
        assert PAYLOADS["combined title"] in page.title
    if where == "challenge":
        assert f"<div><img src=x onerror=\"{SCRIPT}\"><script>{SCRIPT}</script>" in text
        assert f"How to submit to {PAYLOADS['phase title']}" in text  # the page goes on whole after it


def test_no_file_of_the_built_site_holds_a_live_payload(built):
    """Every page and feed, as files: a payload appears only escaped, so neither a browser nor a feed
    reader meets markup a participant wrote."""
    files = [p for p in built.rglob("*") if p.suffix in (".html", ".xml")]
    assert files
    for path in files:
        text = path.read_text(errors="replace")
        assert "<img src=x" not in text and "<svg onload" not in text and "<script>document" not in text, path
