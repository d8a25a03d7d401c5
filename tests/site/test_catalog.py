"""The catalog as generated: facets and their counts, cards, challenges listed from elsewhere,
organization pages, the Atom feeds, the search words and the JSON-LD of each challenge's page."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from runner.cli import main
from runner.site import catalog, pages
from runner.site.build import SiteConfig, build_site
from runner.tree.check import check
from runner.tree.located import ModelError
from runner.tree.model import Challenge
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, add_result, edit_yaml, phase_file

TODAY = dt.date(2026, 6, 1)
NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
A = "{http://www.w3.org/2005/Atom}"
ORGS = ["Sage Bionetworks", "Radboud UMC", "DKFZ", "Kitware", "Université de Montréal", "Zuse Institute"]
PLATFORMS = ["kaggle", "grand-challenge", "codalab", "synapse"]


def challenge_data(i: int, today: dt.date) -> dict:
    """The i-th generated challenge: active, upcoming or completed by i % 3, an external one every fifth;
    dates vary so that sorting by name, deadline and start give different orders."""
    if i % 3 == 0:
        start, end = today - dt.timedelta(days=i % 50 + 1), today + dt.timedelta(days=i % 40 + 1)
    elif i % 3 == 1:
        start = today + dt.timedelta(days=i % 30 + 1)
        end = start + dt.timedelta(days=60)
    else:
        start, end = today - dt.timedelta(days=400 + i * 37 % 365), today - dt.timedelta(days=i * 13 % 300 + 1)
    data = {"name": f"Benchmark {i:03d}", "headline": f"Headline of benchmark {i}", "start_date": start,
            "end_date": end, "type": i % 4,
            "incentives": [[], ["monetary"], ["publication"], ["monetary", "speaking_engagement"]][i % 4],
            "submission_types": [["container_image"], ["prediction_file"], ["container_image", "notebook"]][i % 3],
            "input_data_types": [["3D image"], ["2D image"], ["text"], ["tabular data", "3D image"]][i % 4],
            "operation": ["image segmentation", "classification", "detection"][i % 3],
            "tags": ["bench", f"tag{i % 7}"],
            "organizations": [{"name": ORGS[i % len(ORGS)], "role": "challenge_organizer"}]
            + ([{"name": ORGS[(i + 3) % len(ORGS)], "role": "sponsor"}] if i % 2 else [])}
    if i % 5 == 4:
        data |= {"platform": PLATFORMS[i % 4], "website_url": f"https://example.org/c/{i}"}
    return data


def write_catalog(repo: Path, count: int, today: dt.date) -> list[dict]:
    """`count` challenges beside the example one: folders with a challenge.yml and a page, or, for
    those hosted elsewhere, a challenge.yml alone. Returns their data by index."""
    written = []
    for i in range(count):
        data = challenge_data(i, today)
        folder = repo / "challenges" / f"challenge-{i:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        if "website_url" not in data:
            (folder / "index.md").write_text(f"# Benchmark {i:03d}\n\nWords about benchmark number {i}.\n")
        (folder / "challenge.yml").write_text(yaml.safe_dump(data, sort_keys=False))
        written.append(data)
    return written


def stage_of(repo: Path, **kwargs) -> Path:
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets, **kwargs)
    return config.stage


def facet_counts(home: str) -> dict[str, dict[str, int]]:
    """Facet -> value -> count, as the home page's facet panel renders them."""
    found: dict[str, dict[str, int]] = {}
    for key, body in re.findall(r'<fieldset class="catalog-facet" data-facet="([^"]+)">(.*?)</fieldset>', home, re.S):
        found[key] = {html.unescape(v): int(n) for v, n in re.findall(r'data-count="([^"]+)">(\d+)<', body)}
    return found


def cards(home: str) -> dict[str, str]:
    """slug -> the card's HTML."""
    return dict(re.findall(r'<article class="catalog-card" data-slug="([^"]+)"(.*?)</article>', home, re.S))


@pytest.fixture
def catalog_repo(repo) -> Path:
    """The repository's site with 12 generated challenges in place of its own."""
    for folder in (repo / "challenges").iterdir():
        if (folder / "challenge.yml").is_file():
            shutil.rmtree(folder)
    write_catalog(repo, 12, TODAY)
    return repo


