"""The catalog of 300 challenges in headless Chromium with the network cut: facets narrow the cards
and count each other's values, the search reads the challenges' own pages, the cards sort by
deadline, and the URL holds the view through a reload and the back button.

The site is built by MkDocs from generated challenge folders (a fifth of them listed from other
platforms), in about half a minute on two cores. The browser fixtures (network cut, no request
leaving the site, no script error) are test_browser.py's.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from collections.abc import Iterator

import pytest

from runner.evaluation.examples import prepare_workspace
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from runner.tree.store import Store
from tests.helpers import REPO, SCREENS, served, wait_for, window_size
from tests.site.test_catalog import write_catalog

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

# The harness's browser: the network cut; afterwards no request left the site and no script failed.
COUNT = 300
SECRET_PAGE = 123  # the one challenge whose own FAQ page says the word searched for
WORD = "quokkalith"
VISIBLE = "return [...document.querySelectorAll('.catalog-card')].filter(c => c.offsetParent !== null)" \
          ".map(c => c.dataset.slug)"
COUNTS = "return Object.fromEntries([...document.querySelectorAll('fieldset[data-facet=\"' + arguments[0] + '\"] " \
         ".catalog-n')].map(n => [n.dataset.count, Number(n.textContent)]))"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Iterator[tuple[str, list[dict]]]:
    """(the site's URL, each generated challenge as exported to catalog.json plus its type)."""
    started = time.monotonic()
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("catalog") / "repo")
    for folder in (repo / "challenges").iterdir():
        if (folder / "challenge.yml").is_file():
            shutil.rmtree(folder)
    today = dt.datetime.now(dt.UTC).date()
    written = write_catalog(repo, COUNT, today)
    (repo / "challenges" / f"challenge-{SECRET_PAGE:03d}" / "faq.md").write_text(
        f"# FAQ\n\nThe phantom is made of *{WORD.capitalize()}*, a mineral of our own.\n")
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    site = build_site(config)
    exported = json.loads((site / "catalog.json").read_text())
    challenges = [{**e, "type": data["type"]} for e, data in zip(exported, written, strict=True)]
    elapsed = time.monotonic() - started
    assert elapsed < 90, f"generating and building {COUNT} challenges took {elapsed:.0f} s"
    with served(site) as url:
        yield url, challenges


@pytest.fixture(scope="module")
def site_url(built) -> str:
    return built[0]


@pytest.fixture
def challenges(built) -> list[dict]:
    return built[1]


def open_catalog(page, url: str) -> None:
    page.get(url)
    wait_for(page, ".catalog-app[data-ready]")


def visible(page) -> list[str]:
    return page.execute_script(VISIBLE)


def counts(page, facet: str) -> dict[str, int]:
    return page.execute_script(COUNTS, facet)


def tick(page, facet: str, value: str) -> None:
    page.find_element(By.CSS_SELECTOR, f'input[name="{facet}"][value="{value}"]').click()


def count_text(page) -> str:
    return page.find_element(By.ID, "catalog-count").text


def by_deadline(chosen: list[dict], today: dt.date) -> list[str]:
    """Open deadlines soonest first, then the ended, latest first; equal ones by name."""
    def key(c: dict) -> tuple:
        end = dt.date.fromisoformat(c["end_date"])
        return (0, end.toordinal()) if end >= today else (2, -end.toordinal()), c["name"].casefold()
    return [c["slug"] for c in sorted(chosen, key=key)]


def test_facets_narrow_the_cards_and_count_each_other(page, site_url, challenges):
    open_catalog(page, site_url)
    assert count_text(page) == f"{COUNT} challenges" and len(visible(page)) == COUNT
    tick(page, "status", "active")
    tick(page, "incentive", "monetary")
    tick(page, "platform", "self-hosted")
    def kept(c: dict, *, but: str = "") -> bool:
        return ((but == "status" or c["status"] == "active") and (but == "incentive" or "monetary" in c["incentives"])
                and (but == "platform" or c["platform"] == "self-hosted"))
    expected = [c["slug"] for c in challenges if kept(c)]
    assert sorted(visible(page)) == sorted(expected) and len(expected) > 10
    assert count_text(page) == f"{len(expected)} of {COUNT} challenges"
    # A facet counts the cards that every other filter keeps, value by value.
    for facet, values in (("status", lambda c: [c["status"]]), ("incentive", lambda c: c["incentives"]),
                          ("platform", lambda c: [c["platform"]]), ("type", lambda c: [str(c["type"])])):
        wanted: dict[str, int] = {}
        for c in challenges:
            if kept(c, but=facet):
                for value in values(c):
                    wanted[value] = wanted.get(value, 0) + 1
        shown = counts(page, facet)
        assert {v: n for v, n in shown.items() if n} == wanted, facet
    assert counts(page, "platform")["kaggle"] == 0  # listed, greyed out
    tick(page, "type", "2")  # another facet narrows further
    assert sorted(visible(page)) == sorted(c["slug"] for c in challenges if kept(c) and c["type"] == 2)


