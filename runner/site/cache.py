"""Every cache of page generation: what `pages` generates is kept between runs, so a rebuild computes,
reads and writes only what changed. `pages` says what each page shows; this is the one layer that remembers
(what MkDocs then builds from the pages is `incremental`'s own cache).

Knows where each cache lives (beside the folder `generate` is given, `build/page-cache`) and what its
entries depend on, never what a page says:

- the memo (`Memo`, in that folder): outputs that depend only on their inputs (a dated snapshot of a
  leaderboard, a bootstrap of its ranking, a feed's Atom), under a hash of those inputs;
- each phase's files whole (`<folder>-phases`), under a key of everything its pages read (`phase_keys`);
- the staging manifest (`<folder>-stage.pickle`): each phase file's size, time and digest as it was
  staged, so that a staged file found so is neither read nor compared (`Cache.sync`);
- git history (`<folder>-history/`), which `runner.tree.history` keeps, and the commit that added
  each challenge (`<folder>-added.pickle`), which `runner.tree.gitfiles.added_all` keeps;
- the times of the folders of results and submissions last found to hold exactly HEAD's files
  (`<folder>-folders.pickle`), which `runner.tree.worktree` keeps;
- the challenges' and phases' files as parsed (`<folder>-parsed.pickle`), which `runner.tree.parsed` keeps,
  and the page templates as Jinja compiled them (`<folder>-templates/`, Jinja's own bytecode cache).

Every key derives from `runner.codekey` (the code that turns the tree into pages and the templates:
`code`) and from the inputs read. Phases the cache lacks are computed in forked worker processes
(`Cache.precomputing`). What to compute is handed in as functions.

Knows: runner.codekey, runner.tree, runner.site.folders. Must not import: runner.site.pages nor any module that
says what a page shows (catalog, feeds, facts, reference, report, templating), nor runner.ranking.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TypeVar, cast

from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # it publishes no type information

from runner.codekey import code_key, file_sha256
from runner.site.folders import remove_unwanted
from runner.tree.history import History, HistoryError
from runner.tree.model import Challenge
from runner.tree.parsed import ParsedFiles
from runner.tree.paths import organizer_page, phase_folder
from runner.tree.phase_model import Phase
from runner.tree.policy import visibility, withholds
from runner.tree.records import write_atomic
from runner.tree.store import Store
from runner.tree.worktree import WorkingTree

T = TypeVar("T")
# What OpenBLAS, OpenMP and MKL read, as they load, for their number of threads.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
Staged = tuple[int, int, str]  # a staged file's size, modification time (ns) and digest, as written
Made = Callable[[], tuple[dict[Path, bytes], T]]  # computes a phase's files and what else it says
Pending = tuple[str, Made[object]]  # a phase the cache lacks: its key (`phase_keys`) and how to compute it

Workers = tuple[ProcessPoolExecutor, Iterator[dict[str, Staged]]]  # forked workers, and their answers as they come


@dataclass(frozen=True)
class Busy:
    """What `Cache.precomputing` has workers computing (their keys), and whether a core is left beside them."""

    keys: frozenset[str]
    spare: bool

    def here(self, key: str | None) -> bool:
        """Whether the body computes or reads the phase of `key` now: one no worker computes, and, for one
        without a key (computed every time), only where a core is left, so no more processes run than cores."""
        return key not in self.keys and (key is not None or self.spare)


class Memo:
    """Outputs that depend only on their inputs (a dated snapshot, a bootstrap), kept between runs
    in `folder` under a hash of those inputs and of `code` (module `code`: every stage that shapes them),
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
        try:  # an empty entry is what a crash can leave of one written without a sync: made again
            if kept := path.read_bytes():
                return kept
        except FileNotFoundError:
            pass
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


def code(module: str, templates: Path) -> str:
    """What turns the tree into pages: `module` and all it imports (`codekey`), and the templates."""
    files = sorted(p for p in templates.rglob("*") if p.is_file()) if templates.is_dir() else []
    return code_key([module], extra=files)