def test_facets_count_every_value_in_openchallenges_words(catalog_repo):
    home = (stage_of(catalog_repo, now=NOW) / "index.md").read_text()
    counts = facet_counts(home)
    assert list(counts) == ["status", "type", "submission", "incentive", "input", "operation", "platform", "org",
                            "year"]
    # Each i % 3 is active, upcoming, completed; i % 4 gives type, incentives and input data types.
    assert counts["status"] == {"upcoming": 4, "active": 4, "completed": 4}
    assert counts["type"] == {"0": 3, "1": 3, "2": 3, "3": 3}
    assert counts["incentive"] == {"monetary": 6, "publication": 3, "speaking_engagement": 3}
    assert counts["submission"] == {"container_image": 8, "prediction_file": 4, "notebook": 4}
    assert counts["input"] == {"3d-image": 6, "2d-image": 3, "text": 3, "tabular-data": 3}
    assert counts["platform"] == {"self-hosted": 10, "kaggle": 1, "grand-challenge": 1}  # i = 4, 9
    assert counts["org"]["universite-de-montreal"] == 4  # organizer of 4 and 10, sponsor of 1 and 7
    assert "Université de Montréal" in home and "Speaking engagement" in home and "2 · inference algorithms" in home
    assert list(counts["year"]) == sorted(counts["year"], reverse=True)
    assert sum(counts["year"].values()) == 12


def test_card_shows_status_time_line_headline_incentives_and_platform(catalog_repo):
    found = cards((stage_of(catalog_repo, now=NOW) / "index.md").read_text())
    active, upcoming, done = found["challenge-000"], found["challenge-001"], found["challenge-002"]
    assert 'status-active"><span class="dot"' in active and ">Active<" in active and "Ends in 1 day<" in active
    assert "Starts in 2 days<" in upcoming and "Ended 27 days ago<" in done
    assert "Headline of benchmark 0" in active and "No incentives listed" in active and "Hosted here" in active
    assert "Monetary, Speaking engagement" in found["challenge-003"]
    external = found["challenge-004"]  # hosted on Kaggle: links out
    assert 'href="https://example.org/c/4" rel="noopener"' in external and "Kaggle" in external
    assert '<a href="challenge-000/">' in active
    facets = json.loads(html.unescape(re.search(r'data-facets="([^"]+)"', active)[1]))
    assert facets["status"] == ["active"] and facets["year"] == ["2026"] and facets["org"] == ["sage-bionetworks"]


@pytest.mark.parametrize(("days", "status", "expected"), [
    (0, "active", "Ends today"), (12, "active", "Ends in 12 days"), (-1, "completed", "Ended 1 day ago"),
    (-75, "completed", "Ended 2 months ago"), (-800, "completed", "Ended 2 years ago"),
])
def test_time_line_speaks_like_openchallenges(days, status, expected):
    dated = Challenge(name="Dated", headline="h", start_date=TODAY - dt.timedelta(days=1000),
                      end_date=TODAY + dt.timedelta(days=days))
    assert catalog.time_line(dated, status, TODAY) == expected
    assert catalog.time_line(replace(dated, start_date=TODAY + dt.timedelta(days=3)), "upcoming",
                             TODAY) == "Starts in 3 days"


def test_a_challenge_hosted_elsewhere_is_a_short_entry_that_passes_check(repo):
    folder = repo / "challenges" / "kidney-kaggle"
    folder.mkdir()
    (folder / "challenge.yml").write_text(
        "name: Kidney Stones on Kaggle\nheadline: Find kidney stones in CT\nplatform: kaggle\n"
        "website_url: https://www.kaggle.com/competitions/kidney\nstart_date: 2026-01-01\nend_date: 2026-12-31\n"
        "incentives: [monetary]\nsubmission_types: [notebook]\n")
    assert check(Store(repo)).ok
    stage = stage_of(repo, now=NOW)
    card = cards((stage / "index.md").read_text())["kidney-kaggle"]
    assert 'href="https://www.kaggle.com/competitions/kidney"' in card and "Kaggle" in card
    assert not (stage / "kidney-kaggle").exists()  # no page here: the catalog links out
    nav = json.loads((stage / ".nav.json").read_text())
    assert not [n for n in nav if isinstance(n, dict) and "Kidney Stones on Kaggle" in n]
    exported = {e["slug"]: e for e in json.loads((stage / "catalog.json").read_text())}
    assert exported["kidney-kaggle"]["platform"] == "kaggle" and exported["kidney-kaggle"]["status"] == "active"


