"""Render the challenge tree and its results into a staging folder of Markdown for a site builder.

The staging folder holds the organizers' pages as written plus generated ones: the catalog on the
home page, and per phase a leaderboard page with its table as CSV and JSON beside it, dated
snapshots of that table rebuilt from git history, its ranking uncertainty where there is enough
data, and one result viewer page that renders any of the phase's results in the browser from the
result's JSON. One viewer per phase instead of a page per result keeps the builder's work
independent of the number of results (MkDocs needs about 0.1 s and 1 MB of memory per page).
Scripts fetch the JSON by URLs relative to the page, written for `use_directory_urls: true`.

Nothing here depends on mkdocs' plugin or hook API, so any builder that reads mkdocs.yml (MkDocs,
Zensical) renders it. Files are written only when their content changes, so a watching builder
rebuilds what changed. Keeping anything between runs is `cache`'s: the functions here say what the
pages show, and hand it what to compute (the memo's keys for snapshots and bootstraps name their inputs here).
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

from runner.ranking.leaderboard import (
    Leaderboard,
    Rows,
    combined,
    leaderboard,
    phase_leaderboard,
)
from runner.ranking.tables import fields, fmt, records, to_csv
from runner.site import catalog, feeds, templating
from runner.site.build import NAV_FILE
from runner.site.cache import Cache, Memo, code, phase_folders, phase_keys, signers, submission_counts
from runner.site.catalog import CatalogEntry, catalog_entry
from runner.site.datafiles import HISTORY_FILE, data_file, data_suffix, json_bytes, result_files, snapshots_file
from runner.site.facts import (
    METHOD_NAMES,
    JobDuration,
    average_job_duration,
    milestones,
    next_milestone,
    phase_facts,
    ranking_method,
)
from runner.site.reference import reference_markdown
from runner.tree.details import method_reports, submission_details, supplementary_file
from runner.tree.exclusions import short
from runner.tree.history import History, HistoryError, Snapshot
from runner.tree.model import Challenge, CombinedLeaderboard
from runner.tree.paths import LEADERBOARDS, PAGE_SUFFIXES, may_hold_pages, organizer_page, result_path
from runner.tree.phase_model import Phase
from runner.tree.policy import not_runnable, public_record, shown_details, visibility, withholds
from runner.tree.result_model import Provenance, Result
from runner.tree.schema import json_schemas
from runner.tree.schema_types import size_text
from runner.tree.store import Store
from runner.tree.submission_model import SubmissionDetails
from runner.tree.verification import Check

PHASES_MARK = "<!-- phases -->"
DATA_MARK = "<!-- data -->"
WITHHELD_FIELDS = ["participant", "submission", "status", "submitted"]
# A snapshot keeps the top of the table: 20 snapshots of every row would weigh twenty leaderboards, most of
# a large site's bytes; `challenge leaderboard --as-of` gives a whole past table.
SNAPSHOT_ROWS = 100
# A leaderboard page draws this many rows; its script draws the rest from leaderboard.json on request.
PAGE_ROWS = 100
NAV_GROUP = 30  # challenges the navigation lists side by side, at most (`grouped`)
# The ranking uncertainty of the top teams: a significance map of 333 teams is 110,000 cells nobody reads,
# and bootstrapping them the most of a cold build; `challenge report` analyses every team.
UNCERTAINTY_TEAMS = 50


@dataclass(frozen=True)
class Trail:
    """What a phase's pages say of where its results come from: each one's verification and provenance
    (by participant/id), the results left out as not verifying, and the data or evaluations it changed to."""

    checks: dict[str, Check]
    origins: dict[str, Provenance]
    refused: list[str]  # "participant/id: why"
    changes: list[str]  # each (data manifest, evaluation) its results were scored under, if more than one

    def mark(self, key: str) -> str:
        """A leaderboard cell: verified or not, and the short data manifest and evaluation."""
        check, origin = self.checks.get(key), self.origins.get(key)
        verified = "✓ verified" if check and check.verified else "✗ unverified"
        if origin is None:
            return verified
        return f"{verified} · data {short(origin.data_manifest)} · eval {short(origin.evaluation())}"

    def verification(self, key: str) -> dict[str, Any]:
        """What a result page says of its verification."""
        check = self.checks.get(key)
        if check is None:
            return {"verified": False, "reason": "not checked"}
        return {"verified": check.verified, "signer": check.signer, "reason": check.reason}


def changes(results: list[Result]) -> list[str]:
    """One line per (data manifest, evaluation) `results` were scored under, oldest first; none when one."""
    seen: dict[tuple[str, str], list[str]] = {}
    for result in results:
        if result.provenance is not None:
            key = (result.provenance.data_manifest, result.provenance.evaluation())
            seen.setdefault(key, []).append(result.provenance.signed_at[:10])
    if len(seen) < 2:
        return []
    return [f"data {short(data)}, evaluation {short(evaluation)}: {len(days)} result(s), {min(days)} to {max(days)}"
            for (data, evaluation), days in sorted(seen.items(), key=lambda item: min(item[1]))]


@dataclass(frozen=True)
class PhasePage:
    """What a phase's leaderboard page and result viewer show."""

    challenge: Challenge
    phase: Phase
    board: Leaderboard
    withheld: str | None  # "succeeded — scores withheld until ..." while a blind phase is open
    withheld_rows: list[dict[str, Any]]  # then the table's rows: no scores, in order of submission
    snapshots: list[str]  # days with a snapshot of the table, newest first
    uncertainty: dict[str, Any] | None = None  # the bootstrap of the ranking, where there is enough data
    details: dict[str, SubmissionDetails] = field(default_factory=dict)  # participant/id -> title, links
    supplementary: set[str] = field(default_factory=set)  # participant/id whose PDF is published beside it
    shards: int = 0  # how many shards hold the phase's result records (0: one file each; `datafiles`)
    data_suffix: str = ".json"  # of its table's and bootstrap's files: .json, or .json.gz for a large phase
    trail: Trail = field(default_factory=lambda: Trail({}, {}, [], []))
    duration: JobDuration | None = None  # the algorithm's mean running time over the results shown

    @property
    def page_rows(self) -> int:
        """The rows of each table drawn on the page; the script draws the rest."""
        return PAGE_ROWS

    @property
    def snapshot_rows(self) -> int:
        return SNAPSHOT_ROWS

    @property
    def history_file(self) -> str:
        """The file beside the page that holds its snapshots, which the page links day by day."""
        return HISTORY_FILE

    @property
    def method_name(self) -> str:
        return METHOD_NAMES[self.phase.scoring_method_choice]

    @property
    def method(self) -> str:
        return ranking_method(self.phase)


