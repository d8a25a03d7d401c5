"""The catalog: every challenge listed on the home page, searched and filtered the way readers
already search OpenChallenges' catalog, and the files other catalogs and readers take from it.

What it adds to the staging folder:

- the home page's catalog (`catalog.md.j2`): a facet per OpenChallenges filter (status, challenge
  type, submission type, incentive, input data type, operation, platform, organization, year) and
  a card per challenge as OpenChallenges draws it. Cards and facet values are rendered here, so the
  page reads without scripts; `assets/catalog.js` only hides, counts, searches and reorders them,
  and keeps that state in the query string.
- `catalog-search.json`: per challenge, the words of its own Markdown pages, so a search finds a
  challenge by what its pages say, not only by its card. Each word once rather than the text:
  hundreds of challenges' pages fit in a few hundred kB, at the price of phrase search.
- `catalog.json`, the OpenChallenges-compatible export; schema.org JSON-LD on each challenge's page.
- `organizations/`: an index and a page per organization, listing its challenges with its roles.

Challenges hosted elsewhere are listed by the same file as those run here: `challenges/<slug>/
challenge.yml` with `platform: kaggle` (any platform but self-hosted), `website_url`, and no
phases. Not a separate folder or list of entries, because one record in one vocabulary means the
schema, `challenge check`, the facets, the export and the feeds take both with no second code path;
a community's catalog grows by pull requests that each add one small file (no conflicts on a
shared list), may add pages beside it that the search reads, and a listed challenge that moves here
only gains phases and changes its platform. The model requires the website to link to; the check
refuses phases on a challenge hosted elsewhere.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml

from runner.site.datafiles import json_bytes
from runner.tree.model import INCENTIVES, ROLES, STATUSES, SUBMISSION_TYPES, Challenge
from runner.tree.paths import LEADERBOARDS
from runner.tree.phase_model import Phase
from runner.tree.policy import plural
from runner.tree.store import Store

CATALOG_MARK = "<!-- catalog -->"
SEARCH_FILE = "catalog-search.json"
ORGANIZATIONS = "organizations"
# OpenChallenges' platform slugs as they name the platforms; any other slug is shown as written.
PLATFORMS = {"self-hosted": "Hosted here", "grand-challenge": "Grand Challenge", "kaggle": "Kaggle",
             "codalab": "CodaLab", "codabench": "Codabench", "evalai": "EvalAI", "synapse": "Synapse",
             "drivendata": "DrivenData", "zindi": "Zindi", "aicrowd": "AIcrowd", "huggingface": "Hugging Face",
             "topcoder": "Topcoder", "cami": "CAMI", "dream": "DREAM", "tianchi": "Tianchi"}
# grand-challenge's challenge types 0-3: what participants hand in (their overview's table).
TYPES = {0: "0 · metrics", 1: "1 · predictions", 2: "2 · inference algorithms", 3: "3 · training algorithms"}
ROLE_NAMES = {"challenge_organizer": "Challenge organizer", "data_contributor": "Data contributor",
              "sponsor": "Sponsor"}
SPECIAL_WORDS = {"mlcube": "MLCube"}
WORD = re.compile(r"[^\W_]+")
# What a page's words are not: HTML tags, JSON-LD, link targets and addresses.
MARKUP = re.compile(r"<script.*?</script>|<[^>]*>|\]\([^)]*\)|https?://\S+", re.DOTALL)
MAX_SLUG = 80  # characters of a `slugify` name
WEB = re.compile(r"https?://", re.IGNORECASE)  # the only links a catalog file may give readers
LONGEST_WORD = 40  # longer "words" are hashes and data, not what readers search for
MAX_PAGE_WORDS = 5000  # per challenge, so one huge page cannot bloat every reader's download


@dataclass(frozen=True)
class CatalogEntry:
    challenge: Challenge
    status: str
    phases: list[Phase]
    submissions: int


def catalog_entry(store: Store, slug: str, today: dt.date, *, submissions: int) -> CatalogEntry:
    """The challenge as the catalog lists it; `submissions`: `Store.submission_count` (the page cache counts)."""
    challenge = store.challenge(slug)
    # A phase with `public: false` (grand-challenge's option) gets no leaderboard, link or result files.
    public = [p for p in store.phases(slug).values() if p.public]
    return CatalogEntry(challenge, challenge.current_status(today), public, submissions)


def export(entry: CatalogEntry) -> dict[str, Any]:
    """A catalog record in OpenChallenges' field names, for other catalogs to import."""
    c = entry.challenge
    return {
        "slug": c.slug, "name": c.name, "headline": c.headline, "description": c.description,
        "status": entry.status, "platform": c.platform,
        "start_date": c.start_date.isoformat() if c.start_date else None,
        "end_date": c.end_date.isoformat() if c.end_date else None,
        "incentives": list(c.incentives), "submission_types": list(c.submission_types),
        "input_data_types": list(c.input_data_types), "operation": c.operation,
        "categories": list(c.categories), "keywords": list(c.tags), "website_url": c.website_url,
        "doi": c.doi, "organizations": [{"name": o.name, "role": o.role, "url": o.url} for o in c.organizations],
    }