def test_an_entry_from_elsewhere_needs_a_link_and_takes_no_phases(repo):
    folder = repo / "challenges" / "elsewhere"
    folder.mkdir()
    path = folder / "challenge.yml"
    path.write_text("name: Elsewhere\nheadline: Hosted on CodaLab\nplatform: codalab\n")
    [problem] = check(Store(repo)).problems
    assert str(problem).endswith("challenge.yml:1: website_url: a challenge hosted elsewhere (platform: codalab) "
                                 "needs the address the catalog links to")
    path.write_text("name: Elsewhere\nheadline: Hosted on CodaLab\nplatform: codalab\nwebsite_url: javascript:x\n")
    [problem] = check(Store(repo)).problems
    assert "website_url" in str(problem) and "is not a web address" in str(problem)
    path.unlink()
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", platform="codalab",
              website_url="https://codalab.example/c/1")
    [problem] = check(Store(repo)).problems  # the example challenge has phases
    assert re.search(r"ellipsoid-segmentation/challenge.yml:\d+: platform: a challenge hosted on codalab takes no "
                     r"submissions here: remove its phases/, or set platform: self-hosted$", str(problem))


def test_a_challenge_may_not_take_a_folder_of_the_site(repo):
    folder = repo / "challenges" / "organizations"
    folder.mkdir()
    (folder / "challenge.yml").write_text("name: Clash\nheadline: Takes the site's folder\n")
    with pytest.raises(ModelError, match="folder name 'organizations' is taken by the site's own pages"):
        Store(repo).challenge("organizations")


def test_organization_pages_list_challenges_with_their_roles(catalog_repo):
    stage = stage_of(catalog_repo, now=NOW)
    page = (stage / "organizations" / "universite-de-montreal.md").read_text()
    rows = [r for r in page.splitlines() if r.startswith("| [")]
    assert [r.split("|")[1:3] for r in rows] == [
        [" [Benchmark 001](../challenge-001/index.md) ", " Sponsor "],
        [" [Benchmark 004](https://example.org/c/4) ", " Challenge organizer "],
        [" [Benchmark 007](../challenge-007/index.md) ", " Sponsor "],
        [" [Benchmark 010](../challenge-010/index.md) ", " Challenge organizer "]]
    index = (stage / "organizations" / "index.md").read_text()
    assert "| [Université de Montréal](universite-de-montreal.md) | 4 |" in index
    nav = json.loads((stage / ".nav.json").read_text())
    assert "organizations/index.md" in nav


def parse_feed(path: Path) -> ET.Element:
    """The feed, checked for what Atom 1.0 (RFC 4287) requires of a feed and of each entry."""
    feed = ET.fromstring(path.read_bytes())
    assert feed.tag == f"{A}feed"
    for name in ("id", "title", "updated"):
        assert len(feed.findall(f"{A}{name}")) == 1, name
    assert feed.find(f"{A}author/{A}name").text
    assert feed.find(f"{A}link[@rel='self']").get("href").endswith(path.name)
    for entry in feed.findall(f"{A}entry"):
        for name in ("id", "title", "updated"):
            assert len(entry.findall(f"{A}{name}")) == 1, name
        assert entry.find(f"{A}id").text.startswith("urn:uuid:")
        assert entry.find(f"{A}link[@rel='alternate']").get("href")
    for stamp in feed.iter(f"{A}updated"):
        dt.datetime.fromisoformat(stamp.text)  # RFC 3339
        assert stamp.text.endswith("Z")
    return feed


def titles(feed: ET.Element) -> list[str]:
    return [e.find(f"{A}title").text for e in feed.findall(f"{A}entry")]


