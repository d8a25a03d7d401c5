"""Atom 1.0 feeds, served by the site itself: new challenges, deadlines within two weeks, and per
challenge its new results.

A feed reader polls a file, so each file must be stable: an entry's `updated` is the moment its
content appeared (a challenge's first commit, a result's `created_at`, the day a deadline came
within two weeks), never the build's time, and the feed's is its newest entry's. A rebuild that
changes nothing rewrites nothing, and readers see no false updates. Identifiers are UUIDs derived
from what the entry is about (and the site's address when mkdocs.yml names one), so a rebuild keeps them.

The results feed shows what the leaderboard shows and no more: only results the public may see
(`Store.published`: approvals where auto-publish is off, nothing of a private phase), and a score
only where `policy.visibility` allows it now: a blind phase's results say that they succeeded and
until when their scores are withheld.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import pickle
import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from runner.ranking.tables import fmt
from runner.site.catalog import CatalogEntry, platform_name
from runner.site.facts import milestones
from runner.tree.gitfiles import added_all
from runner.tree.jsonpaths import lookup
from runner.tree.phase_model import Phase
from runner.tree.policy import visibility
from runner.tree.result_model import Result, parse_time, scored_document
from runner.tree.store import Store

ATOM = "http://www.w3.org/2005/Atom"
# What XML 1.0 cannot hold (control characters, surrogates, U+FFFE/FFFF): one in a challenge's text made the
# whole feed "not well-formed" for every reader.
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
FEEDS = "feeds"
MAX_ENTRIES = 50
SOON = dt.timedelta(days=14)
SITE_NAME = "Challenges"
STAMP = "%Y-%m-%d %H:%M UTC"


@dataclass(frozen=True)
class Entry:
    key: str  # what the entry is about, from which its identifier is derived
    title: str
    updated: dt.datetime
    link: str  # relative to the site's root, or absolute
    summary: str
    categories: tuple[str, ...] = ()


@dataclass(frozen=True)
class Feed:
    path: Path  # in the staging folder
    title: str
    subtitle: str
    link: str  # the page the feed is about, relative to the site's root
    author: str
    entries: list[Entry]


@dataclass(frozen=True)
class News:
    """A phase's newest results as feed entries (`result_entries`), kept pickled with their digest: the page
    cache keeps it with the phase's files, and a build in which the phase did not change only compares digests
    (unpickling 600 phases' 30,000 entries and writing out their reprs for the feeds' keys was a tenth of the
    page generation for one new result at 300 challenges)."""

    digest: str
    count: int
    pickled: bytes

    @classmethod
    def of(cls, entries: list[Entry]) -> News:
        data = pickle.dumps(entries, pickle.HIGHEST_PROTOCOL)
        return cls(hashlib.sha256(data).hexdigest(), len(entries), data)

    def entries(self) -> list[Entry]:
        return cast(list[Entry], pickle.loads(self.pickled))  # what `of` pickled


def write(wanted: dict[Path, bytes], *, store: Store, entries: list[CatalogEntry], news: dict[str, list[News]],
          now: dt.datetime, site_url: str | None = None,
          memo: Callable[[str, Callable[[], bytes]], bytes] = lambda _, make: make(),
          added: Path | None = None) -> None:
    """Every feed into the staging folder. `news`: per challenge, its `result_entries` (gathered while
    the pages read each phase's results, so they are read once). Challenges' links go to their page here
    where it has one. `memo` keeps each feed's Atom under its inputs (cache.Memo), so a new result
    writes its challenge's feed again, not all of them. `added`: the file that keeps when each challenge
    was added (`gitfiles.added_all`), so that a build reads only the commits since the last one."""
    pages = {e.challenge.slug for e in entries if Path(e.challenge.slug, "index.md") in wanted}
    day = now.date()  # an empty feed is dated by the day it was built on (`atom`)
    for feed in [new_challenges(store, entries, pages, added=added), deadlines(entries, now=now, pages=pages)]:
        wanted[feed.path] = memo(f"feed {site_url} {'' if feed.entries else day} {feed!r}",
                                 functools.partial(atom, feed, site_url=site_url, now=now))
    for entry in entries:
        if entry.phases:  # keyed by its feed without entries and its phases' news, unpickled only where needed
            found, header = news.get(entry.challenge.slug, []), results_feed(entry, [])
            dated = "" if any(n.count for n in found) else day
            wanted[header.path] = memo(f"feed {site_url} {dated} {header!r} {[n.digest for n in found]}",
                                       functools.partial(_results_atom, entry, found, site_url=site_url, now=now))


def _results_atom(entry: CatalogEntry, found: list[News], *, site_url: str | None, now: dt.datetime) -> bytes:
    return atom(results_feed(entry, [e for news in found for e in news.entries()]), site_url=site_url, now=now)


def _page(entry: CatalogEntry, pages: set[str]) -> str:
    c = entry.challenge
    return f"{c.slug}/" if c.slug in pages else (c.website_url or f"{c.slug}/")


def new_challenges(store: Store, entries: list[CatalogEntry], pages: set[str], *, added: Path | None = None) -> Feed:
    """Challenges by when they joined the catalog: the commit that added their challenge.yml (the
    file's time outside git), newest first. One git walk answers for every challenge."""
    commits = added_all(store.root, str(store.paths.challenge_file("*").relative_to(store.root)), cache=added)
    found = []
    for entry in entries:
        c = entry.challenge
        path = store.paths.challenge_file(c.slug)
        commit = commits.get(str(path.relative_to(store.root)))
        when = commit.at if commit else dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
        dates = " to ".join(str(d) for d in (c.start_date, c.end_date) if d)
        summary = f"{c.headline} ({platform_name(c.platform)}{'; ' + dates if dates else ''})"
        found.append(Entry(f"challenge/{c.slug}", c.name, when, _page(entry, pages), summary,
                           (entry.status, c.platform, *c.incentives)))
    return Feed(Path(FEEDS, "challenges.xml"), f"{SITE_NAME}: new challenges", "Challenges as they join the catalog",
                "", SITE_NAME, _newest(found))


def deadlines(entries: list[CatalogEntry], *, now: dt.datetime, pages: set[str]) -> Feed:
    """The challenges' milestones in the next two weeks (their timelines: phases' windows, registration's
    end, data release, report deadline, results announcement, the end date), each entry dated the moment
    it came within two weeks."""
    found = []
    for entry in entries:
        c = entry.challenge
        for m in milestones(c, entry.phases):
            if now <= m.at <= now + SOON:
                link = f"{c.slug}/leaderboard/{m.phase}/" if m.phase else _page(entry, pages)
                title = f"{c.name}: {m.what} {m.at:{STAMP}}"
                found.append(Entry(f"deadline/{c.slug}/{m.key}/{m.at.isoformat()}", title, m.at - SOON, link,
                                   f"{c.headline} {m.what}: {m.at:{STAMP}}.", (c.platform,)))
    return Feed(Path(FEEDS, "deadlines.xml"), f"{SITE_NAME}: deadlines within two weeks",
                "Milestones in the next 14 days: submission windows, registration, data release, reports, "
                "results, challenge ends", "", SITE_NAME, _newest(found))


def results_feed(entry: CatalogEntry, found: list[Entry]) -> Feed:
    """A challenge's new results across its public phases, newest first."""
    c = entry.challenge
    author = next((o.name for o in c.organizations if o.role == "challenge_organizer"), SITE_NAME)
    return Feed(Path(FEEDS, "results", f"{c.slug}.xml"), f"{c.name}: new results",
                f"Results of {c.name} as the runner publishes them", f"{c.slug}/", author, _newest(found))


def result_entries(phase: Phase, published: list[Result], *, now: dt.datetime) -> News:
    """The newest of a phase's results the public may see (`Store.published`), as feed entries."""
    return News.of(_newest([_result_entry(phase, result, now=now) for result in published]))


def _result_entry(phase: Phase, result: Result, *, now: dt.datetime) -> Entry:
    """One result in the words of its leaderboard: its score where the phase shows scores now,
    its one-line reason where it failed, and otherwise only that it succeeded."""
    who = f"{result.participant} / {result.submission}"
    shown = visibility(phase, now=now)
    if result.status == "failed":
        what = f"failed: {result.error or 'no reason recorded'}"
    elif not shown.scores:
        what = f"succeeded ({shown.note})"
    else:
        score = lookup(scored_document(result), phase.score.path)
        what = f"{phase.score.title} {fmt(score, phase.score_decimal_places)}"
    link = f"{phase.challenge}/results/{phase.slug}/view/?id={result.participant}/{result.submission}"
    return Entry(f"result/{phase.challenge}/{phase.slug}/{result.participant}/{result.submission}",
                 f"{who} in {phase.title}: {what}", parse_time(result.created_at), link,
                 f"{who} submitted to {phase.title} on {parse_time(result.created_at):{STAMP}}: {what}.",
                 (phase.slug, result.status))


def _newest(entries: list[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.updated, e.key), reverse=True)[:MAX_ENTRIES]


# --- Atom --------------------------------------------------------------------------------------


def atom(feed: Feed, *, site_url: str | None, now: dt.datetime) -> bytes:
    """The feed as Atom 1.0 (RFC 4287). Links are absolute where the site's address is known, else
    relative to the feed's own address, which Atom resolves them against."""
    root = site_url.rstrip("/") + "/" if site_url else "../" * (len(feed.path.parts) - 1)
    space = uuid.uuid5(uuid.NAMESPACE_URL, site_url or "challenges-from-a-git-repository")
    ET.register_namespace("", ATOM)
    top = _element(None, "feed")
    _element(top, "id", f"urn:uuid:{uuid.uuid5(space, feed.path.as_posix())}")
    _element(top, "title", feed.title)
    _element(top, "subtitle", feed.subtitle)
    # An empty feed is as old as the day it was built on, so it changes at most daily.
    newest = feed.entries[0].updated if feed.entries else now.replace(hour=0, minute=0, second=0, microsecond=0)
    _element(top, "updated", _time(newest))
    _element(_element(top, "author"), "name", feed.author)
    _element(top, "link", rel="self", type="application/atom+xml", href=root + feed.path.as_posix())
    _element(top, "link", rel="alternate", type="text/html", href=root + feed.link)
    _element(top, "generator", "challenge build")
    for entry in feed.entries:
        item = _element(top, "entry")
        _element(item, "id", f"urn:uuid:{uuid.uuid5(space, entry.key)}")
        _element(item, "title", entry.title)
        _element(item, "updated", _time(entry.updated))
        href = entry.link if entry.link.startswith(("http://", "https://")) else root + entry.link
        _element(item, "link", rel="alternate", type="text/html", href=href)
        _element(item, "summary", entry.summary)
        for term in entry.categories:
            _element(item, "category", term=term)
    ET.indent(top)
    xml = cast(bytes, ET.tostring(top, encoding="utf-8", xml_declaration=True))  # bytes for any encoding but "unicode"
    return xml + b"\n"


def _element(parent: ET.Element | None, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
    name = f"{{{ATOM}}}{tag}"
    node = ET.Element(name, attributes) if parent is None else ET.SubElement(parent, name, attributes)
    node.text = None if text is None else NOT_XML.sub("", text)
    return node


def _time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