# --- words: names in URLs, and what the search compares ----------------------------------------


def slugify(text: str) -> str:
    """A kebab-case name for URLs and the query string ('Sage Bionetworks' -> 'sage-bionetworks');
    text with no letter or digit in ASCII gets a name from its hash, and a long one is cut and ends in it
    (an organization's page is a file named by it: a name past the file system's 255 bytes stopped builds)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    if len(slug) > MAX_SLUG:
        return f"{slug[:MAX_SLUG - 9].rstrip('-')}-{digest}"
    return slug or "x-" + digest


def words(text: str) -> list[str]:
    """The words of `text` as the search compares them: accents dropped, case folded
    (catalog.js folds the reader's query the same way)."""
    if text.isascii():  # nothing to decompose or drop (most pages): the pass per character took 0.8 s at 300 challenges
        folded = text.casefold()
    else:
        folded = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch)).casefold()
    return [w for w in WORD.findall(folded) if len(w) <= LONGEST_WORD]


def unique_words(texts: Iterable[str], limit: int | None = None) -> str:
    """Each word once, in order of first use, as one space-separated string."""
    seen = dict.fromkeys(w for text in texts for w in words(text))
    return " ".join(list(seen)[:limit])


def humane(value: str) -> str:
    """'speaking_engagement' -> 'Speaking engagement'."""
    return SPECIAL_WORDS.get(value) or value.replace("_", " ").capitalize()


def platform_name(slug: str) -> str:
    return PLATFORMS.get(slug) or humane(slug.replace("-", " "))


# --- facets ------------------------------------------------------------------------------------


Values = Callable[[CatalogEntry], list[tuple[str, str]]]


@dataclass(frozen=True)
class Facet:
    """One filter: its name in the query string, its title, and each challenge's (value, label) pairs.
    `order` lists values in their natural order (statuses, types); others go by count, years newest first."""

    key: str
    title: str
    values: Values
    order: tuple[str, ...] = ()
    newest_first: bool = False


def _labelled(items: Iterable[str], label: Callable[[str], str]) -> list[tuple[str, str]]:
    return [(item, label(item)) for item in dict.fromkeys(items)]


def _named(items: Iterable[str]) -> list[tuple[str, str]]:
    """Free text (input data types, operations, organizations): a slug for the URL, the text as label."""
    found: dict[str, str] = {}
    for item in items:
        found.setdefault(slugify(item), item)
    return list(found.items())


def _year(entry: CatalogEntry) -> list[tuple[str, str]]:
    day = entry.challenge.start_date or entry.challenge.end_date
    return [(str(day.year), str(day.year))] if day else []


FACETS = (
    Facet("status", "Status", lambda e: [(e.status, humane(e.status))], order=STATUSES),
    Facet("type", "Challenge type", lambda e: [(str(e.challenge.type), TYPES[e.challenge.type])],
          order=tuple(str(t) for t in TYPES)),
    Facet("submission", "Submission type", lambda e: _labelled(e.challenge.submission_types, humane),
          order=SUBMISSION_TYPES),
    Facet("incentive", "Incentive", lambda e: _labelled(e.challenge.incentives, humane), order=INCENTIVES),
    Facet("input", "Input data type", lambda e: _named(e.challenge.input_data_types)),
    Facet("operation", "Operation", lambda e: _named([e.challenge.operation] if e.challenge.operation else [])),
    Facet("platform", "Platform", lambda e: [(e.challenge.platform, platform_name(e.challenge.platform))]),
    Facet("org", "Organization", lambda e: _named(o.name for o in e.challenge.organizations)),
    Facet("year", "Year", _year, newest_first=True),
)


