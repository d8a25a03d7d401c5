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
rebuilds what changed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import jinja2
import orjson
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # it publishes no type information

from runner.codekey import code_key
from runner.ranking.leaderboard import (
    Leaderboard,
    Rows,
    combined,
    leaderboard,
)
from runner.ranking.phase_uncertainty import bootstrap_summary, case_values
from runner.ranking.tables import fields, fmt, records, to_csv
from runner.site import catalog, feeds, templating
from runner.site.build import NAV_FILE
from runner.site.catalog import CatalogEntry, catalog_entry
from runner.site.facts import phase_facts, size_text
from runner.site.reference import reference_markdown
from runner.tree.details import submission_details, supplementary_file
from runner.tree.exclusions import ranking_exclusions, short
from runner.tree.history import History, HistoryError, Snapshot
from runner.tree.model import (
    Challenge,
    CombinedLeaderboard,
    Phase,
    Provenance,
    Result,
    SubmissionDetails,
)
from runner.tree.paths import NOT_PAGES, result_path
from runner.tree.policy import public_record, visibility, withholds
from runner.tree.records import write_atomic
from runner.tree.schema import json_schemas
from runner.tree.store import Store
from runner.tree.verification import Check

PHASES_MARK = "<!-- phases -->"
DATA_MARK = "<!-- data -->"
PAGE_SUFFIXES = {".md", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf", ".csv"}
METHOD_NAMES = {"absolute": "Absolute ranking", "mean": "Mean of ranks", "median": "Median of ranks",
                "aggregate-then-rank": "Aggregate then rank", "rank-then-aggregate": "Rank then aggregate",
                "test-then-rank": "Test then rank", "rank-then-average": "Rank then average (FLARE)"}
LISTED = {"all": "every successful result is listed", "best": "each participant's best result is listed",
          "most_recent": "each participant's most recent result is listed"}
WITHHELD_FIELDS = ["participant", "submission", "status", "submitted"]
# A phase with more results bundles each participant's public records in one JSON file: staged files
# then grow with participants, not results (Zensical stalls near 64,000 files; MkDocs copies each one).
BUNDLE_OVER = 50


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
    bundled: bool = False  # results published as <participant>.json ({id: record}), see BUNDLE_OVER
    trail: Trail = field(default_factory=lambda: Trail({}, {}, [], []))

    @property
    def method_name(self) -> str:
        return METHOD_NAMES[self.phase.scoring_method_choice]

    @property
    def method(self) -> str:
        return ranking_method(self.phase)


class Memo:
    """Outputs that depend only on their inputs (a dated snapshot, a bootstrap), kept between runs
    in `folder` under a hash of those inputs and of `code` (`_code`: every stage that shapes them),
    since history does not change, a rebuild ranks only what is new. No folder: nothing is kept."""

    def __init__(self, folder: Path | None, code: str = ""):
        self.folder, self.code = folder, code
        self.used: set[str] = set()

    def get(self, inputs: str, compute: Callable[[], bytes]) -> bytes:
        if self.folder is None:
            return compute()
        name = self._name(inputs)
        self.used.add(name)  # `prune` keeps it
        path = self.folder / name
        if path.is_file():
            return path.read_bytes()
        data = compute()
        write_atomic(path, data, durable=False)
        return data

    def holds(self, inputs: str) -> bool:
        """Whether an entry is kept, without marking it used."""
        return self.folder is not None and (self.folder / self._name(inputs)).is_file()

    def _name(self, inputs: str) -> str:
        return hashlib.sha256(f"{self.code}\n{inputs}".encode()).hexdigest()

    def prune(self) -> None:
        """Drop what this run did not use: superseded snapshots and bootstraps."""
        for path in self.folder.iterdir() if self.folder and self.folder.is_dir() else []:
            if path.name not in self.used:
                path.unlink()


Staged = tuple[int, int, str]  # a staged file's size, modification time (ns) and digest, as written


@dataclass
class _Run:
    """What one generation shares across phases."""

    env: jinja2.Environment
    history: History
    memo: Memo
    now: dt.datetime
    phases: Memo = field(default_factory=lambda: Memo(None))  # each phase's files whole, beside `memo`
    wanted: dict[Path, bytes] = field(default_factory=dict)
    # By path relative to the stage as text (unpickling thousands of Paths costs more than the rest):
    digests: dict[str, str] = field(default_factory=dict)  # of the phases' files, known without hashing again
    staged: dict[str, Staged] = field(default_factory=dict)  # the staging folder's files as the last run left them
    kept: set[str] = field(default_factory=set)  # files of unchanged phases that the staging folder holds as wanted
    stage: Path = Path()
    left_out: list[str] = field(default_factory=list)  # what this build could not publish, and why


def environment(templates: Path) -> jinja2.Environment:
    """The pages' templates: every value text unless marked safe (`templating`)."""
    return templating.environment(templates, fmt=fmt, cell=cell, size=size_text, href=href)


def href(url: str) -> str:
    """A URL safe as a Markdown link target inside a table cell (no bracket, pipe or space ends it)."""
    return quote(url, safe=":/?#[]@!$&'*+,;=%~-._")


def cell(text: str) -> str:
    """Text on one line, as a Markdown table cell needs it (its `|` is escaped with all text: `templating`)."""
    return " ".join(str(text).split())


def generate(store: Store, stage: Path, templates: Path, assets: Path, *, today: dt.date | None = None,
             now: dt.datetime | None = None, cache: Path | None = None,
             log: Callable[[str], None] = lambda line: None) -> list[Path]:
    """Write the whole staging folder; returns the files written or kept. Stale files are removed.
    `cache` keeps history snapshots and bootstraps between runs (see Memo). Results are published as
    `policy.public_record` allows now; what needed the publish key and did not have it is `log`ged."""
    now = now or dt.datetime.now(dt.UTC)
    today = today or now.date()
    manifest = cache and cache.with_name(f"{cache.name}-stage.pickle")
    history = History(store, cache=cache and cache.with_name(f"{cache.name}-history.pickle"))
    code = _code(templates)
    run = _Run(environment(templates), history, Memo(cache, code), now,
               Memo(cache and cache.with_name(f"{cache.name}-phases"), code), staged=_staged(manifest), stage=stage)
    wanted = run.wanted
    entries = [catalog_entry(store, slug, today) for slug in store.slugs()]
    news: dict[str, list[feeds.Entry]] = {}  # per challenge, its newest results for its feed
    _site_pages(store.base, wanted)
    keys = {(e.challenge.slug, p.slug): _phase_key(run, store, e.challenge, p) for e in entries for p in e.phases}
    staged = stage.is_dir() and bool(run.staged)  # else every phase's files are to be written again
    _precompute(run, store, [(e.challenge, p, key) for e in entries for p in e.phases
                             if (key := keys[e.challenge.slug, p.slug]) and not (staged and run.phases.holds(key))])
    for entry in entries:
        _organizer_pages(store.base / entry.challenge.slug, wanted, Path(entry.challenge.slug))
        _phases_section(run, entry)
        _data_section(run, entry)
        for phase in entry.phases:
            news.setdefault(entry.challenge.slug, []).extend(
                _phase(run, store, entry.challenge, phase, keys[entry.challenge.slug, phase.slug]))
        for spec in entry.challenge.combined_leaderboards:
            _combined_page(run, store, entry.challenge, spec)
    for line in run.left_out:
        log(line)
    site_url = catalog.site_url(store.root)
    catalog.write(wanted, store=store, env=run.env, entries=entries, today=today, site_url=site_url)
    feeds.write(wanted, store=store, entries=entries, news=news, now=now, site_url=site_url, memo=run.memo.get)
    run.memo.prune()  # after the feeds, which the memo keeps too
    run.phases.prune()
    _reference(wanted)
    wanted[Path(NAV_FILE)] = (json.dumps(navigation(entries, wanted), indent=1) + "\n").encode()
    for path in sorted(assets.rglob("*")) if assets.is_dir() else []:
        if path.is_file():
            wanted[Path("assets", path.relative_to(assets))] = path.read_bytes()
    return _sync(run, manifest)


def _code(templates: Path) -> str:
    """What turns the tree into pages: this module and all it imports (`codekey`), and the templates."""
    files = sorted(p for p in templates.rglob("*") if p.is_file()) if templates.is_dir() else []
    return code_key([__name__], extra=files)


def withheld_records(results: list[Result], status: str) -> list[dict[str, Any]]:
    """A blind phase's successful results in order of submission: listing them by score would tell it."""
    done = sorted((r for r in results if r.status == "succeeded"), key=lambda r: (r.created_at, r.participant))
    return [{"participant": r.participant, "submission": r.submission, "status": status, "submitted": r.created_at}
            for r in done]


def ranking_method(phase: Phase) -> str:
    """The ranking method explained in one sentence (its name is METHOD_NAMES')."""
    score, options, method = phase.score.title, phase.ranking_options, phase.scoring_method_choice
    better = {"desc": "higher is better", "asc": "lower is better"}
    if method == "absolute":
        how = f"results are ordered on {score} alone ({better[phase.score.order]})"
    elif method in ("mean", "median"):
        ranked = "; ".join(f"{c.title}: {better[c.order]}" for i, c in enumerate(phase.columns)
                           if i == 0 or not c.exclude_from_ranking)
        how = (f"each result is ranked on every ranked column separately ({ranked}), then ordered by the "
               f"{method} of those ranks")
    elif method == "aggregate-then-rank":
        how = f"results are ordered on the {options.aggregate} of their per-case {score} ({better[phase.score.order]})"
    elif method == "rank-then-aggregate":
        how = (f"the results are ranked on {score} in each case ({better[phase.score.order]}), then ordered by "
               f"the {options.aggregate} of their per-case ranks")
    elif method == "rank-then-average":
        return rank_then_average(phase, listed=listed(phase))
    else:
        adjusted = "" if options.p_adjust == "none" else f", p adjusted by {options.p_adjust}"
        how = (f"every pair of results is compared on {score} by a one-sided Wilcoxon signed-rank test over cases "
               f"(p ≤ {options.alpha}{adjusted}), and results are ordered by the share of the others they beat")
    return (f"{how}, equal ones sharing a rank (1, 2, 2, 4); {listed(phase)}, "
            "and one missing a ranked value is listed without a rank.")


def listed(phase: Phase) -> str:
    """Which results the leaderboard lists, and of which (L2L's best of the last N)."""
    which = LISTED[phase.result_display_choice]
    if phase.best_of_last:
        return f"only each participant's last {phase.best_of_last} results compete; {which}"
    return which


def rank_then_average(phase: Phase, *, listed: str) -> str:
    """FLARE's method in one sentence: what is ranked per case, how the ranks combine, and what a
    failed case counts as (its own rule, so it differs from the other methods' closing words)."""
    better = {"desc": "higher is better", "asc": "lower is better"}
    weighted = len({m.weight for m in phase.ranking_metrics}) > 1
    named = [f"{m.title} ({better[m.order]}{f', weight {m.weight:g}' if weighted else ''})"
             for m in phase.ranking_metrics]
    metrics = ", ".join(named[:-1]) + f" and {named[-1]}" if len(named) > 1 else "".join(named)
    return (f"in every case each result is ranked on {metrics}, a failed or missing case ranking last; a result's "
            f"{'weighted ' if weighted else ''}mean rank divided by the number of results ranked orders them, the "
            f"smallest first, equal ones sharing a rank (1, 2, 2, 4); {listed}, and one with no value at all is "
            "listed without a rank.")


def _combined_page(run: _Run, store: Store, challenge: Challenge, spec: CombinedLeaderboard) -> None:
    """A leaderboard over several phases; withheld while any of them is a blind phase still open."""
    phases = {slug: store.phase(challenge.slug, slug) for slug, _ in spec.phases}
    withheld = next((shown.note for p in phases.values() if not (shown := visibility(p, now=run.now)).scores), "")
    rows = [] if withheld else combined(spec, {slug: leaderboard(p, results, excluded=ranking_exclusions(store.paths, p,
                                                                                                        results))
                                            for slug, p in phases.items()
                                            for results in [store.published(challenge.slug, p, now=run.now)]})
    page = run.env.get_template("combined.md.j2").render(challenge=challenge, spec=spec, phases=phases, rows=rows,
                                                         withheld=withheld)
    run.wanted[Path(challenge.slug, "leaderboard", f"{spec.slug}.md")] = page.encode()


Pending = tuple[Challenge, Phase, str]  # a phase the memo lacks, and its key (`_phase_key`)
_forked: tuple[_Run, Store, list[Pending]] | None = None  # what `_precompute`'s workers inherit


def _precompute(run: _Run, store: Store, pending: list[Pending]) -> None:
    """Compute the phases the memo lacks in forked worker processes, one per core, each into the memo,
    so that the loop over phases reads them from there: phases are independent, and a cold build spends
    most of its time in them. Only where the memo has a folder, and not beside other threads (a fork
    copies only this one, and not the locks the others may hold)."""
    workers = min(len(pending), os.cpu_count() or 1)
    if workers < 2 or run.phases.folder is None or threading.active_count() > 1:
        return
    global _forked
    _forked = (run, store, pending)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_one_thread) as pool:
            for staged in pool.map(_precompute_one, range(len(pending))):
                run.staged.update(staged)
    except BrokenProcessPool:  # a worker died (out of memory, say): the loop over phases computes what it left
        pass
    finally:
        _forked = None