@dataclass
class Cache:
    """One build's caches (`open`), and what it learns of the staging folder `stage` as it goes."""

    stage: Path
    memo: Memo  # snapshots, bootstraps, feeds
    phases: Memo = field(default_factory=lambda: Memo(None))  # each phase's files whole, beside `memo`
    manifest: Path | None = None  # where `staged` is kept
    history: Path | None = None  # runner.tree.history's cache file
    added: Path | None = None  # runner.tree.gitfiles.added_all's cache file
    folders: Path | None = None  # the times of checked folders, runner.tree.worktree's (`tree_ids`)
    parsed: ParsedFiles = field(default_factory=lambda: ParsedFiles(None, ""))  # challenge and phase files, parsed
    compiled: Path | None = None  # the page templates as Jinja compiled them (its bytecode cache checks each source)
    # By path relative to the stage as text (unpickling thousands of Paths costs more than the rest):
    digests: dict[str, str] = field(default_factory=dict)  # of the phases' files, known without hashing again
    staged: dict[str, Staged] = field(default_factory=dict)  # the staging folder's files as the last run left them
    kept: set[str] = field(default_factory=set)  # files of unchanged phases that the staging folder holds as wanted

    @classmethod
    def open(cls, folder: Path | None, stage: Path, code: str) -> Cache:
        """The caches in and beside `folder` (None: nothing is kept), their entries keyed by `code` (see `code`)."""
        manifest = folder and folder.with_name(f"{folder.name}-stage.pickle")
        return cls(stage, Memo(folder, code), Memo(folder and folder.with_name(f"{folder.name}-phases"), code),
                   manifest=manifest, history=folder and folder.with_name(f"{folder.name}-history"),
                   added=folder and folder.with_name(f"{folder.name}-added.pickle"),
                   folders=folder and folder.with_name(f"{folder.name}-folders.pickle"),
                   parsed=ParsedFiles(folder and folder.with_name(f"{folder.name}-parsed.pickle"), code),
                   compiled=folder and folder.with_name(f"{folder.name}-templates"),
                   staged=_staged(manifest))

    def phase(self, key: str | None, make: Made[T], wanted: dict[Path, bytes]) -> T:
        """A phase's files, put in `wanted`, and what else `make` says of it. Where none of their inputs
        changed (`key`, from `phase_keys`; None: always computed) and the staging folder holds the files as
        the last run wrote them, nothing is computed or read: a new result costs its own phase, not every
        phase's results again."""
        files: dict[Path, bytes] | None = None

        def compute() -> bytes:
            nonlocal files
            used = set(self.memo.used)
            files, said = make()
            digests = {str(rel): _digest(data) for rel, data in files.items()}
            return pickle.dumps((digests, said, self.memo.used - used), pickle.HIGHEST_PROTOCOL)
        pickled = pickle.loads(self.phases.get(key, compute) if key else compute())
        digests, said, used = cast(tuple[dict[str, str], T, set[str]], pickled)  # what compute() pickled
        if files is None and not all(self.holds(rel, digest) for rel, digest in digests.items()):
            compute()  # the staging folder lost or changed some of them: the same inputs make them again
        if files is None:
            self.kept.update(digests)
        else:
            wanted.update(files)
        self.digests.update(digests)
        self.memo.used.update(used)  # the snapshots and bootstrap it holds stay in the memo
        return said

    def tree_ids(self, tree: WorkingTree | None, folders: list[str]) -> dict[str, str]:
        """HEAD's tree id of each of `folders` (repository-relative) that the working `tree` holds exactly as HEAD
        does (`WorkingTree.folder_ids`, the folders' times kept beside the cache); none outside git."""
        return tree.folder_ids(folders, kept=self.folders) if tree else {}

    @contextmanager
    def precomputing(self, phases: list[tuple[str | None, Made[object]]]) -> Iterator[Busy]:
        """Compute the phases (key, how) the cache lacks in forked worker processes, one per core, each into
        the cache, while the body runs; `phase` then reads them from there. Phases are independent: a cold
        build spends most of its time in them, and one new result's phase is computed beside the pages that
        read no results (this process then imports the numerical libraries that ranking needs only for a
        phase whose results may be sealed: it has no key, and is computed here each time). Only where the
        cache has a folder and there is a second core, and not beside other threads (a fork copies only this
        one, and not the locks the others may hold)."""
        staged = self.stage.is_dir() and bool(self.staged)  # else every phase's files are to be written again
        pending = [(key, make) for key, make in phases if key and not (staged and self.phases.holds(key))]
        cores = os.cpu_count() or 1
        started = self._started(pending, cores) if pending and cores > 1 and self.phases.folder else None
        if started is None:
            yield Busy(frozenset(), spare=True)
            return
        pool, done = started
        global _forked
        try:
            yield Busy(frozenset(key for key, _ in pending), spare=len(pending) < cores)
            for staged_now in done:
                self.staged.update(staged_now)
        except BrokenProcessPool:  # a worker died (out of memory, say): `phase` computes what it left
            pass
        finally:
            pool.shutdown(cancel_futures=True)  # after the body failed: what no worker has taken yet is dropped
            _forked = None

    def _started(self, pending: list[Pending], cores: int) -> Workers | None:
        """Workers forked for `pending`, and their answers as they come; None where this process runs other
        threads or cannot start workers (no semaphores, say): `phase` then computes each here."""
        global _forked
        if threading.active_count() > 1:
            return None
        _forked = (self, pending)
        try:
            pool = ProcessPoolExecutor(min(len(pending), cores), mp_context=multiprocessing.get_context("fork"),
                                       initializer=_one_thread)
            return pool, pool.map(_precompute_one, range(len(pending)))  # forks the workers, with `_forked` set
        except OSError:
            _forked = None
            return None

    def prune(self) -> None:
        """Drop the memos' entries this run did not use."""
        self.memo.prune()
        self.phases.prune()

    def holds(self, rel: str, digest: str) -> bool:
        """Whether the staging folder holds `rel` as the last run wrote it, with this digest."""
        try:
            info = os.stat(os.path.join(self.stage, rel))
        except (FileNotFoundError, NotADirectoryError):
            return False
        return self.staged.get(rel) == (info.st_size, info.st_mtime_ns, digest)

    def sync(self, wanted: dict[Path, bytes]) -> None:
        """Write what changed and remove what is no longer wanted; unchanged files keep their times, so a
        builder copies only what changed. `manifest` records each phase file's size, time and digest as
        written: next time, a file found so (`holds`) is neither read nor compared."""
        stage, recorded = self.stage, {rel: self.staged[rel] for rel in self.kept}
        stage.mkdir(parents=True, exist_ok=True)
        for path, data in wanted.items():
            rel = str(path)
            digest = self.digests.get(rel)
            if digest is not None and self.holds(rel, digest):
                recorded[rel] = self.staged[rel]
                continue
            staged = _put(stage, rel, data, digest or "")
            if digest is not None:
                recorded[rel] = staged
        remove_unwanted(str(stage), {os.path.join(stage, rel) for rel in [*map(str, wanted), *self.kept]})
        if self.manifest:
            self.manifest.parent.mkdir(parents=True, exist_ok=True)
            self.manifest.write_bytes(pickle.dumps(recorded, pickle.HIGHEST_PROTOCOL))