@dataclass(frozen=True)
class FacetValue:
    value: str
    label: str
    count: int


@dataclass(frozen=True)
class FacetView:
    key: str
    title: str
    values: list[FacetValue]


def facet_views(entries: list[CatalogEntry]) -> list[FacetView]:
    """Each facet with its values and how many challenges have each (before any filter)."""
    views = []
    for facet in FACETS:
        counts: dict[str, int] = {}
        labels: dict[str, str] = {}
        for entry in entries:
            for value, label in facet.values(entry):
                counts[value] = counts.get(value, 0) + 1
                labels.setdefault(value, label)
        values = [FacetValue(v, labels[v], n) for v, n in counts.items()]
        views.append(FacetView(facet.key, facet.title, _ordered(facet, values)))
    return views


def _ordered(facet: Facet, values: list[FacetValue]) -> list[FacetValue]:
    if facet.order:
        return sorted(values, key=lambda v: (facet.order.index(v.value) if v.value in facet.order else len(facet.order),
                                             v.label))
    if facet.newest_first:
        return sorted(values, key=lambda v: v.value, reverse=True)
    return sorted(values, key=lambda v: (-v.count, v.label.casefold()))


# --- cards -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Card:
    """A challenge as its catalog card shows it; the data-* attributes are what catalog.js reads."""

    entry: CatalogEntry
    href: str  # its page here, else its website
    external: bool  # the link leaves the site
    time: str  # "Ends in 12 days"
    platform: str
    incentives: str
    facets: str  # JSON: facet key -> value keys
    text: str  # the card's words, for the search
    feed: str | None  # its results feed, where it has public phases


def card(entry: CatalogEntry, *, has_page: bool, today: dt.date) -> Card:
    c = entry.challenge
    incentives = ", ".join(humane(i) for i in c.incentives) or "No incentives listed"
    facets = {f.key: [v for v, _ in f.values(entry)] for f in FACETS}
    text = unique_words([c.name, c.headline, c.description, *c.tags, c.operation or "", *c.input_data_types,
                         *(o.name for o in c.organizations), platform_name(c.platform), c.slug])
    return Card(entry=entry, href=f"{c.slug}/" if has_page else (c.website_url or f"{c.slug}/"),
                external=not has_page, time=time_line(c, entry.status, today), platform=platform_name(c.platform),
                incentives=incentives, facets=json.dumps(facets, separators=(",", ":")), text=text,
                feed=f"feeds/results/{c.slug}.xml" if entry.phases else None)


def time_line(challenge: Challenge, status: str, today: dt.date) -> str:
    """OpenChallenges' time line under the status: 'Ends in 12 days', 'Starts in 3 days', 'Ended 2 months ago'."""
    start, end = challenge.start_date, challenge.end_date
    if status == "upcoming" and start and start > today:
        return f"Starts in {span((start - today).days)}"
    if status == "active" and end and end >= today:
        return "Ends today" if end == today else f"Ends in {span((end - today).days)}"
    if end and end < today:
        return f"Ended {span((today - end).days)} ago"
    return {"upcoming": "Starting soon", "active": "Open, no end date set", "completed": "Ended"}[status]


def span(days: int) -> str:
    """Days as people say them: up to 45 days, then months, then years from a year and a half."""
    if days <= 45:
        return plural(days, "day")
    if days < 548:
        return plural(round(days / 30.44), "month")
    return plural(round(days / 365.25), "year")


# --- organizations -----------------------------------------------------------------------------


@dataclass
class OrganizationPage:
    slug: str
    name: str
    url: str | None
    challenges: list[tuple[CatalogEntry, str]] = field(default_factory=list)  # (challenge, its roles)