def _one_thread() -> None:
    """A worker's numerical libraries use one thread: one worker per core already uses every core, and
    OpenBLAS' threads, left to spin beside the other workers, took a fifth of the cold build's time."""
    threadpool_limits(1)


def _precompute_one(index: int) -> dict[str, Staged]:
    """One pending phase into the memo, its files written to the staging folder; returns how they
    were written, so the loop over phases finds them staged (`_holds`) and neither reads nor writes them."""
    assert _forked is not None
    run, store, pending = _forked
    challenge, phase, key = pending[index]
    sub = replace(run, wanted={}, digests={}, kept=set(), left_out=[])
    try:
        _phase(sub, store, challenge, phase, key)
        # What it found staged already (another build got there first) is not in `wanted`: nothing to write.
        return {str(rel): _put(sub.stage, str(rel), data, sub.digests[str(rel)]) for rel, data in sub.wanted.items()}
    except Exception:  # the loop over phases computes this phase again and reports it there
        return {}


def _phase(run: _Run, store: Store, challenge: Challenge, phase: Phase, key: str | None) -> list[feeds.Entry]:
    """A phase's files (`_phase_files`) and its feed entries. Where none of their inputs changed (`key`,
    from `_phase_key`) and the staging folder holds the files as the last run wrote them, nothing is
    computed or read: a new result costs its own phase, not every phase's results again."""
    files: dict[Path, bytes] | None = None

    def compute() -> bytes:
        nonlocal files
        sub = replace(run, wanted={}, left_out=[])
        used = set(run.memo.used)
        checked = store.checked(phase.challenge, phase.slug)
        refused = [(path, check) for path, _, check in checked if check and not store.publishable(check)]
        sub.left_out += [f"{path.relative_to(store.root)}: not published, it does not verify: {check.reason}"
                         for path, check in refused]
        published = store.ranked(phase, [r for _, r, check in checked if store.publishable(check)], now=run.now)
        checks = {f"{r.participant}/{r.submission}": check for _, r, check in checked if check is not None}
        _phase_files(sub, challenge, phase, published, checks=checks,
                     refused=[f"{path.parent.name}/{path.stem}: {check.reason}" for path, check in refused])
        files, news = sub.wanted, feeds.result_entries(phase, published, now=run.now)
        digests = {str(rel): _digest(data) for rel, data in files.items()}
        return pickle.dumps((digests, sub.left_out, news, run.memo.used - used), pickle.HIGHEST_PROTOCOL)
    pickled = pickle.loads(run.phases.get(key, compute) if key else compute())
    digests, left_out, news, used = cast(tuple[dict[str, str], list[str], list[feeds.Entry], set[str]],
                                         pickled)  # what compute() pickled
    if files is None and not all(_holds(run, rel, digest) for rel, digest in digests.items()):
        compute()  # the staging folder lost or changed some of them: the same inputs make them again
    if files is None:
        run.kept.update(digests)
    else:
        run.wanted.update(files)
    run.digests.update(digests)
    run.left_out.extend(left_out)
    run.memo.used.update(used)  # the snapshots and bootstrap it holds stay in the memo
    return news