def test_feeds_of_new_challenges_and_of_deadlines_within_two_weeks(catalog_repo):
    stage = stage_of(catalog_repo, now=NOW)
    new = parse_feed(stage / "feeds" / "challenges.xml")
    assert len(titles(new)) == 12 and "Benchmark 004" in titles(new)
    links = {e.find(f"{A}title").text: e.find(f"{A}link").get("href") for e in new.findall(f"{A}entry")}
    assert links["Benchmark 004"] == "https://example.org/c/4" and links["Benchmark 000"] == "../challenge-000/"
    due = parse_feed(stage / "feeds" / "deadlines.xml")
    # The active ones end i + 1 days from now (0, 3, 6, 9), the newest in the window first.
    assert [t for t in titles(due) if "ends" in t] == [
        f"Benchmark {i:03d}: Challenge ends {(TODAY + dt.timedelta(days=i + 1)):%Y-%m-%d} 23:59 UTC"
        for i in (9, 6, 3, 0)]
    # The upcoming ones start i % 30 + 1 days from now: those within two weeks (1, 4, 7, 10) are milestones too.
    assert sorted(t for t in titles(due) if "starts" in t) == [
        f"Benchmark {i:03d}: Challenge starts {(TODAY + dt.timedelta(days=i + 1)):%Y-%m-%d} 00:00 UTC"
        for i in (1, 4, 7, 10)]
    assert parse_feed(stage / "feeds" / "deadlines.xml").find(f"{A}updated").text == "2026-05-29T00:00:00Z"


def test_milestones_are_in_the_timeline_its_countdown_and_the_deadlines_feed(repo):
    """L2L's timeline: data release, report deadline and results announcement are dated fields, shown with
    the phases' windows on the challenge page (a countdown on the next one) and in the deadlines feed."""
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", data_release_date="2026-06-03",
              report_deadline_at="2026-06-10", results_announcement_date="2026-09-28")
    edit_yaml(phase_file(repo), supplementary_file_choice="optional", method_reports_close_at="2028-01-15T12:00:00Z")
    assert not check(Store(repo)).problems
    stage = stage_of(repo, now=NOW)
    page = (stage / CHALLENGE / "index.md").read_text()
    timeline = page[page.index("## Timeline"):page.index("## Phases")]
    rows = re.findall(r"^\| (\d{4}-\d\d-\d\d \d\d:\d\d) \| ([^|<]+?)(?: <span|\s*\|)", timeline, re.M)
    assert ("2026-06-03 00:00", "Data release") in rows and ("2026-06-10 23:59", "Method reports due") in rows
    assert ("2026-09-28 00:00", "Results announced") in rows and ("2027-12-31 23:59", "Challenge ends") in rows
    assert ("2028-01-15 12:00", "Final test: method reports due") in rows  # a phase's own report deadline
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)  # in time order
    assert re.findall(r"(\S+ \S+) <span class=\"countdown\" data-until=\"([^\"]+)\"", timeline) == [
        ("Data release", "2026-06-03T00:00:00+00:00")]  # the next one, and only it
    due = titles(parse_feed(stage / "feeds" / "deadlines.xml"))
    assert "Ellipsoid Segmentation: Data release 2026-06-03 00:00 UTC" in due
    assert "Ellipsoid Segmentation: Method reports due 2026-06-10 23:59 UTC" in due
    assert not any("Results announced" in t for t in due)  # months away


def test_results_cannot_be_announced_before_the_data_is_released(repo):
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", data_release_date="2026-06-03",
              results_announcement_date="2026-05-01")
    assert any("results_announcement_date: is before data_release_date" in str(p) for p in check(Store(repo)).problems)


def test_feeds_do_not_change_when_nothing_changed(catalog_repo):
    first = {p.name: p.read_bytes() for p in (stage_of(catalog_repo, now=NOW) / "feeds").rglob("*.xml")}
    later = {p.name: p.read_bytes() for p in (stage_of(catalog_repo, now=NOW + dt.timedelta(hours=5)) / "feeds")
             .rglob("*.xml")}
    assert first == later