def organizations(entries: list[CatalogEntry]) -> list[OrganizationPage]:
    """Every organization named by a challenge, by name; names that differ only in case or accents are one."""
    found: dict[str, OrganizationPage] = {}
    for entry in entries:
        roles: dict[str, list[str]] = {}
        for org in entry.challenge.organizations:
            url = org.url if org.url and WEB.match(org.url) else None
            page = found.setdefault(slugify(org.name), OrganizationPage(slugify(org.name), org.name, url))
            page.url = page.url or url
            roles.setdefault(page.slug, []).append(org.role)
        for slug, named in roles.items():
            ordered = sorted(set(named), key=ROLES.index)
            found[slug].challenges.append((entry, ", ".join(ROLE_NAMES[r] for r in ordered)))
    return sorted(found.values(), key=lambda p: p.name.casefold())


# --- schema.org --------------------------------------------------------------------------------


def json_ld(entry: CatalogEntry, *, url: str | None) -> dict[str, Any]:
    """The challenge as schema.org describes an online event, with its data set where it has one:
    what OpenChallenges publishes for search engines. `url`: its page's address, where known."""
    c = entry.challenge
    roles = {role: [_organization(o.name, o.url) for o in c.organizations if o.role == role] for role in ROLES}
    event: dict[str, Any] = {
        "@context": "https://schema.org", "@type": "Event", "name": c.name,
        "description": c.description or c.headline, "disambiguatingDescription": c.headline,
        "url": url or c.website_url, "sameAs": c.website_url if url and c.website_url else None,
        "startDate": c.start_date and c.start_date.isoformat(), "endDate": c.end_date and c.end_date.isoformat(),
        "eventStatus": "https://schema.org/EventScheduled",
        "eventAttendanceMode": "https://schema.org/OnlineEventAttendanceMode",
        "location": {"@type": "VirtualLocation", "url": url or c.website_url} if url or c.website_url else None,
        "isAccessibleForFree": True,
        "keywords": ", ".join(dict.fromkeys([*c.tags, *([c.operation] if c.operation else []), *c.input_data_types]))
        or None,
        "identifier": f"https://doi.org/{c.doi.removeprefix('https://doi.org/')}" if c.doi else None,
        "organizer": roles["challenge_organizer"] or None, "contributor": roles["data_contributor"] or None,
        "sponsor": roles["sponsor"] or None,
        "subjectOf": _dataset(c),
    }
    return {k: v for k, v in event.items() if v is not None}


def _dataset(c: Challenge) -> dict[str, Any] | None:
    """The challenge's public data as a schema.org Dataset: its download page, and each data set
    with a public link as a download (a gated one publishes no link)."""
    downloads = [{"@type": "DataDownload", "name": d.name, "contentUrl": d.url, "contentSize": f"{d.size} B",
                  **({"license": d.license} if d.license else {})} for d in c.data if d.url]
    if not c.data_url and not downloads:
        return None
    found = {"@type": "Dataset", "name": f"{c.name} data", "description": f"The public data of {c.name}.",
             "url": c.data_url, "distribution": downloads or None}
    return {k: v for k, v in found.items() if v is not None}


def _organization(name: str, url: str | None) -> dict[str, str]:
    return {"@type": "Organization", "name": name, **({"url": url} if url else {})}


def json_ld_script(data: dict[str, Any]) -> str:
    """A script element that no text can close early: '<' is written as its JSON escape."""
    text = json.dumps(data, indent=1, ensure_ascii=False).replace("<", "\\u003c")
    return f'<script type="application/ld+json">\n{text}\n</script>\n'


# --- into the staging folder -------------------------------------------------------------------


def site_url(root: Path) -> str | None:
    """mkdocs.yml's `site_url`, where organizers set it: feeds and JSON-LD then give absolute addresses."""
    return _mkdocs_url(root, "site_url")


def repository_url(root: Path) -> str | None:
    """mkdocs.yml's `extra: {repository: https://github.com/<owner>/<name>}`: each open phase then has a
    button that opens GitHub's editor with the submission file prefilled. Not the theme's `repo_url`,
    whose header widget asks GitHub's API from every reader's browser."""
    url = _mkdocs_url(root, "extra", "repository")
    return url.rstrip("/") if url else None


def _mkdocs_url(root: Path, *keys: str) -> str | None:
    """An http(s) address mkdocs.yml sets under `keys`, read as plain data (BaseLoader): mkdocs.yml may carry
    tags only MkDocs constructs."""
    path = root / "mkdocs.yml"
    value: object = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.BaseLoader) if path.is_file() else None
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) and WEB.match(value) else None