def _phase_key(run: _Run, store: Store, challenge: Challenge, phase: Phase) -> str | None:
    """Everything a phase's pages depend on, read without parsing a result: the records, what the
    policy shows now, the code and templates, each file of the challenge's folder but other phases'
    results, and the phase's snapshots in git. Result files count by size, time and inode (the runner
    replaces them whole); the few others by content, as an editor may rewrite one within a clock tick.
    None where results may be sealed: those depend on keys and copies outside the folder, so that
    phase is always computed."""
    if withholds(phase):
        return None
    try:
        snapshots = run.history.snapshot_days(phase.challenge, phase.slug)
    except HistoryError:
        snapshots = []
    files: list[str] = []
    _stat_files(store.base / challenge.slug, "", files, skip={"results": {phase.slug}})
    return (f"phase {challenge!r} {phase!r} {visibility(phase, now=run.now)!r} {snapshots} {_signers(store)}\n"
            + "\n".join(sorted(files)))


def _signers(store: Store) -> str:
    """Which runner keys the store verifies results with: part of every key of what shows results."""
    return f"signers {store.verifier.digest if store.verifier else 'unchecked'}"


def _stat_files(folder: str | Path, rel: str, out: list[str], *, skip: dict[str, set[str]]) -> None:
    """Each file under `folder` as one line (os.scandir: a phase holds thousands of results). In a
    folder named in `skip` only the subfolders named there are walked; the results' subfolders are
    the only ones holding results, which count by size, time and inode. In no order: the caller sorts."""
    with os.scandir(folder) as found:
        entries = list(found)
    for entry in entries:
        name = f"{rel}{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in skip:  # `skip` is for the top folder only: subfolders get none
                _stat_files(entry.path, f"{name}/", out, skip={})
            else:
                for sub in skip[entry.name]:
                    if os.path.isdir(os.path.join(entry.path, sub)):
                        _stat_files(os.path.join(entry.path, sub), f"{name}/{sub}/", out, skip={})
        elif name.startswith("results/"):
            info = entry.stat(follow_symlinks=False)
            out.append(f"{name} {info.st_size} {info.st_mtime_ns} {info.st_ino}")
        else:
            out.append(f"{name} {hashlib.sha256(Path(entry.path).read_bytes()).hexdigest()}")


