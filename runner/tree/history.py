"""Leaderboards as they stood on past dates, rebuilt from the git history of the result files.

Git is the database, so its history is the record of every standing: a result file that landed in
a commit was on the leaderboard from that commit's date on. One `git log` walks the results'
history backwards from HEAD, undoing each commit's changes, so every past state of every phase
comes from a single pass; blobs are read once each through `git cat-file --batch`.
Dates are committer dates in UTC; a day's state is the one after its last commit.

History only grows, so a cache folder (optional) keeps each phase's log and files apart, beside an
index of every phase's snapshot days and the commit it was read at: when HEAD has moved on along its first
parents, only the new commits are read, and only the phases they touched are read from the cache and
written again (a tree of a million results has 600 phases: a new result costs one).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import pickle
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runner.codekey import code_key
from runner.errors import ChallengeError
from runner.tree.gitfiles import read_blobs
from runner.tree.paths import CHALLENGES, RESULT_PATH, phase_of_result
from runner.tree.records import write_atomic
from runner.tree.result_model import Result, parse_result, parse_time
from runner.tree.store import Store
from runner.tree.worktree import WorkingTree, working_tree

MAX_SNAPSHOTS = 20


@functools.cache
def _code() -> str:
    """The code that reads the log and decides what a result's path is (`codekey`): a cache written by other
    code is read again. Asked when the log is read or written, not at import: a command that reads no
    history does not pay for it."""
    return code_key([__name__])


class HistoryError(ChallengeError):
    """The history cannot be read (not a git repository, git missing)."""


# One phase's result files at some commit: path relative to the store root -> blob id.
State = dict[str, str]


@dataclass(frozen=True)
class Snapshot:
    """A phase's result files at the end of a day on which they changed; `History.results` reads them."""

    phase: str  # <challenge>/<phase>
    day: dt.date
    commit: str
    files: State
    at: dt.datetime  # when `commit` was committed


# A commit's change to one result file: its path, the blob before the commit (None: the commit added the
# file) and after it (None: the commit deleted it). Plain tuples, not NamedTuples: the cache holds a
# million, and pickle writes and reads plain tuples of text without calling back into Python.
_Change = tuple[str, str | None, str | None]
_Entry = tuple[str, dt.datetime, list[_Change]]  # a commit that touched a phase: sha, time, its changes there
_Log = tuple[State, list[_Entry]]  # a phase's files at HEAD, and the commits that touched them, newest first
_Days = list[tuple[dt.date, str]]  # a phase's snapshot days and the last commit of each, oldest first


def parse_when(text: str) -> dt.datetime:
    """A date means the end of that day (UTC); a time without a zone is UTC."""
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        when = dt.datetime.fromisoformat(text)
        return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.UTC) - dt.timedelta(microseconds=1)