@dataclass
class _Run:
    """What one generation shares across phases."""

    env: jinja2.Environment
    history: History
    now: dt.datetime
    cache: Cache  # every cache of the build (`cache`): pages read and keep through it
    wanted: dict[Path, bytes] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # what this build could not publish, and why
    repo: str | None = None  # mkdocs.yml's extra.repository: each open phase links GitHub's editor there


def environment(templates: Path, *, compiled: Path | None = None) -> jinja2.Environment:
    """The pages' templates: every value text unless marked safe (`templating`); `compiled`: a folder
    where Jinja keeps them compiled between runs (0.15 s a build)."""
    env = templating.environment(templates, fmt=fmt, cell=cell, size=size_text, href=href,
                                 organizer_markdown=templating.organizer_markdown,
                                 front_title=templating.front_matter_title)
    if compiled is not None:
        compiled.mkdir(parents=True, exist_ok=True)
        env.bytecode_cache = jinja2.FileSystemBytecodeCache(str(compiled))
    return env


def href(url: str) -> str:
    """A web address safe as a Markdown link target inside a table cell (no bracket, pipe or space ends it);
    anything but http(s) (a hand-edited record's javascript:) becomes an empty target."""
    if not url.lower().startswith(("https://", "http://")):
        return ""
    return quote(url, safe=":/?#[]@!$&'*+,;=%~-._")