def _phase_files(run: _Run, challenge: Challenge, phase: Phase, results: list[Result], *,
                 checks: dict[str, Check] | None = None, refused: list[str] | None = None) -> None:
    """A phase's leaderboard page, its downloads and snapshots, its result viewer and result JSON.
    `checks`: each result's verification (participant/id); `refused`: what was left out as not verifying."""
    checks = checks or {}
    origins = {f"{r.participant}/{r.submission}": r.provenance for r in results if r.provenance}
    trail = Trail(checks, origins, refused or [], changes(results))
    folder = Path(challenge.slug, "leaderboard", phase.slug)
    shown = visibility(phase, now=run.now)
    excluded = ranking_exclusions(run.history.store.paths, phase, results)
    made = Rows(phase)  # the snapshots rank mostly the same results again
    board = leaderboard(phase, results, excluded=excluded, made=made)
    viewer = Path(challenge.slug, "results", phase.slug)
    about, pdfs = _submission_details(run, viewer, results)
    bundled = len(results) > BUNDLE_OVER
    if shown.scores:
        table, header = records(board), fields(phase)
        snapshots = _snapshots(run, phase, folder, results, excluded, made)
        uncertainty = _uncertainty(run, phase, board, results)
        if uncertainty is not None:
            run.wanted[folder / "uncertainty.json"] = uncertainty
        page = PhasePage(challenge, phase, board, None, [], snapshots, json.loads(uncertainty) if uncertainty else None,
                         details=about, supplementary=pdfs, bundled=bundled, trail=trail)
    else:
        status = f"succeeded — {shown.note}"
        ranked = [r for r in results if f"{r.participant}/{r.submission}" not in excluded]
        table, header = withheld_records(ranked, status), WITHHELD_FIELDS
        page = PhasePage(challenge, phase, board, status, table, [], details=about, supplementary=pdfs,
                         bundled=bundled, trail=trail)
    run.wanted[folder / "leaderboard.json"] = _json(table)
    run.wanted[folder / "leaderboard.csv"] = to_csv(table, header).encode()
    run.wanted[folder.parent / f"{phase.slug}.md"] = _render(run, "leaderboard.md.j2", page=page)
    run.wanted[viewer / "view.md"] = _render(run, "result.md.j2", page=page)
    bundles: dict[str, dict[str, Any]] = {}
    for result in results:
        key = f"{result.participant}/{result.submission}"
        published = replace(public_record(result, phase, shown), details=about.get(key))
        extra: dict[str, object] = {"excluded": excluded[key]} if key in excluded else {}
        extra |= {"supplementary_file": f"{result.submission}.supplementary.pdf"} if key in pdfs else {}
        extra |= {"verification": trail.verification(key)}
        public = {k: v for k, v in vars(published).items() if k != "logs"}  # a public record never has logs
        if bundled:
            bundles.setdefault(result.participant, {})[result.submission] = {**public, **extra}
        else:
            run.wanted[viewer / result.participant / f"{result.submission}.json"] = _json({**public, **extra})
    for participant, records_of in bundles.items():
        run.wanted[viewer / f"{participant}.json"] = _json(records_of)
    unranked = {(row.participant, row.submission) for row in board.rows if row.rank is None}
    if shown.scores and (sealed := [r for r in results if r.withheld and r.status == "succeeded" and (
            not r.metrics or (r.participant, r.submission) in unranked)]):
        run.left_out.append(f"{challenge.slug}/{phase.slug}: {len(sealed)} result(s) published without their sealed "
                            "part (scores, per-case values): build with the publish key (CHALLENGE_PUBLISH_KEY)")