class History:
    """The results' history in the git repository that holds `store`'s tree. `cache`: a folder keeping it."""

    def __init__(self, store: Store, limit: int = MAX_SNAPSHOTS, *, cache: Path | None = None):
        self.store, self.limit, self.cache = store, limit, cache
        self._blobs: dict[str, Result | None] = {}
        self._read_phases: set[str] = set()  # phases whose snapshots' blobs `results` has read
        self._days: dict[str, dict[dt.date, tuple[str, State, dt.datetime]]] = {}  # per phase, as `snapshots` found
        self._index: dict[str, tuple[str, _Days]] | None = None  # per phase: its newest commit and snapshot days
        self._logs: dict[str, _Log] = {}  # the phases' logs read so far (all of them where no cache keeps them)
        self._at: str | None = None  # the commit HEAD named when the logs were read
        self._admitted: dict[tuple[str, str], bool] = {}  # (path, blob) -> whether the store admits it
        self._versions: dict[str, dict[str, list[tuple[dt.datetime, str]]]] = {}  # per phase, files of several records
        self._signed: dict[str, dt.datetime | None] = {}  # a past record's verified signing time, by blob
        self.read_from_git: list[str] = []  # the blobs read from git, in order: what reading history cost
        self.git_commands: list[tuple[str, ...]] = []  # each git command's arguments, in order: the rest of it

    def results_as_of(self, slug: str, phase: str, when: dt.datetime) -> list[Result]:
        """The phase's results as committed at the last commit at or before `when`."""
        head, log = self._log(_key(slug, phase))
        state = dict(head)
        for _, at, changes in log:  # newest first; `state` is just after this commit
            if at <= when:
                return self._results(state, at)
            for path, before, _ in changes:
                _set(state, path, before)
        return []

    def snapshot_days(self, slug: str, phase: str) -> list[tuple[dt.date, str]]:
        """The days and commits of `snapshots`, from the index alone: no phase's log is read."""
        found = self._phase_index().get(_key(slug, phase))
        return list(found[1]) if found else []

    def snapshots(self, slug: str, phase: str) -> list[Snapshot]:
        """The phase's state at the end of each of the last `limit` days its results changed,
        oldest first. Only this phase's log is read and its changes undone: a rebuild that ranks one
        phase again does not rebuild every phase's history."""
        key = _key(slug, phase)
        if key not in self._days:
            head, log = self._log(key)
            state, days = dict(head), dict[dt.date, tuple[str, State, dt.datetime]]()
            for sha, at, changes in log:  # newest first; `state` is just after it
                if at.date() not in days and len(days) < self.limit:
                    days[at.date()] = (sha, dict(state), at)
                for path, before, _ in changes:
                    _set(state, path, before)
            self._days[key] = days
        return [Snapshot(key, day, sha, state, at) for day, (sha, state, at) in sorted(self._days[key].items())]

    def results(self, snapshot: Snapshot, current: dict[str, Result] | None = None) -> list[Result]:
        """The snapshot's results. The first call for a phase reads the files of all its snapshots
        at once: one git process per phase, not per snapshot. `current`: results already read from
        the working tree, by path; one stands for its file's blob at HEAD where git sees the file
        unchanged since, so what did not change since it was committed is not read and parsed again."""
        if snapshot.phase not in self._read_phases:
            self._read_phases.add(snapshot.phase)
            if current:
                head = self._unchanged_at_head(snapshot.phase)
                self._blobs.update({head[path]: result for path, result in current.items()
                                    if path in head and head[path] not in self._blobs})
            self._read({blob for _, state, _ in self._days.get(snapshot.phase, {}).values() for blob in state.values()})
        self._read(set(snapshot.files.values()))
        return self._results(snapshot.files, snapshot.at)

    @functools.cached_property
    def worktree(self) -> WorkingTree | None:
        """What the working tree holds unlike HEAD under the challenges (`runner.tree.worktree`), asked once."""
        return working_tree(self.store.root, CHALLENGES)

    def _unchanged_at_head(self, phase: str) -> State:
        """The phase's result files at HEAD (path -> blob) that the working tree holds unchanged."""
        head = self._log(phase)[0]
        if not head:  # nothing to ask git's status of (nor to start it for)
            return {}
        tree = self.worktree
        # A status taken against another commit (HEAD moved between the two: a runner committing meanwhile)
        # says nothing of these blobs; a file rewritten since the status (`as_at_head`) holds something else.
        if tree is None or tree.head != self._at:
            return {}
        return {path: blob for path, blob in head.items() if tree.as_at_head(path)}

    def _log(self, phase: str) -> _Log:
        """The phase's files at HEAD and its commits, newest first: from memory, else from the cache."""
        index = self._phase_index()
        if phase not in self._logs:
            kept = self._read_log(phase, index[phase][0]) if phase in index else ({}, [])
            if kept is None:  # the cache lost it: read from git whole
                self._load(whole=True)
                return self._logs.get(phase, ({}, []))
            self._logs[phase] = kept
        return self._logs[phase]

    def _phase_index(self) -> dict[str, tuple[str, _Days]]:
        if self._index is None:
            self._load()
        assert self._index is not None
        return self._index

    def _load(self, *, whole: bool = False) -> None:
        """The index, and the logs of the phases that changed: from the cache where HEAD descends from the
        commit it was read at along first parents (only the new commits are read, and only the phases they
        touched are read from the cache), else from git whole. The cache's phase files are written before its
        index: one whose newest commit is not the index's is read again from git."""
        shallow, head = self._git("rev-parse", "--is-shallow-repository", "HEAD").split()
        # A shallow clone's oldest commit adds every file: its log is no history to keep.
        kept = None if whole or shallow == "true" else self._cached_index()
        new = self._since(kept[0], head) if kept else None
        if kept is None or new is None:
            logs = self._from_git(head)
            self._index, self._logs = {}, logs
        else:
            found = self._updated(kept[1], new)
            if found is None:  # the cache lost a phase the new commits touched
                return self._load(whole=True)
            logs, self._index = found, dict(kept[1])
            self._logs.update(logs)
        self._index.update({phase: (_newest(log), _snapshot_days(log[1], self.limit)) for phase, log in logs.items()})
        self._at = head  # only now: the logs read are this commit's
        if self.cache is not None and shallow == "false" and not (kept and kept[0] == head):
            self._write(head, logs, whole=new is None)

    def _updated(self, index: dict[str, tuple[str, _Days]], new: list[_Entry]) -> dict[str, _Log] | None:
        """The logs of the phases the `new` commits (newest first) touched, each read from the cache and the
        commits applied; None where the cache lacks one."""
        touched: dict[str, list[_Entry]] = {}
        for sha, at, changes in new:
            for phase, mine in _by_phase(changes).items():
                touched.setdefault(phase, []).append((sha, at, mine))
        logs = {}
        for phase, entries in touched.items():
            old = self._read_log(phase, index[phase][0]) if phase in index else ({}, [])
            if old is None:
                return None
            state = dict(old[0])
            for _, _, changes in reversed(entries):  # oldest first
                for path, _, after in changes:
                    _set(state, path, after)
            logs[phase] = (state, [*entries, *old[1]])
        return logs

    def _from_git(self, head: str) -> dict[str, _Log]:
        """Every phase's log, read from git whole."""
        logs: dict[str, _Log] = {phase: (state, []) for phase, state in self._head(head).items()}
        for sha, at, changes in self._git_log(head):
            for phase, mine in _by_phase(changes).items():
                logs.setdefault(phase, ({}, []))[1].append((sha, at, mine))
        return logs

    def _write(self, head: str, logs: dict[str, _Log], *, whole: bool) -> None:
        assert self.cache is not None and self._index is not None
        if whole and self.cache.is_dir():
            for stale in self.cache.glob("*.pickle"):
                stale.unlink(missing_ok=True)  # another build may be writing it again
        for phase, log in logs.items():
            write_atomic(self._log_file(phase), pickle.dumps((_code(), phase, log), pickle.HIGHEST_PROTOCOL),
                         durable=False)
        write_atomic(self.cache / "index.pickle", pickle.dumps((_code(), self.limit, head, self._index),
                                                               pickle.HIGHEST_PROTOCOL), durable=False)

    def _log_file(self, phase: str) -> Path:
        assert self.cache is not None
        return self.cache / f"{hashlib.sha256(phase.encode()).hexdigest()[:32]}.pickle"

    def _cached_index(self) -> tuple[str, dict[str, tuple[str, _Days]]] | None:
        try:
            code, limit, head, index = pickle.loads((self.cache / "index.pickle").read_bytes()) if self.cache \
                else ("", 0, "", {})
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
            return None
        return (head, index) if (code, limit) == (_code(), self.limit) else None

    def _read_log(self, phase: str, newest: str) -> _Log | None:
        """A phase's log as the cache keeps it, or None where it lacks it or holds another (`newest`: its
        newest commit as the index says)."""
        if self.cache is None:
            return None
        try:
            code, kept, log = pickle.loads(self._log_file(phase).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
            return None
        return log if (code, kept) == (_code(), phase) and _newest(log) == newest else None

    def _since(self, old: str, head: str) -> list[_Entry] | None:
        """The commits after `old` on HEAD's first-parent line, newest first; None where `old` is not on it
        (history rewritten, another branch)."""
        if old == head:
            return []
        # The new commits along first parents (not every commit since the first: 219,000 of them took 1.5 s);
        # `old` is on the line where the oldest of them has it as its first parent.
        try:
            line = self._git("rev-list", "--first-parent", "--parents", f"{old}..{head}").splitlines()
        except HistoryError:  # `old` is gone (history rewritten and collected, a cache restored into another clone)
            return None
        if not line or line[-1].split()[1:2] != [old]:
            return None
        return list(self._git_log(f"{old}..{head}"))

    def _head(self, head: str) -> dict[str, State]:
        states: dict[str, State] = {}
        for line in self._git("ls-tree", "-r", head, "--", CHALLENGES).splitlines():
            meta, path = line.split("\t", 1)
            if _is_result(path):
                states.setdefault(_phase_of(path), {})[path] = meta.split()[2]
        return states

    def _git_log(self, commits: str) -> Iterator[_Entry]:
        out = self._git("log", "--first-parent", "--diff-merges=first-parent", "--relative", "--raw",
                        "--no-abbrev", "--no-renames", "--format=%x00%H %cI", commits, "--", CHALLENGES)
        for block in out.split("\0")[1:]:
            header, *lines = block.strip("\n").splitlines()
            sha, when = header.split()
            changes = [_change(line) for line in lines if line.startswith(":")]
            changes = [change for change in changes if _is_result(change[0])]
            if changes:
                yield sha, dt.datetime.fromisoformat(when).astimezone(dt.UTC), changes

    def _results(self, state: State, at: dt.datetime) -> list[Result]:
        """The results of `state`, committed at `at`, the store admits (with a verifier: those that verify, and
        are the newest record their file had held by then), each file's verdict taken once per blob:
        snapshots share most of their files."""
        self._read(set(state.values()))
        found = ((path, state[path], self._blobs[state[path]]) for path in sorted(state))
        return [result for path, blob, result in found if result is not None and self._admits(path, blob, result)
                and not self._superseded(path, result, at)]

    def _superseded(self, path: str, result: Result, at: dt.datetime) -> bool:
        """Whether, by `at`, the file had held a record the runner signed later than `result`: an older record
        put back (`Verifier.check_current`'s rule, as the history stood then; along the first parents)."""
        verifier = self.store.verifier
        if verifier is None or not verifier.enforced or result.provenance is None:
            return False
        signed = parse_time(result.provenance.signed_at)
        return any(committed <= at and (when := self._signed_time(path, blob)) is not None and when > signed
                   for committed, blob in self._held(_phase_of(path)).get(path, ()))

    def _signed_time(self, path: str, blob: str) -> dt.datetime | None:
        """`Verifier.signed_time` of a past record, once per blob: snapshots share most of their files."""
        if blob not in self._signed:
            record, verifier = self._blobs.get(blob), self.store.verifier
            self._signed[blob] = (verifier.signed_time(record, self.store.root / path)
                                  if record is not None and verifier is not None else None)
        return self._signed[blob]

    def _held(self, phase: str) -> dict[str, list[tuple[dt.datetime, str]]]:
        """Each of the phase's result files that held more than one record, with when each was committed
        (their blobs read)."""
        if phase not in self._versions:
            held: dict[str, list[tuple[dt.datetime, str]]] = {}
            for _, at, changes in self._log(phase)[1]:
                for path, _, after in changes:
                    if after is not None:
                        held.setdefault(path, []).append((at, after))
            self._versions[phase] = {path: found for path, found in held.items() if len({b for _, b in found}) > 1}
            self._read({blob for found in self._versions[phase].values() for _, blob in found})
        return self._versions[phase]

    def _admits(self, path: str, blob: str, result: Result) -> bool:
        if (path, blob) not in self._admitted:
            self._admitted[path, blob] = self.store.admits(result, self.store.root / path)
        return self._admitted[path, blob]

    def _read(self, blobs: set[str]) -> None:
        missing = [blob for blob in blobs if blob not in self._blobs]
        if missing:
            self._blobs.update(self._read_blobs(missing))

    def _read_blobs(self, blobs: list[str]) -> dict[str, Result | None]:
        self.read_from_git.extend(blobs)
        content = read_blobs(self.store.root, blobs)
        return {blob: _parse(content[blob]) if blob in content else None for blob in blobs}

    def _git(self, *args: str) -> str:
        self.git_commands.append(args)
        try:
            done = subprocess.run(["git", "-c", "core.quotepath=off", *args], cwd=self.store.root,
                                  capture_output=True, check=False)
        except FileNotFoundError:
            raise HistoryError("git is not installed") from None
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise HistoryError(f"no git history for {self.store.root}: {message[-1] if message else 'git failed'}")
        return done.stdout.decode("utf-8", errors="replace")


def _key(slug: str, phase: str) -> str:
    return f"{slug}/{phase}"


def _is_result(path: str) -> bool:
    return RESULT_PATH.fullmatch(path) is not None


def _phase_of(path: str) -> str:
    return phase_of_result(path) or ""


def _by_phase(changes: list[_Change]) -> dict[str, list[_Change]]:
    found: dict[str, list[_Change]] = {}
    for change in changes:
        found.setdefault(_phase_of(change[0]), []).append(change)
    return found


def _newest(log: _Log) -> str:
    return log[1][0][0] if log[1] else ""


def _snapshot_days(log: list[_Entry], limit: int) -> _Days:
    """The last `limit` days of a phase's log (newest first) and the last commit of each, oldest first."""
    days: dict[dt.date, str] = {}
    for sha, at, _ in log:
        if at.date() not in days and len(days) < limit:
            days[at.date()] = sha
    return sorted(days.items())


def _set(state: State, path: str, blob: str | None) -> None:
    """The file at `path` holds `blob` in `state`; None: there is no such file."""
    if blob is None:
        state.pop(path, None)
    else:
        state[path] = blob


def _change(line: str) -> _Change:
    """A `--raw` line, `:100644 100644 <before> <after> M<TAB>path`."""
    meta, path = line.split("\t", 1)
    _, _, before, after, status = meta.split()[:5]
    return path, None if status == "A" else before, None if status == "D" else after


def _parse(data: bytes) -> Result | None:
    """A historic result file; one that is not a result record (hand-edited, older schema) is skipped."""
    try:
        return parse_result(data, Path("<history>"))
    except ChallengeError:
        return None