def test_the_card_reads_like_openchallenges(page, site_url, challenges):
    open_catalog(page, site_url)
    card = page.find_element(By.CSS_SELECTOR, '.catalog-card[data-slug="challenge-003"]')
    assert card.find_element(By.CSS_SELECTOR, ".catalog-status-label").text == "Active"
    assert card.find_element(By.CSS_SELECTOR, ".catalog-time").text == "Ends in 4 days"
    assert card.find_element(By.CSS_SELECTOR, ".catalog-incentives").text == "Monetary, Speaking engagement"
    assert card.find_element(By.CSS_SELECTOR, ".catalog-headline").text == "Headline of benchmark 3"
    external = page.find_element(By.CSS_SELECTOR, '.catalog-card[data-slug="challenge-004"]')
    assert external.find_element(By.TAG_NAME, "a").get_attribute("href") == "https://example.org/c/4"
    assert external.find_element(By.CSS_SELECTOR, ".catalog-platform").text == "Kaggle"
    assert page.find_element(By.CSS_SELECTOR, '.catalog-card[data-slug="challenge-000"] .catalog-incentives'
                             ).text == "No incentives listed"


def test_search_finds_a_word_of_a_challenge_page(page, site_url):
    open_catalog(page, site_url)
    page.find_element(By.ID, "catalog-search").send_keys(WORD.upper())
    WebDriverWait(page, 10).until(lambda p: count_text(p) == f"1 of {COUNT} challenges")
    assert visible(page) == [f"challenge-{SECRET_PAGE:03d}"]
    WebDriverWait(page, 5).until(lambda p: f"search={WORD.upper()}" in p.current_url)
    # A link with those words opens the catalog so searched, and never the theme's own search over it
    # (which `q=` opens).
    open_catalog(page, f"{site_url}?search={WORD}")
    WebDriverWait(page, 10).until(lambda p: visible(p) == [f"challenge-{SECRET_PAGE:03d}"])
    assert not page.execute_script("return document.querySelector('[data-md-toggle=search]').checked")


def test_cards_sort_by_deadline_start_and_name(page, site_url, challenges):
    today = dt.datetime.now(dt.UTC).date()
    open_catalog(page, f"{site_url}?status=active,completed&sort=name")
    chosen = [c for c in challenges if c["status"] in ("active", "completed")]
    assert visible(page) == [c["slug"] for c in sorted(chosen, key=lambda c: c["name"].casefold())]
    Select(page.find_element(By.ID, "catalog-sort")).select_by_value("deadline")
    assert visible(page) == by_deadline(chosen, today)
    Select(page.find_element(By.ID, "catalog-sort")).select_by_value("start")
    newest = sorted(chosen, key=lambda c: (-dt.date.fromisoformat(c["start_date"]).toordinal(), c["name"].casefold()))
    assert visible(page) == [c["slug"] for c in newest]


def test_the_url_keeps_the_view_through_reload_and_back(page, site_url, challenges):
    open_catalog(page, site_url)
    tick(page, "status", "completed")
    first = visible(page)
    tick(page, "org", "zuse-institute")
    Select(page.find_element(By.ID, "catalog-sort")).select_by_value("start")
    view = visible(page)
    assert 0 < len(view) < len(first)
    url = page.current_url
    assert "status=completed" in url and "org=zuse-institute" in url and "sort=start" in url
    page.refresh()
    wait_for(page, ".catalog-app[data-ready]")
    assert visible(page) == view and page.current_url == url
    assert page.find_element(By.CSS_SELECTOR, 'input[name="org"][value="zuse-institute"]').is_selected()
    assert Select(page.find_element(By.ID, "catalog-sort")).first_selected_option.get_attribute("value") == "start"
    page.back()  # before the sort
    WebDriverWait(page, 5).until(lambda p: "sort=start" not in p.current_url)
    assert sorted(visible(page)) == sorted(view) and visible(page) != view
    page.back()  # before the organization
    WebDriverWait(page, 5).until(lambda p: "org=" not in p.current_url)
    assert visible(page) == first
    assert not page.find_element(By.CSS_SELECTOR, 'input[name="org"][value="zuse-institute"]').is_selected()
    page.forward()
    WebDriverWait(page, 5).until(lambda p: "org=zuse-institute" in p.current_url)
    assert sorted(visible(page)) == sorted(view)
    open_catalog(page, url)  # a shared link opens the same view
    assert visible(page) == view


def test_on_a_phone_the_filters_fold_into_one_control_and_the_first_card_shows(page, site_url, challenges):
    with window_size(page, *SCREENS[0]):  # a phone
        open_catalog(page, site_url)
        first = page.find_element(By.CSS_SELECTOR, ".catalog-card")
        viewport = page.execute_script("return window.innerHeight")
        assert first.rect["y"] + 40 < viewport  # its status and title show without scrolling
        facets = page.find_element(By.ID, "catalog-facets")
        toggle = page.find_element(By.ID, "catalog-filters-toggle")
        assert not facets.is_displayed() and toggle.text == "Filters"
        toggle.click()
        assert facets.is_displayed() and toggle.get_attribute("aria-expanded") == "true"
        tick(page, "status", "active")
        assert toggle.text == "Filters (1)"
        assert sorted(visible(page)) == sorted(c["slug"] for c in challenges if c["status"] == "active")
        toggle.click()
        assert not facets.is_displayed()