_forked: tuple[Cache, list[Pending]] | None = None  # what `precomputing`'s workers inherit


def _one_thread() -> None:
    """A worker's numerical libraries use one thread: one worker per core already uses every core, and
    OpenBLAS' threads, left to spin beside the other workers, took a fifth of the cold build's time. Those
    loaded already are limited now; those a worker loads later (the parent need not have imported them)
    read the variables when they load."""
    os.environ.update(dict.fromkeys(THREAD_VARIABLES, "1"))
    threadpool_limits(1)


def _precompute_one(index: int) -> dict[str, Staged]:
    """One pending phase into the cache, its files written to the staging folder; returns how they
    were written, so that `Cache.phase` finds them staged (`holds`) and neither reads nor writes them."""
    assert _forked is not None
    cache, pending = _forked
    key, make = pending[index]
    sub = replace(cache, digests={}, kept=set())
    wanted: dict[Path, bytes] = {}
    try:
        sub.phase(key, make, wanted)
        # What it found staged already (another build got there first) is not in `wanted`: nothing to write.
        return {str(rel): _put(sub.stage, str(rel), data, sub.digests[str(rel)]) for rel, data in wanted.items()}
    except Exception:  # `Cache.phase` computes this phase again and reports it there
        return {}


def phase_folders(store: Store, slugs: list[str]) -> list[str]:
    """Each challenge's folders of one phase's results or submissions (repository-relative), as on disk."""
    return [phase_folder(slug, kind, os.path.basename(folder)) for slug in slugs
            for kind, listed in (("results", store.result_folders), ("submissions", store.submission_folders))
            for folder in listed(slug)]


