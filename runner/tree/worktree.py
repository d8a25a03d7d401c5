"""What the working tree holds unlike HEAD, and HEAD's id of each folder that holds exactly HEAD's files: a key
of a folder's files that costs one `git status` of the tracked files (git stats them in C, on every core) and
one stat per folder, not a stat of each file from Python; and one that holds across clones (a fresh checkout
gives every file a new time and inode, never a new tree id).

Tracked files count as git sees them (modified by the index's file times and sizes, or by content where those
cannot tell; staged; deleted). Anything else in a folder (untracked or ignored, which git's own walk of two
million files takes 4-5 s to find) is found by listing the folder against HEAD's tree; once they matched, the
time of each folder below is kept, and while none has changed the folder is not listed again: a file added,
removed or renamed anywhere changes its folder's time (git's untracked cache rests on the same rule).

Knows: git. Must not import: anything of runner but runner.tree.records.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from runner.tree.records import write_atomic

# A folder's time this close to the moment it was read may yet be followed by a change within the same tick of
# the file system's clock (a second on some), which would leave it as it was: it is not kept.
RACY_NS = 2 * 10**9
LISTED_AT_ONCE = 500
OBJECT_ID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
Times = dict[str, int]  # each folder below a checked one (relative to it, "" itself) -> its modification time (ns)


class WorkingTree:
    """The working tree at `root` (a repository's top), and the tracked paths `git status` lists under the folder
    it was asked of. The status runs while the caller goes on (`working_tree` starts it: 1.7 s of git at two million
    files, as long as the rest of a rebuild's look at the tree); the first question that needs it waits for it."""

    def __init__(self, root: Path, head: str, status: subprocess.Popen[bytes], *, started_ns: int) -> None:
        self.root = root
        self.head = head  # the commit HEAD named when git compared the files: every later question names it
        self.started_ns = started_ns  # when the status started (time.time_ns): a file changed since, it did not see
        self._status = status
        self._pid = os.getpid()

    @functools.cached_property
    def _changed(self) -> tuple[frozenset[str], frozenset[str]] | None:
        """Repository-relative paths of tracked files that differ from `head`, and every folder above one;
        None where git's status failed (everything then counts as differing), or where this is a process forked
        before it answered (a child reading the shared pipe would leave the parent an empty answer: all clean)."""
        if os.getpid() != self._pid:
            return None
        out, _ = self._status.communicate()
        # A commit landing between `working_tree`'s look at HEAD and the status's own: it compared another commit.
        if self._status.returncode != 0 or self._moved():
            return None
        entries = {item[3:].rstrip("/") for item in out.decode("utf-8", errors="surrogateescape").split("\0")
                   if len(item) > 3}
        return frozenset(entries), frozenset(path[:at] for path in entries for at in _slashes(path))

    def differs(self, rel: str) -> bool:
        """Whether git sees a tracked file at or below `rel` (repository-relative) that differs from HEAD; True for
        any `rel` where its status failed, or in a process forked before it answered (`_changed`)."""
        if (changed := self._changed) is None:
            return True
        entries, folders = changed
        if rel in folders:
            return True
        parts = rel.split("/")
        return any("/".join(parts[:n]) in entries for n in range(1, len(parts) + 1))

    def as_at_head(self, rel: str) -> bool:
        """Whether the file `rel` (repository-relative) holds what HEAD holds, as read now or later: git saw it so,
        and it has not changed since the status started (its ctime, which no write or replacement leaves as it
        was, is older than that by more than the file system's clock may lag: `RACY_NS`)."""
        if self.differs(rel):
            return False
        try:
            changed = os.stat(os.path.join(self.root, rel), follow_symlinks=False).st_ctime_ns
        except OSError:
            return False
        return settled([changed], now=self.started_ns)

    def folder_ids(self, folders: list[str], *, kept: Path | None = None) -> dict[str, str]:
        """HEAD's tree id of each of `folders` (repository-relative) that holds exactly HEAD's files and folders;
        one that differs, holds anything else or is no folder at HEAD is left out. `kept`: a file keeping the
        times of the folders below each one that matched, so that it is not listed again while none changed."""
        ids = self._tree_ids([folder for folder in folders if _plain(folder)])
        known = _kept(kept)
        # The kept times are compared while git's status still runs; only then are the folders it lists left out.
        same = {folder: seen for folder, tree in ids.items() if (seen := known.get(folder)) and seen[0] == tree
                and _unchanged(os.path.join(self.root, folder), seen[1])}
        if self._changed is None:  # git's status failed: nothing is known clean, and the kept times stay
            return {}
        ids = {folder: tree for folder, tree in ids.items() if not self.differs(folder)}
        found, times, unsure = {}, {}, []
        for folder, tree in ids.items():
            if folder in same:
                found[folder], times[folder] = tree, same[folder]
            else:
                unsure.append(folder)
        listed = self._listed(unsure)
        for folder in unsure:
            now = time.time_ns()
            held = _holds(self.root, folder)
            if held is not None and folder in listed and held[0] == listed[folder]:
                found[folder] = ids[folder]
                if settled(held[1].values(), now=now):
                    times[folder] = (ids[folder], held[1])
        if self._moved():  # a commit landed meanwhile: what was compared is no longer what HEAD holds
            return {}
        if kept is not None and times != known:
            write_atomic(kept, pickle.dumps(times, pickle.HIGHEST_PROTOCOL), durable=False)
        return found

    def _moved(self) -> bool:
        done = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=self.root, capture_output=True,
                              check=False)
        return done.stdout.decode(errors="replace").strip() != self.head

    def _tree_ids(self, folders: list[str]) -> dict[str, str]:
        """The tree id of each of `folders` (`_plain` names: one line each) that is a folder at `head`, from one
        `git cat-file`; where its answer is not one line per folder, none."""
        if not folders:
            return {}
        done = subprocess.run(["git", "cat-file", "--batch-check=%(objectname) %(objecttype)"], cwd=self.root,
                              input=b"".join(os.fsencode(f"{self.head}:{folder}\n") for folder in folders),
                              capture_output=True, check=False)
        lines = done.stdout.split(b"\n")
        if done.returncode != 0 or len(lines) != len(folders) + 1:
            return {}
        found = {}
        for folder, line in zip(folders, lines, strict=False):
            fields = line.split(b" ")
            if len(fields) == 2 and fields[1] == b"tree" and OBJECT_ID.fullmatch(fields[0]):
                found[folder] = fields[0].decode()
        return found

    def _listed(self, folders: list[str]) -> dict[str, set[str]]:
        """What `head` holds below each of `folders`, from `git ls-tree`: paths relative to the folder, a
        folder's with a trailing "/"; a folder git could not list is left out (it matches nothing)."""
        listed: dict[str, set[str]] = {}
        for at in range(0, len(folders), LISTED_AT_ONCE):  # a command line holds so many pathspecs
            asked = folders[at:at + LISTED_AT_ONCE]
            try:
                done = subprocess.run(["git", "ls-tree", "-r", "-t", "-z", "--full-tree", self.head, "--",
                                       *(f":(literal){folder}/" for folder in asked)], cwd=self.root,
                                      capture_output=True, check=False)
            except OSError:
                continue
            if done.returncode == 0:
                listed.update(_paths_below(asked, done.stdout))
        return listed


def _paths_below(folders: list[str], out: bytes) -> dict[str, set[str]]:
    """`git ls-tree -r -t -z`'s answer, per folder asked: what it holds, as `WorkingTree._listed` names it."""
    listed: dict[str, set[str]] = {folder: set() for folder in folders}
    for item in out.decode("utf-8", errors="surrogateescape").split("\0"):
        if "\t" in item:
            meta, path = item.split("\t", 1)
            for at in _slashes(path):  # the folders asked for above it (the trees leading to one are listed too)
                if path[:at] in listed:
                    listed[path[:at]].add(path[at + 1:] + "/" if meta.split()[1] == "tree" else path[at + 1:])
    return listed


def _holds(root: Path, folder: str) -> tuple[set[str], Times] | None:
    """What the working tree holds below `folder`, as `_listed` names it, and the time of each folder (read
    before it is listed, so a change while listing shows next time); None where it is no folder."""
    found: set[str] = set()
    times: Times = {}
    top = os.path.join(root, folder)

    def walk(path: str, rel: str) -> None:
        times[rel] = os.stat(path).st_mtime_ns
        with os.scandir(path) as entries:
            for entry in entries:
                name = f"{rel}{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    found.add(f"{name}/")
                    walk(entry.path, f"{name}/")
                else:
                    found.add(name)
    try:
        if not os.path.isdir(top) or os.path.islink(top):
            return None
        walk(top, "")
    except OSError:
        return None
    return found, times


def settled(times: Iterable[int], *, now: int) -> bool:
    """Whether file times (ns) read at `now` are old enough to key a cache: a change within the same tick of
    the file system's clock (`RACY_NS`) would leave them as they are."""
    return all(at < now - RACY_NS for at in times)


def _unchanged(top: str, times: Times) -> bool:
    try:
        return all(os.stat(os.path.join(top, rel)).st_mtime_ns == at for rel, at in times.items())
    except OSError:
        return False


def _kept(path: Path | None) -> dict[str, tuple[str, Times]]:
    try:
        found = pickle.loads(path.read_bytes()) if path else {}
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
        return {}
    return found if isinstance(found, dict) else {}


def working_tree(root: Path, under: str) -> WorkingTree | None:
    """The tracked files that differ from HEAD under `under` (a repository-relative folder) in the working tree
    at `root`, as git's status finds them: it starts now, and runs while the caller goes on. None where `root` is
    not the top of a git working tree with a commit (the caller then looks at files itself).
    `--no-optional-locks`: the status never writes the index, so a runner committing meanwhile never finds it
    locked."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel", "--verify", "-q", "HEAD"], cwd=root,
                             capture_output=True, check=False)
        found = top.stdout.decode(errors="surrogateescape").split("\n")
        if top.returncode != 0 or len(found) < 2 or os.path.realpath(found[0]) != os.path.realpath(root):
            return None
        started = time.time_ns()
        status = subprocess.Popen(["git", "--no-optional-locks", "-c", "core.quotepath=off", "status", "--porcelain=v1",
                                   "-z", "--untracked-files=no", "--no-renames", "--", f":(literal){under}"], cwd=root,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except FileNotFoundError:  # no git
        return None
    return WorkingTree(root, found[1], status, started_ns=started)


def _plain(folder: str) -> bool:
    """A name `git cat-file` reads back as one line, exactly (no control character: it strips a trailing CR)."""
    return folder.isprintable()


def _slashes(path: str) -> list[int]:
    return [at for at, char in enumerate(path) if char == "/"]