def _submission_details(run: _Run, viewer: Path, results: list[Result]) -> tuple[dict[str, SubmissionDetails],
                                                                                 set[str]]:
    """Each result's submission details (participant/id -> details, empty ones left out), and the
    results whose supplementary PDF is published beside their JSON in `viewer` (as pinned, or not at all)."""
    store, about, pdfs = run.history.store, {}, set()
    for result in results:
        details = submission_details(store, result)
        if details is None or details.empty:
            continue
        key = f"{result.participant}/{result.submission}"
        about[key] = details
        if pdf := supplementary_file(store, result, details):
            run.wanted[viewer / result.participant / f"{result.submission}.supplementary.pdf"] = pdf.read_bytes()
            pdfs.add(key)
    return about, pdfs


def _render(run: _Run, template: str, **context: Any) -> bytes:
    return run.env.get_template(template).render(**context).encode()


def _snapshots(run: _Run, phase: Phase, folder: Path, current: list[Result], excluded: dict[str, str],
               made: Rows) -> list[str]:
    """The table as it stood at the end of each day it changed, from git; none outside git.
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
    for snap in snapshots:
        def compute(snap: Snapshot = snap) -> bytes:
            then = [whole.get((r.participant, r.submission), r) if r.withheld else r
                    for r in run.history.results(snap, files)]
            rows = records(leaderboard(phase, store.ranked(phase, then, now=run.now), excluded=excluded, made=made))
            return _json({"as_of": snap.day.isoformat(), "commit": snap.commit, "fields": fields(phase), "rows": rows})
        key = f"snapshot {phase!r} {snap.commit} {approvals} {sorted(whole)} {sorted(excluded)} {_signers(store)}"
        run.wanted[folder / "history" / f"{snap.day}.json"] = run.memo.get(key, compute)
    return [snap.day.isoformat() for snap in reversed(snapshots)]


def _uncertainty(run: _Run, phase: Phase, board: Leaderboard, results: list[Result]) -> bytes | None:
    """ranking_uncertainty as JSON, bootstrapped again only when the per-case values change."""
    found = case_values(phase, board, results)
    if found is None:
        return None
    frame, spec = found
    return run.memo.get(f"bootstrap {phase!r} {spec!r}\n{frame.to_csv(index=False)}",
                        lambda: _json(bootstrap_summary(phase, frame, spec)))


def _json(data: Any) -> bytes:
    # orjson: the staged data files are most of a build's bytes (350 MiB at 60,000 results), written 5x
    # faster than by the json module; compact UTF-8 as before, a non-finite number written as null.
    try:
        return orjson.dumps(data, default=vars, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # what orjson does not write (an integer past 64 bits in a metric): as the json module does
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=vars).encode()


def _reference(wanted: dict[Path, bytes]) -> None:
    """The organizers' field reference and each file kind's JSON Schema, both derived from the one
    declaration of the fields, so editors with the YAML language server can point at the site."""
    wanted[Path("reference.md")] = reference_markdown().encode()
    for name, schema in json_schemas().items():
        wanted[Path("schemas", f"{name}.schema.json")] = (json.dumps(schema, indent=2) + "\n").encode()


def navigation(entries: list[CatalogEntry], wanted: dict[Path, bytes]) -> list[Any]:
    """The site's navigation, as mkdocs.yml's `nav` writes it: the home page and the guides, then
    each challenge under its name (catalog order), its own pages, then its leaderboards in phase
    order. Pages are named by their titles, except the leaderboards, named after their phases.
    A challenge listed from elsewhere with no page here is in the catalog only; organizations have
    their index, which links each one's page."""
    pages = sorted(str(p) for p in wanted if p.suffix == ".md")
    nav: list[Any] = ["index.md", *(p for p in pages if "/" not in p and p != "index.md")]
    nav += [p for p in pages if p == f"{catalog.ORGANIZATIONS}/index.md"]
    for entry in entries:
        slug = entry.challenge.slug
        own = [p for p in pages if p.startswith(f"{slug}/") and not p.startswith((f"{slug}/leaderboard/",
                                                                                  f"{slug}/results/"))]
        own.sort(key=lambda p: (p != f"{slug}/index.md", p))
        boards = [{phase.title: f"{slug}/leaderboard/{phase.slug}.md"} for phase in entry.phases]
        boards += [{spec.title: f"{slug}/leaderboard/{spec.slug}.md"} for spec in entry.challenge.combined_leaderboards]
        if own or boards:
            nav.append({entry.challenge.name: own + ([{"Leaderboards": boards}] if boards else [])})
    return nav






