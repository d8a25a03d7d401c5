"""Leaderboards as they stood on past dates, rebuilt from the git history of the result files.

Git is the database, so its history is the record of every standing: a result file that landed in
a commit was on the leaderboard from that commit's date on. One `git log` walks the results'
history backwards from HEAD, undoing each commit's changes, so every past state of every phase
comes from a single pass; blobs are read once each through `git cat-file --batch`.
Dates are committer dates in UTC; a day's state is the one after its last commit.

History only grows, so a cache file (optional) keeps the parsed log and every phase's files at the
commit it was read at: when HEAD has moved on along its first parents, only the new commits are read.
"""

from __future__ import annotations

import datetime as dt
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

MAX_SNAPSHOTS = 20
# The code that reads the log and decides what a result's path is: a cache written by other code is read again.
_CODE = code_key([__name__])  # what reads the log: a change to it reads the log again


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


# A commit's change to one result file: its path, the blob before the commit (None: the commit added the
# file) and after it (None: the commit deleted it). A plain tuple, not a NamedTuple: the cache holds
# tens of thousands, and pickle writes and reads plain tuples of text without calling back into Python.
_Change = tuple[str, str | None, str | None]


@dataclass(frozen=True)
class _Commit:
    sha: str
    at: dt.datetime
    changes: list[_Change]


def parse_when(text: str) -> dt.datetime:
    """A date means the end of that day (UTC); a time without a zone is UTC."""
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        when = dt.datetime.fromisoformat(text)
        return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.UTC) - dt.timedelta(microseconds=1)