def cell(text: str) -> str:
    """Text on one line, as a Markdown table cell needs it (its `|` is escaped with all text: `templating`)."""
    return " ".join(str(text).split())


def generate(store: Store, stage: Path, templates: Path, assets: Path, *, today: dt.date | None = None,
             now: dt.datetime | None = None, cache: Path | None = None,
             log: Callable[[str], None] = lambda line: None) -> None:
    """Write the whole staging folder. Stale files are removed.
    `cache` keeps what was generated between runs, so only what changed is generated again (`cache.Cache`).
    Results are published as `policy.public_record` allows now; what needed the publish key and did not
    have it is `log`ged."""
    now = now or dt.datetime.now(dt.UTC)
    today = today or now.date()
    caches = Cache.open(cache, stage, code(__name__, templates))
    with store.keeping_parsed(caches.parsed):  # the challenges' and phases' files as parsed last time
        run = _Run(environment(templates, compiled=caches.compiled), History(store, cache=caches.history), now, caches,
                   repo=catalog.repository_url(store.root))
        tree = run.history.worktree  # git's status starts: it runs beside what follows (1.7 s at a million results)
        wanted = run.wanted
        slugs = store.slugs()
        ids = caches.tree_ids(tree, phase_folders(store, slugs))
        counts = submission_counts(store, slugs, caches.memo, ids)
        entries = [catalog_entry(store, slug, today, submissions=counts[slug]) for slug in slugs]
        news: dict[str, list[feeds.News]] = {}  # per challenge, its newest results for its feed
        _site_pages(store.base, wanted)
        keys = phase_keys(run.history, store, [(e.challenge, p) for e in entries for p in e.phases], now=now, ids=ids)
        site_url = catalog.site_url(store.root)
        phases = [(e.challenge, p, keys[e.challenge.slug, p.slug]) for e in entries for p in e.phases]
        made: dict[tuple[str, str], tuple[list[str], feeds.News]] = {}
        # The phases the cache lacks are computed by workers meanwhile (`precomputing`): here, what reads no
        # phase's results, the phases kept, and those computed each time where the workers left a core.
        with caches.precomputing([(key, partial(_phase_files_of, run, store, c, p)) for c, p, key in phases]) as busy:
            for entry in entries:
                _organizer_pages(store.base / entry.challenge.slug, wanted, Path(entry.challenge.slug))
                _phases_section(run, entry)
                _data_section(run, entry)
            catalog.write(wanted, store=store, env=run.env, entries=entries, today=today, site_url=site_url,
                          memo=caches.memo.get)
            made |= {(c.slug, p.slug): _phase(run, store, c, p, key) for c, p, key in phases if busy.here(key)}
        for c, p, key in phases:
            left_out, found = made.get((c.slug, p.slug)) or _phase(run, store, c, p, key)
            run.left_out.extend(left_out)
            news.setdefault(c.slug, []).append(found)
        for entry in entries:
            for spec in entry.challenge.combined_leaderboards:
                _combined_page(run, store, entry.challenge, spec)
        for line in run.left_out:
            log(line)
        feeds.write(wanted, store=store, entries=entries, news=news, now=now, site_url=site_url, memo=caches.memo.get,
                    added=caches.added)
        _reference(wanted, caches.memo)
        caches.prune()  # after the feeds and the reference, which the memo keeps too
        wanted[Path(NAV_FILE)] = (json.dumps(navigation(entries, wanted), indent=1) + "\n").encode()
        for path in sorted(assets.rglob("*")) if assets.is_dir() else []:
            if path.is_file():
                wanted[Path("assets", path.relative_to(assets))] = path.read_bytes()
        caches.sync(wanted)


def withheld_records(results: list[Result], status: str) -> list[dict[str, Any]]:
    """A blind phase's successful results in order of submission: listing them by score would tell it."""
    done = sorted((r for r in results if r.status == "succeeded"), key=lambda r: (r.created_at, r.participant))
    return [{"participant": r.participant, "submission": r.submission, "status": status, "submitted": r.created_at}
            for r in done]