def phase_keys(history: History, store: Store, phases: list[tuple[Challenge, Phase]], *, now: dt.datetime,
               ids: dict[str, str]) -> dict[tuple[str, str], str | None]:
    """Everything each phase's pages depend on, by (challenge, phase), read without parsing a result: the
    records, what the policy shows `now`, the code and templates, each file of the challenge's folder but its
    results, its submissions and its organizer's pages (`organizer_page`: an edited page costs no phase), the
    phase's snapshots in git, and its own results and submissions: a folder git holds as HEAD does by its tree
    id (`ids`, from `Cache.tree_ids`), any other by each file's size, time and inode (the runner and git replace
    result and submission files whole).
    None where results may be sealed: those depend on keys and copies outside the folder, so that phase
    is always computed."""
    keys: dict[tuple[str, str], str | None] = {(c.slug, p.slug): None for c, p in phases}
    own: dict[str, list[str]] = {}  # each challenge's files that its phases read, listed once for them all
    for challenge, phase in phases:
        if withholds(phase):
            continue
        try:
            snapshots = history.snapshot_days(phase.challenge, phase.slug)
        except HistoryError:
            snapshots = []
        if challenge.slug not in own:
            _stat_files(store.base / challenge.slug, "", own.setdefault(challenge.slug, []),
                        skip={"results": set(), "submissions": set()}, pages=False)
        files = [_folder_key(store, phase_folder(challenge.slug, kind, phase.slug), ids)
                 for kind in ("results", "submissions")]
        keys[challenge.slug, phase.slug] = (f"phase {challenge!r} {phase!r} {visibility(phase, now=now)!r} "
                                            f"{snapshots} {signers(store)}\n"
                                            + "\n".join(sorted([*files, *own[challenge.slug]])))
    return keys


def submission_counts(store: Store, slugs: list[str], memo: Memo, ids: dict[str, str]) -> dict[str, int]:
    """Each challenge's submissions (`Store.submission_count`): a phase's folder that git holds as HEAD does is
    counted once per tree id (`ids`; kept in `memo`), so a catalog of a million submissions lists only what
    changed."""
    counts = dict.fromkeys(slugs, 0)
    for slug in slugs:
        for phase in map(os.path.basename, store.submission_folders(slug)):
            tree = ids.get(phase_folder(slug, "submissions", phase))
            count = partial(_count, store, slug, phase)
            counts[slug] += int(memo.get(f"submissions {tree}", count)) if tree else int(count())
    return counts


def _count(store: Store, slug: str, phase: str) -> bytes:
    return str(store.submission_count(slug, phase)).encode()


def _folder_key(store: Store, folder: str, ids: dict[str, str]) -> str:
    """A line for a phase's folder of results or submissions that changes whenever a file under it does."""
    rel = folder.split("/", 2)[2]  # <kind>/<phase>, as the challenge's other files are named
    if folder in ids:
        return f"{rel} tree {ids[folder]}"
    files: list[str] = []
    if os.path.isdir(store.root / folder):
        _stat_files(store.root / folder, f"{rel}/", files, skip={})
    return f"{rel} files\n" + "\n".join(sorted(files))


def signers(store: Store) -> str:
    """Which runner keys the store verifies results with: part of every key of what shows results."""
    return f"signers {store.verifier.digest if store.verifier else 'unchecked'}"


def _stat_files(folder: str | Path, rel: str, out: list[str], *, skip: dict[str, set[str]], pages: bool = True) -> None:
    """Each file under `folder` as one line (os.scandir: a phase holds thousands of results). In a
    folder named in `skip` only the subfolders named there are walked; `pages`: whether the organizer's pages
    (`organizer_page`, `rel` being inside a challenge's folder) count. Results and submissions count by size,
    time and inode, the rest by content; a link by where it points too (and is never walked: it may lead anywhere,
    round in a circle included). In no order: the caller sorts."""
    with os.scandir(folder) as found:
        entries = list(found)
    for entry in entries:
        name = f"{rel}{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in skip:  # `skip` is for the top folder only: subfolders get none
                _stat_files(entry.path, f"{name}/", out, skip={}, pages=pages)
            else:
                for sub in skip[entry.name]:
                    if os.path.isdir(os.path.join(entry.path, sub)):
                        _stat_files(os.path.join(entry.path, sub), f"{name}/{sub}/", out, skip={})
        elif not pages and organizer_page(name):
            continue
        elif name.startswith(("results/", "submissions/")):
            info = entry.stat(follow_symlinks=False)
            out.append(f"{name} {info.st_size} {info.st_mtime_ns} {info.st_ino}")
        elif entry.is_symlink():  # to a folder, to nothing, or to a file (then its content counts too)
            content = file_sha256(entry.path) if entry.is_file() else "no file"
            out.append(f"{name} link {os.readlink(entry.path)!r} {content}")
        else:
            out.append(f"{name} {file_sha256(entry.path)}")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _staged(manifest: Path | None) -> dict[str, Staged]:
    try:
        return pickle.loads(manifest.read_bytes()) if manifest else {}
    except (OSError, pickle.UnpicklingError, EOFError, ValueError):
        return {}


def _put(stage: Path, rel: str, data: bytes, digest: str) -> Staged:
    """Write `data` to the staged file `rel` unless it holds them already (its time then stays);
    returns the file's size, time and `digest`, as `Cache.holds` compares them."""
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