class History:
    """The results' history in the git repository that holds `store`'s tree."""

    def __init__(self, store: Store, limit: int = MAX_SNAPSHOTS, *, cache: Path | None = None):
        self.store, self.limit, self.cache = store, limit, cache
        self._blobs: dict[str, Result | None] = {}
        self._read_phases: set[str] = set()  # phases whose snapshots' blobs `results` has read
        self._days: dict[str, dict[dt.date, tuple[str, State]]] = {}  # per phase, as `snapshots` found them
        self._unchanged: State | None = None
        self._commits: list[_Commit] | None = None
        self._head_states: dict[str, State] | None = None
        self._by_phase: dict[str, list[tuple[_Commit, list[tuple[str, str | None]]]]] | None = None
        self._admitted: dict[tuple[str, str], bool] = {}  # (path, blob) -> whether the store admits it
        self._versions: dict[str, list[tuple[dt.datetime, str]]] | None = None  # files that held several records
        self._times: dict[str, dt.datetime] | None = None  # each commit's time, by sha
        self._signed: dict[str, dt.datetime | None] = {}  # a past record's verified signing time, by blob
        self.read_from_git: list[str] = []  # the blobs read from git, in order: what reading history cost
        self.git_commands: list[tuple[str, ...]] = []  # each git command's arguments, in order: the rest of it

    def results_as_of(self, slug: str, phase: str, when: dt.datetime) -> list[Result]:
        """The phase's results as committed at the last commit at or before `when`."""
        for commit, states in self._walk():
            if commit.at <= when:
                return self._results(states.get(_key(slug, phase), {}), commit.at)
        return []

    def snapshot_days(self, slug: str, phase: str) -> list[tuple[dt.date, str]]:
        """The days and commits of `snapshots`, from the log alone: no state is rebuilt."""
        days: dict[dt.date, str] = {}
        for commit, _ in self._phase_log().get(_key(slug, phase), []):
            if commit.at.date() not in days and len(days) < self.limit:
                days[commit.at.date()] = commit.sha
        return sorted(days.items())

    def snapshots(self, slug: str, phase: str) -> list[Snapshot]:
        """The phase's state at the end of each of the last `limit` days its results changed,
        oldest first. Only this phase's changes are undone: a rebuild that ranks one phase
        again does not rebuild every phase's history."""
        key = _key(slug, phase)
        if key not in self._days:
            state, days = dict(self._heads().get(key, {})), dict[dt.date, tuple[str, State]]()
            for commit, changes in self._phase_log().get(key, []):  # newest first; `state` is just after it
                if commit.at.date() not in days and len(days) < self.limit:
                    days[commit.at.date()] = (commit.sha, dict(state))
                for path, before in changes:
                    _set(state, path, before)
            self._days[key] = days
        return [Snapshot(key, day, sha, state) for day, (sha, state) in sorted(self._days[key].items())]

    def results(self, snapshot: Snapshot, current: dict[str, Result] | None = None) -> list[Result]:
        """The snapshot's results. The first call for a phase reads the files of all its snapshots
        at once: one git process per phase, not per snapshot. `current`: results already read from
        the working tree, by path; one stands for its file's blob at HEAD where git sees the file
        unchanged since, so what did not change since it was committed is not read and parsed again."""
        if snapshot.phase not in self._read_phases:
            self._read_phases.add(snapshot.phase)
            if current:
                head = self._unchanged_at_head()
                self._blobs.update({head[path]: result for path, result in current.items()
                                    if path in head and head[path] not in self._blobs})
            self._read({blob for _, state in self._days.get(snapshot.phase, {}).values() for blob in state.values()})
        self._read(set(snapshot.files.values()))
        return self._results(snapshot.files, self._committed_at()[snapshot.commit])

    def _unchanged_at_head(self) -> State:
        """The result files at HEAD (path -> blob) that the working tree holds unchanged (`git diff`
        compares by the index's file times and sizes, reading only files whose times changed)."""
        if self._unchanged is None:
            changed = set(self._git("diff", "--name-only", "-z", "--no-renames", "HEAD", "--", CHALLENGES).split("\0"))
            self._unchanged = {path: blob for state in self._heads().values() for path, blob in state.items()
                               if path not in changed}
        return self._unchanged

    def _heads(self) -> dict[str, State]:
        """Every phase's state at HEAD (read once; copy before changing it)."""
        if self._head_states is None:
            self._load()
        assert self._head_states is not None
        return self._head_states

    def _phase_log(self) -> dict[str, list[tuple[_Commit, list[tuple[str, str | None]]]]]:
        """Per phase, the commits that touched its results, newest first, with those changes only."""
        if self._by_phase is None:
            self._by_phase = {}
            for commit in self._log():
                for path, before, _ in commit.changes:
                    log = self._by_phase.setdefault(_phase_of(path), [])
                    if not log or log[-1][0] is not commit:
                        log.append((commit, []))
                    log[-1][1].append((path, before))
        return self._by_phase

    def _walk(self) -> Iterator[tuple[_Commit, dict[str, State]]]:
        """Each commit that touched results, newest first, with every phase's state just after
        it. The states are undone in place as the walk goes on: copy what you keep."""
        states = {phase: dict(state) for phase, state in self._heads().items()}
        for commit in self._log():
            yield commit, states
            for path, before, _ in commit.changes:
                _set(states.setdefault(_phase_of(path), {}), path, before)

    def _log(self) -> list[_Commit]:
        """The commits that touched results, newest first (read once)."""
        if self._commits is None:
            self._load()
        assert self._commits is not None
        return self._commits

    def _load(self) -> None:
        """The log and the states at HEAD: from the cache where HEAD descends from the commit it was
        read at along first parents (only the new commits are read), else from git whole."""
        shallow, head = self._git("rev-parse", "--is-shallow-repository", "HEAD").split()
        kept = self._cached() if shallow == "false" else None  # a shallow clone's oldest commit adds everything
        new = self._since(kept[0], head) if kept else None
        if kept and new is not None:
            commits, states = [*new, *kept[1]], {phase: dict(state) for phase, state in kept[2].items()}
            for commit in reversed(new):  # oldest first
                for path, _, after in commit.changes:
                    _set(states.setdefault(_phase_of(path), {}), path, after)
        else:
            commits, states = list(self._git_log(head)), self._head(head)
        self._commits, self._head_states = commits, states
        if self.cache is not None and shallow == "false" and not (kept and kept[0] == head):
            write_atomic(self.cache, pickle.dumps((_CODE, head, commits, states), pickle.HIGHEST_PROTOCOL),
                         durable=False)

    def _cached(self) -> tuple[str, list[_Commit], dict[str, State]] | None:
        try:
            version, head, commits, states = pickle.loads(self.cache.read_bytes()) if self.cache else (0, "", [], {})
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
            return None
        return (head, commits, states) if version == _CODE else None

    def _since(self, old: str, head: str) -> list[_Commit] | None:
        """The commits after `old` on HEAD's first-parent line, newest first; None where `old` is not on it
        (history rewritten, another branch)."""
        if old == head:
            return []
        line = self._git("rev-list", "--first-parent", head).split()
        if old not in line:
            return None
        return list(self._git_log(f"{old}..{head}"))

    def _head(self, head: str) -> dict[str, State]:
        states: dict[str, State] = {}
        for line in self._git("ls-tree", "-r", head, "--", CHALLENGES).splitlines():
            meta, path = line.split("\t", 1)
            if _is_result(path):
                states.setdefault(_phase_of(path), {})[path] = meta.split()[2]
        return states

    def _git_log(self, commits: str) -> Iterator[_Commit]:
        out = self._git("log", "--first-parent", "--diff-merges=first-parent", "--relative", "--raw",
                        "--no-abbrev", "--no-renames", "--format=%x00%H %cI", commits, "--", CHALLENGES)
        for block in out.split("\0")[1:]:
            header, *lines = block.strip("\n").splitlines()
            sha, when = header.split()
            changes = [_change(line) for line in lines if line.startswith(":")]
            changes = [change for change in changes if _is_result(change[0])]
            if changes:
                yield _Commit(sha, dt.datetime.fromisoformat(when).astimezone(dt.UTC), changes)

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
                   for committed, blob in self._held().get(path, ()))

    def _signed_time(self, path: str, blob: str) -> dt.datetime | None:
        """`Verifier.signed_time` of a past record, once per blob: snapshots share most of their files."""
        if blob not in self._signed:
            record, verifier = self._blobs.get(blob), self.store.verifier
            self._signed[blob] = (verifier.signed_time(record, self.store.root / path)
                                  if record is not None and verifier is not None else None)
        return self._signed[blob]

    def _committed_at(self) -> dict[str, dt.datetime]:
        if self._times is None:
            self._times = {commit.sha: commit.at for commit in self._log()}
        return self._times

    def _held(self) -> dict[str, list[tuple[dt.datetime, str]]]:
        """Each result file that held more than one record, with when each was committed (their blobs read)."""
        if self._versions is None:
            held: dict[str, list[tuple[dt.datetime, str]]] = {}
            for commit in self._log():
                for path, _, after in commit.changes:
                    if after is not None:
                        held.setdefault(path, []).append((commit.at, after))
            self._versions = {path: found for path, found in held.items() if len({b for _, b in found}) > 1}
            self._read({blob for found in self._versions.values() for _, blob in found})
        return self._versions

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