def _combined_page(run: _Run, store: Store, challenge: Challenge, spec: CombinedLeaderboard) -> None:
    """A leaderboard over several phases; withheld while any of them is a blind phase still open."""
    phases = {slug: store.phase(challenge.slug, slug) for slug, _ in spec.phases}
    withheld = next((shown.note for p in phases.values() if not (shown := visibility(p, now=run.now)).scores), "")
    rows = [] if withheld else combined(spec, {
        slug: phase_leaderboard(store.paths, p, store.published(challenge.slug, p, now=run.now))
        for slug, p in phases.items()})
    page = run.env.get_template("combined.md.j2").render(challenge=challenge, spec=spec, phases=phases, rows=rows,
                                                         withheld=withheld)
    run.wanted[Path(challenge.slug, LEADERBOARDS, f"{spec.slug}.md")] = page.encode()


def _phase(run: _Run, store: Store, challenge: Challenge, phase: Phase,
           key: str | None) -> tuple[list[str], feeds.News]:
    """A phase's files, with what it left out and its feed entries, from the cache where none of their inputs
    changed (`key`, from `cache.phase_keys`): a new result costs its own phase, not every phase's results again."""
    return run.cache.phase(key, partial(_phase_files_of, run, store, challenge, phase), run.wanted)


def _phase_files_of(run: _Run, store: Store, challenge: Challenge,
                    phase: Phase) -> tuple[dict[Path, bytes], tuple[list[str], feeds.News]]:
    """A phase's files (`_phase_files`) of its results that verify, with what it left out and its feed entries."""
    sub = replace(run, wanted={}, left_out=[])
    checked = store.checked(phase.challenge, phase.slug)
    refused = [(path, check) for path, _, check in checked if check and not store.publishable(check)]
    sub.left_out += [f"{path.relative_to(store.root)}: not published, it does not verify: {check.reason}"
                     for path, check in refused]
    published = store.ranked(phase, [r for _, r, check in checked if store.publishable(check)], now=run.now)
    checks = {f"{r.participant}/{r.submission}": check for _, r, check in checked if check is not None}
    _phase_files(sub, challenge, phase, published, checks=checks,
                 refused=[f"{path.parent.name}/{path.stem}: {check.reason}" for path, check in refused])
    return sub.wanted, (sub.left_out, feeds.result_entries(phase, published, now=run.now))