def _phases_section(run: _Run, entry: CatalogEntry) -> None:
    """The phases' facts on the challenge's own page, at its `<!-- phases -->` mark or at its end."""
    if not entry.phases:
        return
    page = Path(entry.challenge.slug, "index.md")
    parents = {p.slug: p for p in entry.phases}
    facts = [phase_facts(entry.challenge, p, parents=parents, ranking=ranking_method(p), now=run.now)
             for p in entry.phases]
    section = run.env.get_template("phases.md.j2").render(facts=facts)
    text = run.wanted.get(page, f"# {entry.challenge.name}\n\n{entry.challenge.headline}\n".encode()).decode()
    text = text.replace(PHASES_MARK, section) if PHASES_MARK in text else text.rstrip() + "\n\n" + section
    run.wanted[page] = text.encode()


def _data_section(run: _Run, entry: CatalogEntry) -> None:
    """The challenge's data sets on its own page, at its `<!-- data -->` mark or at its end."""
    if not entry.challenge.data:
        return
    page = Path(entry.challenge.slug, "index.md")
    section = run.env.get_template("data.md.j2").render(challenge=entry.challenge)
    text = run.wanted.get(page, f"# {entry.challenge.name}\n\n{entry.challenge.headline}\n".encode()).decode()
    text = text.replace(DATA_MARK, section) if DATA_MARK in text else text.rstrip() + "\n\n" + section
    run.wanted[page] = text.encode()