def write(wanted: dict[Path, bytes], *, store: Store, env: jinja2.Environment, entries: list[CatalogEntry],
          today: dt.date, site_url: str | None = None,
          memo: Callable[[str, Callable[[], bytes]], bytes] = lambda _, make: make()) -> None:
    """The home page's catalog, the search words, the export, organization pages and JSON-LD.
    Call it once the challenges' own pages are in `wanted`: the search reads them. `memo` keeps the
    search words under a hash of those pages (cache.Memo): finding the words of 300 challenges' pages
    was a twentieth of the page generation for one new result, which changes none of them."""
    pages = {e.challenge.slug for e in entries if Path(e.challenge.slug, "index.md") in wanted}
    texts = own_pages(entries, wanted)
    wanted[Path(SEARCH_FILE)] = memo(_search_key(texts), lambda: json_bytes(search_words(texts)))
    orgs = organizations(entries)
    cards = [card(e, has_page=e.challenge.slug in pages, today=today) for e in entries]
    cards.sort(key=lambda c: c.entry.challenge.name.casefold())
    wanted[Path("index.md")] = _home(store, env, cards, facet_views(entries), orgs).encode()
    wanted[Path("catalog.json")] = (json.dumps([export(e) for e in entries], indent=2) + "\n").encode()
    by_slug = {c.entry.challenge.slug: c for c in cards}
    for org in orgs:
        wanted[Path(ORGANIZATIONS, f"{org.slug}.md")] = env.get_template("organization.md.j2").render(
            org=org, cards=by_slug).encode()
    wanted[Path(ORGANIZATIONS, "index.md")] = env.get_template("organizations.md.j2").render(orgs=orgs).encode()
    for entry in entries:
        page = Path(entry.challenge.slug, "index.md")
        if entry.challenge.slug in pages:
            url = f"{site_url.rstrip('/')}/{entry.challenge.slug}/" if site_url else None
            wanted[page] = wanted[page].rstrip() + b"\n\n" + json_ld_script(json_ld(entry, url=url)).encode()


def own_pages(entries: list[CatalogEntry], wanted: dict[Path, bytes]) -> dict[str, list[bytes]]:
    """Per challenge with pages, its own Markdown pages (not its leaderboards or results), in order of path."""
    texts: dict[str, list[bytes]] = {}
    slugs = {e.challenge.slug for e in entries}
    for path, data in sorted(wanted.items()):
        parts = path.parts
        if path.suffix == ".md" and len(parts) > 1 and parts[0] in slugs and parts[1] not in (LEADERBOARDS, "results"):
            texts.setdefault(parts[0], []).append(data)
    return texts


def _search_key(texts: dict[str, list[bytes]]) -> str:
    """What the search words depend on: the pages (each challenge's slug and its pages' lengths, then their
    bytes, so no two inputs read alike), and the interpreter's Unicode tables (accents, case folding), which
    no code key holds."""
    digest = hashlib.sha256()
    for slug, found in texts.items():
        digest.update(json.dumps([slug, len(found), *map(len, found)]).encode())
        digest.update(b"".join(found))
    return f"search words {unicodedata.unidata_version} {MAX_PAGE_WORDS} {digest.hexdigest()}"


def search_words(texts: dict[str, list[bytes]]) -> dict[str, str]:
    """Per challenge, the words of its own pages (`own_pages`), markup and links left out."""
    return {slug: unique_words((MARKUP.sub(" ", data.decode("utf-8", "replace")) for data in found), MAX_PAGE_WORDS)
            for slug, found in texts.items()}


def _home(store: Store, env: jinja2.Environment, cards: list[Card], facets: list[FacetView],
          orgs: list[OrganizationPage]) -> str:
    intro_path = store.base / "index.md"
    intro = intro_path.read_text(encoding="utf-8") if intro_path.is_file() else "# Challenges\n\n"
    catalog = env.get_template("catalog.md.j2").render(cards=cards, facets=facets, organizations=len(orgs),
                                                       search_file=SEARCH_FILE)
    if CATALOG_MARK in intro:
        return intro.replace(CATALOG_MARK, catalog)
    return intro.rstrip() + "\n\n" + catalog