def _phase_files(run: _Run, challenge: Challenge, phase: Phase, results: list[Result], *,
                 checks: dict[str, Check] | None = None, refused: list[str] | None = None) -> None:
    """A phase's leaderboard page, its downloads and snapshots, its result viewer and result JSON.
    `checks`: each result's verification (participant/id); `refused`: what was left out as not verifying."""
    checks = checks or {}
    origins = {f"{r.participant}/{r.submission}": r.provenance for r in results if r.provenance}
    trail = Trail(checks, origins, refused or [], changes(results))
    folder = Path(challenge.slug, LEADERBOARDS, phase.slug)
    shown = visibility(phase, now=run.now)
    made = Rows(phase)  # the snapshots rank mostly the same results again
    board = phase_leaderboard(run.history.store.paths, phase, results, made=made)
    excluded = board.exclusions
    viewer = Path(challenge.slug, "results", phase.slug)
    about, pdfs = _submission_details(run, phase, viewer, results)
    if shown.scores:
        table, header = records(board), fields(phase)
        snapshots = _snapshots(run, phase, folder, results, excluded, made)
        uncertainty = _uncertainty(run, phase, board, results)
        if uncertainty is not None:
            name, data = data_file("uncertainty", uncertainty, records=len(results))
            run.wanted[folder / name] = data
        page = PhasePage(challenge, phase, board, None, [], snapshots, json.loads(uncertainty) if uncertainty else None,
                         details=about, supplementary=pdfs, trail=trail)
    else:
        status = f"succeeded — {shown.note}"
        ranked = [r for r in results if f"{r.participant}/{r.submission}" not in excluded]
        table, header = withheld_records(ranked, status), WITHHELD_FIELDS
        page = PhasePage(challenge, phase, board, status, table, [], details=about, supplementary=pdfs, trail=trail)
    name, data = data_file("leaderboard", json_bytes(table), records=len(results))
    run.wanted[folder / name] = data
    run.wanted[folder / "leaderboard.csv"] = to_csv(table, header).encode()
    publics, published_records = [], {}
    for result in results:
        key = f"{result.participant}/{result.submission}"
        published = replace(public_record(result, phase, shown), details=about.get(key))
        publics.append(published)
        extra: dict[str, object] = {"excluded": excluded[key]} if key in excluded else {}
        extra |= {"supplementary_file": f"{result.submission}.supplementary.pdf"} if key in pdfs else {}
        extra |= {"verification": trail.verification(key)}
        extra |= {"run": run_command(result)} if not_runnable(phase, result) is None else {}
        # A public record never has logs. Its signature was checked for `verification` and stays in the
        # repository, where `challenge verify` reads it: on the site it would be a fifth of a shard's bytes.
        public = {k: v for k, v in vars(published).items() if k not in ("logs", "signature")}
        published_records[key] = {**public, **extra}
    shards, files = result_files(viewer, published_records)
    run.wanted.update(files)
    unranked = {(row.participant, row.submission) for row in board.rows if row.rank is None}
    if shown.scores and (sealed := [r for r in results if r.withheld and r.status == "succeeded" and (
            not r.metrics or (r.participant, r.submission) in unranked)]):
        run.left_out.append(f"{challenge.slug}/{phase.slug}: {len(sealed)} result(s) published without their sealed "
                            "part (scores, per-case values): build with the publish key (CHALLENGE_PUBLISH_KEY)")
    # Public records: withheld times count for none.
    page = replace(page, duration=average_job_duration(publics), shards=shards, data_suffix=data_suffix(len(results)))
    run.wanted[folder.parent / f"{phase.slug}.md"] = _render(run, "leaderboard.md.j2", page=page)
    run.wanted[viewer / "view.md"] = _render(run, "result.md.j2", page=page)


def run_command(result: Result) -> str:
    """What the result page offers to type in a clone of the repository to run this result's algorithm."""
    path = result_path(result.challenge, result.phase, result.participant, result.submission)
    return f"challenge run {shlex.quote(path)} --input MY_CASES --output MY_OUTPUTS"


def _submission_details(run: _Run, phase: Phase, viewer: Path,
                        results: list[Result]) -> tuple[dict[str, SubmissionDetails], set[str]]:
    """Each result's submission details as the phase shows them (participant/id -> details, empty ones left out),
    and the results whose supplementary PDF is published beside their JSON in `viewer` (as pinned, or not at all):
    its method report where one was added after the evaluation (the newer PDF), else the submission's own."""
    store, about, pdfs = run.history.store, {}, set()
    reports = method_reports(store, phase.challenge, phase.slug) if phase.show_supplementary_file_link else {}
    for result in results:
        key = f"{result.participant}/{result.submission}"
        found = submission_details(store, result)
        details = shown_details(phase, found) if found is not None else None
        if details is not None and not details.empty:
            about[key] = details
        own = supplementary_file(store, result, details) if details is not None else None
        if pdf := reports.get(key) or own:
            run.wanted[viewer / result.participant / f"{result.submission}.supplementary.pdf"] = pdf.read_bytes()
            pdfs.add(key)
    return about, pdfs


def _render(run: _Run, template: str, **context: Any) -> bytes:
    return run.env.get_template(template).render(**context).encode()