def _site_pages(folder: Path, wanted: dict[Path, bytes]) -> None:
    """Site-wide pages (guides for organizers and participants) kept beside the challenges."""
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.is_file() and path.suffix.lower() in PAGE_SUFFIXES and path.name != "index.md":
            wanted[Path(path.name)] = path.read_bytes()


def _organizer_pages(folder: Path, wanted: dict[Path, bytes], prefix: Path) -> None:
    # Top level first, so the (large) results and submissions folders are never walked.
    for top in sorted(p for p in folder.iterdir() if p.name not in NOT_PAGES):
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if path.is_file() and path.suffix.lower() in PAGE_SUFFIXES:
                wanted[prefix / path.relative_to(folder)] = path.read_bytes()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _staged(manifest: Path | None) -> dict[str, Staged]:
    try:
        return pickle.loads(manifest.read_bytes()) if manifest else {}
    except (OSError, pickle.UnpicklingError, EOFError, ValueError):
        return {}


def _holds(run: _Run, rel: str, digest: str) -> bool:
    """Whether the staging folder holds `rel` as the last run wrote it, with this digest."""
    try:
        info = os.stat(os.path.join(run.stage, rel))
    except (FileNotFoundError, NotADirectoryError):
        return False
    return run.staged.get(rel) == (info.st_size, info.st_mtime_ns, digest)