def test_results_feed_shows_scores_only_where_the_phase_does(repo):
    add_result(repo, "alice", "v1", 0.81234)
    add_result(repo, "erin", "broken", None, status="failed", error="Algorithm failed: boom")
    phases = repo / "challenges" / CHALLENGE / "phases"
    (phases / "blind.yml").write_text(phase_file(repo).read_text().replace("title: Final test", "title: Blind test")
                                      + "blind: true\n")
    add_result(repo, "bob", "v2", 0.93456, phase="blind")
    (phases / "held.yml").write_text(phase_file(repo).read_text().replace("title: Final test", "title: Held")
                                     + "auto_publish_new_results: false\n")
    add_result(repo, "carol", "v3", 0.77777, phase="held")
    stage = stage_of(repo, now=NOW)
    path = stage / "feeds" / "results" / f"{CHALLENGE}.xml"
    feed = parse_feed(path)
    assert sorted(titles(feed)) == [
        "alice / v1 in Final test: Dice (mean) 0.812",
        "bob / v2 in Blind test: succeeded (scores withheld until 2027-12-31 23:59 UTC)",
        "erin / broken in Final test: failed: Algorithm failed: boom"]
    text = path.read_text()
    assert "0.93456" not in text and "0.934" not in text and "0.935" not in text and "carol" not in text
    links = [e.find(f"{A}link").get("href") for e in feed.findall(f"{A}entry")]
    assert f"../../{CHALLENGE}/results/{PHASE}/view/?id=alice/v1" in links
    after = parse_feed(stage_of(repo, now=dt.datetime(2028, 1, 1, tzinfo=dt.UTC)) / "feeds" / "results"
                       / f"{CHALLENGE}.xml")
    assert "bob / v2 in Blind test: Dice (mean) 0.935" in titles(after)


def json_ld_of(html: str) -> dict:
    [found] = re.findall(r'<script type="application/ld\+json">(.*?)</script>', html, re.S)
    return json.loads(found)


def test_each_challenge_page_carries_schema_org_json_ld(repo):
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", doi="10.5281/zenodo.1234",
              data_url="https://example.org/data", website_url="https://example.org/ellipsoids",
              data=[{"name": "training", "url": "https://example.org/train.zip", "size": "2g", "sha256": "a" * 64,
                     "license": "CC-BY-4.0"}, {"name": "gated", "file": "gated.zip", "size": 10, "sha256": "b" * 64,
                                                "terms": "Be nice"}], registration="required")
    (repo / "mkdocs.yml").write_text((repo / "mkdocs.yml").read_text() + "site_url: https://challenges.example.org/\n")
    data = json_ld_of((stage_of(repo, now=NOW) / CHALLENGE / "index.md").read_text())
    assert data["@context"] == "https://schema.org" and data["@type"] == "Event"
    assert data["name"] == "Ellipsoid Segmentation" and data["startDate"] == "2026-01-01"
    assert data["url"] == f"https://challenges.example.org/{CHALLENGE}/"
    assert data["sameAs"] == "https://example.org/ellipsoids"
    assert data["identifier"] == "https://doi.org/10.5281/zenodo.1234"
    assert data["organizer"] == [{"@type": "Organization", "name": "Challenge hosting maintainers"}]
    assert data["subjectOf"]["@type"] == "Dataset" and data["subjectOf"]["url"] == "https://example.org/data"
    assert data["subjectOf"]["distribution"] == [  # the gated data set publishes no link
        {"@type": "DataDownload", "name": "training", "contentUrl": "https://example.org/train.zip",
         "contentSize": f"{2 * 1024 ** 3} B", "license": "CC-BY-4.0"}]
    assert all(key.startswith("@") or re.fullmatch(r"[a-z][A-Za-z]+", key) for key in data)  # schema.org terms
    feed = parse_feed(repo / "build" / "stage" / "feeds" / "challenges.xml")
    assert feed.find(f"{A}link[@rel='self']").get("href") == "https://challenges.example.org/feeds/challenges.xml"


def test_a_script_in_a_name_cannot_close_the_json_ld(repo):
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", name="Evil </script><script>alert(1)</script>")
    page = (stage_of(repo, now=NOW) / CHALLENGE / "index.md").read_text()
    assert json_ld_of(page)["name"] == "Evil </script><script>alert(1)</script>"


def test_search_words_come_from_the_challenges_own_pages(catalog_repo):
    (catalog_repo / "challenges" / "challenge-005" / "faq.md").write_text(
        "# FAQ\n\nThe phantom is a *Quokkalith* [made here](https://example.org/secretword).\n")
    stage = stage_of(catalog_repo, now=NOW)
    found = json.loads((stage / catalog.SEARCH_FILE).read_text())
    assert "quokkalith" in found["challenge-005"].split()
    assert "secretword" not in found["challenge-005"]  # link targets are not words of the page
    assert [slug for slug, text in found.items() if "quokkalith" in text] == ["challenge-005"]
    assert "challenge-004" not in found  # hosted elsewhere, no pages here
    assert "number" in found["challenge-000"].split() and "script" not in found["challenge-000"]  # no JSON-LD