def _snapshots(run: _Run, phase: Phase, folder: Path, current: list[Result], excluded: Mapping[str, str],
               made: Rows) -> list[str]:
    """The table as it stood at the end of each day it changed, from git, in one file (`snapshots_file`);
    none outside git.
    Only results the public may see now appear (approvals, where auto-publish is off). A result
    committed as a public record without its scores takes them from `current` (unsealed now)."""
    try:
        snapshots = run.history.snapshots(phase.challenge, phase.slug)
    except HistoryError:
        return []
    store = run.history.store
    approvals = "" if phase.auto_publish_new_results else sorted(store.approvals(phase.challenge, phase.slug))
    # Only a phase that withholds commits public records without scores; only its key depends on `whole`.
    whole = {(r.participant, r.submission): r for r in current if not r.withheld} if withholds(phase) else {}
    # The current results as committed (public records, not unsealed), to spare reading their blobs again.
    files = {result_path(r.challenge, r.phase, r.participant, r.submission): r
             for r in current if not r.withheld and not withholds(phase)}
    newest_first: list[bytes] = []
    for snap in reversed(snapshots):
        def compute(snap: Snapshot = snap) -> bytes:
            then = [whole.get((r.participant, r.submission), r) if r.withheld else r
                    for r in run.history.results(snap, files)]
            board = leaderboard(phase, store.ranked(phase, then, now=run.now), excluded=excluded, made=made)
            return json_bytes({"as_of": snap.day.isoformat(), "commit": snap.commit, "fields": fields(phase),
                               "rows": records(board, SNAPSHOT_ROWS), "total": len(board.rows)})
        key = f"snapshot {phase!r} {snap.commit} {approvals} {sorted(whole)} {sorted(excluded)} {signers(store)}"
        newest_first.append(run.cache.memo.get(key, compute))
    if newest_first:
        run.wanted[folder / HISTORY_FILE] = snapshots_file(newest_first)
    return [snap.day.isoformat() for snap in reversed(snapshots)]


def _uncertainty(run: _Run, phase: Phase, board: Leaderboard, results: list[Result]) -> bytes | None:
    """ranking_uncertainty as JSON, bootstrapped again only when the per-case values change."""
    # Here, not at the top: a build whose phases are all computed elsewhere (`precomputing`) never needs it.
    from runner.ranking.phase_uncertainty import bootstrap_summary, case_values

    found = case_values(phase, board, results, teams=UNCERTAINTY_TEAMS)
    if found is None:
        return None
    ranked = len({row.participant for row in board.rows if row.rank is not None})
    return run.cache.memo.get(f"bootstrap {ranked} {found.key()}",
                              lambda: json_bytes({**bootstrap_summary(found), "teams_ranked": ranked}))


def _reference(wanted: dict[Path, bytes], memo: Memo) -> None:
    """The organizers' field reference and each file kind's JSON Schema, both derived from the one
    declaration of the fields, so editors with the YAML language server can point at the site. From
    the code alone, so kept in the memo (whose keys hold the code): making them took 0.16 s a build."""
    def make() -> bytes:
        files = {"reference.md": reference_markdown().encode()}
        for name, schema in json_schemas().items():
            files[f"schemas/{name}.schema.json"] = (json.dumps(schema, indent=2) + "\n").encode()
        return json.dumps({rel: data.decode() for rel, data in files.items()}).encode()
    for rel, text in json.loads(memo.get("the field reference and the schemas", make)).items():
        wanted[Path(rel)] = text.encode()


def navigation(entries: list[CatalogEntry], wanted: dict[Path, bytes]) -> list[Any]:
    """The site's navigation, as mkdocs.yml's `nav` writes it: the home page and the guides, then
    each challenge under its name (catalog order), its own pages, then its leaderboards in phase
    order. Pages are named by their titles, except the leaderboards, named after their phases.
    A challenge listed from elsewhere with no page here is in the catalog only; organizations have
    their index, which links each one's page."""
    pages = sorted(str(p) for p in wanted if p.suffix == ".md")
    nav: list[Any] = ["index.md", *(p for p in pages if "/" not in p and p != "index.md")]
    nav += [p for p in pages if p == f"{catalog.ORGANIZATIONS}/index.md"]
    challenges: list[dict[str, Any]] = []
    for entry in entries:
        slug = entry.challenge.slug
        own = [p for p in pages if p.startswith(f"{slug}/") and not p.startswith((f"{slug}/leaderboard/",
                                                                                  f"{slug}/results/"))]
        own.sort(key=lambda p: (p != f"{slug}/index.md", p))
        title = templating.mkdocs_title  # the theme writes a navigation title into every page as it is
        boards = [{title(phase.title): f"{slug}/leaderboard/{phase.slug}.md"} for phase in entry.phases]
        boards += [{title(spec.title): f"{slug}/leaderboard/{spec.slug}.md"}
                   for spec in entry.challenge.combined_leaderboards]
        if own or boards:
            challenges.append({title(entry.challenge.name): own + ([{"Leaderboards": boards}] if boards else [])})
    return nav + grouped(challenges)