def _sync(run: _Run, manifest: Path | None) -> list[Path]:
    """Write what changed and remove what is no longer wanted; unchanged files keep their times, so a
    builder copies only what changed. `manifest` records each phase file's size, time and digest as
    written: next time, a file found so (`_holds`) is neither read nor compared."""
    stage, recorded = run.stage, {rel: run.staged[rel] for rel in run.kept}
    stage.mkdir(parents=True, exist_ok=True)
    for path, data in run.wanted.items():
        rel = str(path)
        digest = run.digests.get(rel)
        if digest is not None and _holds(run, rel, digest):
            recorded[rel] = run.staged[rel]
            continue
        staged = _put(stage, rel, data, digest or "")
        if digest is not None:
            recorded[rel] = staged
    keep = {os.path.join(stage, rel) for rel in [*map(str, run.wanted), *run.kept]}
    for folder, dirs, names in os.walk(stage, topdown=False):
        for name in names:
            if os.path.join(folder, name) not in keep:
                os.unlink(os.path.join(folder, name))
        for name in dirs:
            if not os.listdir(os.path.join(folder, name)):
                os.rmdir(os.path.join(folder, name))
    if manifest:
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_bytes(pickle.dumps(recorded, pickle.HIGHEST_PROTOCOL))
    return [Path(path) for path in sorted(keep)]  # sorted as text: sorting 17,000 Paths costs 0.3 s


def _put(stage: Path, rel: str, data: bytes, digest: str) -> Staged:
    """Write `data` to the staged file `rel` unless it holds them already (its time then stays);
    returns the file's size, time and `digest`, as `_holds` compares them."""
    path = os.path.join(stage, rel)
    try:
        info = os.stat(path)
        if info.st_size == len(data) and Path(path).read_bytes() == data:
            return info.st_size, info.st_mtime_ns, digest
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as out:
        out.write(data)
        out.flush()
        info = os.fstat(out.fileno())
    return info.st_size, info.st_mtime_ns, digest