def test_search_words_are_kept_until_a_page_of_a_challenge_changes(catalog_repo, monkeypatch):
    cache, faq = catalog_repo / "build" / "page-cache", catalog_repo / "challenges" / "challenge-005" / "faq.md"
    faq.write_text("# FAQ\n\nQuokkalith.\n")
    stage_of(catalog_repo, now=NOW, cache=cache)
    kept = catalog.search_words
    monkeypatch.setattr(catalog, "search_words", lambda texts: pytest.fail("unchanged pages' words found again"))
    first = (stage_of(catalog_repo, now=NOW, cache=cache) / catalog.SEARCH_FILE).read_bytes()
    monkeypatch.setattr(catalog, "search_words", kept)
    faq.write_text("# FAQ\n\nWombatite.\n")
    found = json.loads((stage_of(catalog_repo, now=NOW, cache=cache) / catalog.SEARCH_FILE).read_text())
    assert "wombatite" in found["challenge-005"].split() and "quokkalith" not in found["challenge-005"]
    assert b"quokkalith" in first


def test_search_words_fold_accents_and_case_as_the_reader_query_is_folded():
    assert catalog.words("Café NAÏVE Straße Ǆemal THE_End") == ["cafe", "naive", "strasse", "dzemal", "the", "end"]
    assert catalog.words("Plain ASCII Text, 2026") == ["plain", "ascii", "text", "2026"]  # no decomposition needed
    assert catalog.words("x" * 41 + " kept") == ["kept"]  # longer "words" are hashes and data


@pytest.mark.parametrize("builder", ["mkdocs", "zensical"])
def test_built_catalog_keeps_its_scripts_and_links(catalog_repo, builder):
    stage_of(catalog_repo, now=NOW)
    site = build_site(SiteConfig.read(catalog_repo), builder)
    data = json_ld_of((site / "challenge-000" / "index.html").read_text())
    assert data["@type"] == "Event" and data["name"] == "Benchmark 000"
    home = (site / "index.html").read_text()
    assert len(cards(home)) == 12 and 'data-search="catalog-search.json"' in home
    assert (site / "catalog-search.json").is_file() and (site / "feeds" / "deadlines.xml").is_file()
    assert "Benchmark 002" in (site / "organizations" / "universite-de-montreal" / "index.html").read_text()


def test_strict_build_of_the_catalog_has_no_broken_links(catalog_repo):
    assert main(["--root", str(catalog_repo), "build", "--strict"]) == 0


def test_a_listing_cannot_break_the_build_nor_the_feeds_nor_link_to_script(repo):
    """What anyone may propose in a listing: an organization's name longer than a file name may be, a control
    character in a headline (the whole feed was not well-formed XML), a javascript: address."""
    folder = repo / "challenges" / "listed"
    folder.mkdir()
    path = folder / "challenge.yml"
    name = "Lab " * 80
    listing = {"name": "Listed", "headline": "bell\x07 and \ufffe in the headline", "platform": "kaggle",
               "website_url": "https://example.org/c", "organizations": [{"name": name, "url": "https://example.org"}]}
    path.write_text(yaml.safe_dump(listing))
    assert check(Store(repo)).ok
    stage = stage_of(repo, now=NOW)
    page = stage / "organizations" / f"{catalog.slugify(name)}.md"
    assert page.is_file() and len(page.name) < 100
    feed = parse_feed(stage / "feeds" / "challenges.xml")
    summaries = [e.find(f"{A}summary").text for e in feed.findall(f"{A}entry")]
    assert any(s.startswith("bell and  in the headline") for s in summaries)
    for field in ("url", "data_url"):
        listing["organizations"][0]["url"] = "https://example.org"
        listing.pop("data_url", None)
        (listing["organizations"][0] if field == "url" else listing)[field] = "javascript:alert(1)"
        path.write_text(yaml.safe_dump(listing))
        [problem] = check(Store(repo)).problems
        assert field in str(problem) and "is not a web address" in str(problem)