def grouped(challenges: list[dict[str, Any]]) -> list[Any]:
    """The challenges' sections as they are, or past NAV_GROUP of them in sections of NAV_GROUP, each named
    after its first and last: the theme writes every section's link into every page (about 500 bytes each,
    so 300 challenges put 150 KB of navigation in each page, a quarter of such a site), and in a group
    it writes only the open group's."""
    if len(challenges) <= NAV_GROUP:
        return challenges
    groups = [challenges[i:i + NAV_GROUP] for i in range(0, len(challenges), NAV_GROUP)]
    return [{f"{next(iter(group[0]))} – {next(iter(group[-1]))}": group} for group in groups]


def _fallback_page(entry: CatalogEntry) -> bytes:
    """A challenge's own page where its folder has no index.md: its name and headline, as text."""
    name = entry.challenge.name
    return (f"---\ntitle: {templating.front_matter_title(name)}\n---\n\n# {templating.text(name)}\n\n"
            f"{templating.text(entry.challenge.headline)}\n").encode()


def _phases_section(run: _Run, entry: CatalogEntry) -> None:
    """The challenge's timeline and its phases' facts on its own page, at its `<!-- phases -->` mark or at its end."""
    timeline = milestones(entry.challenge, entry.phases)
    page = Path(entry.challenge.slug, "index.md")
    if not entry.phases and not (timeline and page in run.wanted):  # a listing's page is its own website
        return
    parents = {p.slug: p for p in entry.phases}
    facts = [phase_facts(entry.challenge, p, parents=parents, ranking=ranking_method(p), now=run.now,
                         repo=run.repo) for p in entry.phases]
    section = run.env.get_template("phases.md.j2").render(facts=facts, timeline=timeline,
                                                          upcoming=next_milestone(timeline, run.now))
    text = run.wanted.get(page, _fallback_page(entry)).decode()
    text = text.replace(PHASES_MARK, section) if PHASES_MARK in text else text.rstrip() + "\n\n" + section
    run.wanted[page] = text.encode()


def _data_section(run: _Run, entry: CatalogEntry) -> None:
    """The challenge's data sets on its own page, at its `<!-- data -->` mark or at its end."""
    if not entry.challenge.data:
        return
    page = Path(entry.challenge.slug, "index.md")
    section = run.env.get_template("data.md.j2").render(challenge=entry.challenge)
    text = run.wanted.get(page, _fallback_page(entry)).decode()
    text = text.replace(DATA_MARK, section) if DATA_MARK in text else text.rstrip() + "\n\n" + section
    run.wanted[page] = text.encode()


def _site_pages(folder: Path, wanted: dict[Path, bytes]) -> None:
    """Site-wide pages (guides for organizers and participants) kept beside the challenges."""
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.is_file() and path.suffix.lower() in PAGE_SUFFIXES and path.name != "index.md":
            wanted[Path(path.name)] = path.read_bytes()


def _organizer_pages(folder: Path, wanted: dict[Path, bytes], prefix: Path) -> None:
    # Top level first, so the (large) results and submissions folders are never walked.
    for top in sorted(p for p in folder.iterdir() if may_hold_pages(p.name)):
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if path.is_file() and organizer_page(rel := path.relative_to(folder).as_posix()):
                wanted[prefix / rel] = path.read_bytes()
