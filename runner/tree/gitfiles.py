"""What git knows of files of the tree: the commit that added each, and when; every content (blob) a
file has had, and those contents; the commit checked out, and whether the clone is shallow.

The time a submission landed is the time of the commit that added it (the squash merge of its pull
request, made by GitHub, so a participant cannot forge it); the pull-request comments find the
pull request through the same commit. Signed results are checked against the blobs their files held.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import itertools
import pickle
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runner.codekey import code_key
from runner.errors import ChallengeError
from runner.tree.records import write_atomic


@dataclass(frozen=True)
class Added:
    commit: str
    at: dt.datetime


def added(root: Path, rel: str) -> Added | None:
    """The commit that added `rel` (relative to the repository root `root`), or None when git does
    not know the file (not committed, or no repository)."""
    return _added(root, f":(literal){rel}", first=True).get(rel)


def added_all(root: Path, pattern: str, *, cache: Path | None = None) -> dict[str, Added]:
    """The commit that last added each file matching `pattern` (a glob relative to `root`, `*` within
    one folder, `**` across folders), from one `git log`: a catalog of hundreds of challenges costs one
    walk of the history, not one per file (nor a walk that matches each commit against hundreds of
    paths). Files git does not know (not committed, or no repository) are left out.

    `cache`: a file keeping the answer with the commit it was read at (HEAD then) and the code that read
    it; while HEAD is that commit nothing is read, and where HEAD descends from it only the commits since
    (`old..HEAD`) are walked, a file they added taking the newer of the two commits, as the walk of the
    whole history, newest first, would have found it."""
    pathspec = f":(glob){pattern}"
    head = head_commit(root) if cache is not None else None
    if cache is None or head is None:
        return _added(root, pathspec, first=False)
    try:
        code, kept_pattern, old, found = pickle.loads(cache.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
        code, kept_pattern, old, found = "", "", "", {}
    if (code, kept_pattern) != (_code(), pattern):
        old = ""
    if old == head:
        return dict(found)
    if old and _descends(root, old, head):
        found = dict(found)
        for name, new in _added(root, pathspec, first=False, commits=f"{old}..{head}").items():
            if name not in found or new.at >= found[name].at:
                found[name] = new
    else:
        found = _added(root, pathspec, first=False)
    cache.parent.mkdir(parents=True, exist_ok=True)
    temporary = cache.with_name(f".{cache.name}.tmp")
    temporary.write_bytes(pickle.dumps((_code(), pattern, head, found), pickle.HIGHEST_PROTOCOL))
    temporary.replace(cache)
    return dict(found)


@functools.cache
def _code() -> str:
    """The code that reads the log (`codekey`): a cache kept by other code is read again."""
    return code_key([__name__])


def _descends(root: Path, old: str, head: str) -> bool:
    """Whether `old` is a commit `head` descends from."""
    done = subprocess.run(["git", "merge-base", "--is-ancestor", old, head], cwd=root, capture_output=True,
                          check=False)
    return done.returncode == 0


def _added(root: Path, pathspec: str, *, first: bool, commits: str | None = None) -> dict[str, Added]:
    done = subprocess.run(["git", "log", *(["-1"] if first else []), "--diff-filter=A", "--no-renames",
                           "--name-only", "-z", "--format=%x01%H %cI", *([commits] if commits else []), "--",
                           pathspec], cwd=root, capture_output=True, text=True, check=False)
    found: dict[str, Added] = {}
    if done.returncode != 0:
        return found
    # Each commit: \x01<sha> <time>\0\n<name>\0<name>\0...; newest first, so the first commit seen adding a
    # file is the one that last added it.
    for block in done.stdout.split("\x01")[1:]:
        header, *names = block.split("\0")
        sha, when = header.split()
        at = dt.datetime.fromisoformat(when).astimezone(dt.UTC)
        for name in filter(None, (n.lstrip("\n") for n in names)):
            found.setdefault(name, Added(sha, at))
    return found


def blob_id(data: bytes) -> str:
    """The id git gives a file of this content (`git hash-object`): names a file's content in any clone."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def blob_history(root: Path, rel: str) -> set[str]:
    """Every blob id `rel` has had in the history of HEAD (deletions as zeros); empty outside git."""
    return versions(root, f":(literal){rel}").get(rel, set())


def versions(root: Path, pathspec: str) -> dict[str, set[str]]:
    """Every blob id each file matching `pathspec` has had anywhere in HEAD's history, in one `git log`:
    every parent of every merge counts (a merge whose first parent skips a change still brings its blob),
    and no history simplification hides a file a merge dropped. Empty outside git; GitFilesError when git
    fails inside a repository (a check that read nothing must not pass).

    Kept in the repository's own git folder (`challenge-runner/`, never part of the tree) with the commit it
    was read at: where HEAD descends from that commit, only the commits since are walked (their union is
    every commit HEAD reaches). Asking whether a tree's allowed_signers ever existed walked 219,000
    commits on every build: 3.5 s."""
    place = _git(root, "rev-parse", "--absolute-git-dir", "--verify", "-q", "HEAD").split("\n")
    if len(place) < 2 or not place[1]:  # outside git, or no commit yet
        return {}
    folder, head = Path(place[0]), place[1]
    name = hashlib.sha256(f"{_code()} {pathspec}".encode()).hexdigest()[:32]
    cache = folder / "challenge-runner" / f"versions-{name}.pickle"
    old, found = _kept_versions(cache)
    if old == head:
        return found
    if old and _descends(root, old, head):
        for path, blobs in _versions(root, pathspec, f"{old}..{head}").items():
            found.setdefault(path, set()).update(blobs)
    else:
        found = _versions(root, pathspec, head)
    try:
        write_atomic(cache, pickle.dumps((head, found), pickle.HIGHEST_PROTOCOL), durable=False)
    except OSError:  # a git folder this user cannot write: next time reads it all again
        pass
    return found


def _kept_versions(cache: Path) -> tuple[str, dict[str, set[str]]]:
    try:
        old, found = pickle.loads(cache.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
        return "", {}
    return (old, found) if isinstance(old, str) and isinstance(found, dict) else ("", {})


def _versions(root: Path, pathspec: str, commits: str) -> dict[str, set[str]]:
    out = _git(root, "log", "--full-history", "-m", "--raw", "-z", "--no-abbrev", "--no-renames", "--relative",
               "--format=", commits, "--", pathspec)
    found: dict[str, set[str]] = {}
    tokens = out.split("\0")
    for meta, path in itertools.pairwise(tokens):
        meta = meta.lstrip("\n")
        if meta.startswith(":") and len(fields := meta.split()) > 4 and fields[1] != "160000":  # no submodule
            found.setdefault(path, set()).add(fields[3])
    return found


MAX_BLOB_BYTES = 8 * 1024**2  # far more than a record the runner writes; a larger file is no result of its


def read_blobs(root: Path, blobs: list[str], *, limit: int = MAX_BLOB_BYTES) -> dict[str, bytes]:
    """The content of each of `blobs` that is a blob of at most `limit` bytes; what git lacks, what is no
    blob (a submodule's commit, recorded where a file was) and what is larger are left out. Their types
    and sizes are asked first (`--batch-check`), so nothing large is read."""
    if not blobs:
        return {}
    checked = _cat_file(root, "--batch-check", blobs).decode("ascii", errors="replace").splitlines()
    wanted = []
    for blob, line in zip(blobs, checked, strict=False):
        fields = line.split()
        if len(fields) == 3 and fields[0] == blob and fields[1] == "blob" and int(fields[2]) <= limit:
            wanted.append(blob)
    out, found, at = _cat_file(root, "--batch", wanted) if wanted else b"", {}, 0
    for blob in wanted:
        end = out.index(b"\n", at)
        oid, kind, size = out[at:end].decode("ascii", errors="replace").split()
        if (oid, kind) != (blob, "blob"):
            raise GitFilesError(f"git cat-file answered {oid} {kind} for blob {blob} in {root}")
        found[blob] = out[end + 1:end + 1 + int(size)]
        at = end + 1 + int(size) + 1
    return found


def _cat_file(root: Path, mode: str, objects: list[str]) -> bytes:
    done = subprocess.run(["git", "cat-file", mode], cwd=root, input="\n".join(objects).encode() + b"\n",
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise GitFilesError(f"git cat-file failed in {root}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


class GitFilesError(ChallengeError):
    """git failed where the tree is a repository."""


def _git(root: Path, *args: str) -> str:
    """git's output (bytes past UTF-8 kept as surrogate escapes), '' outside a repository or before its first
    commit."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, check=False)
    if done.returncode == 0:
        return done.stdout.decode("utf-8", errors="surrogateescape")
    head = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=root, capture_output=True, check=False)
    if head.returncode != 0:  # not a repository, or one with no commit yet: no history
        return ""
    raise GitFilesError(f"git {args[0]} failed in {root}: {done.stderr.decode(errors='replace').strip()}")


def shallow(root: Path) -> bool:
    """Whether the clone at `root` lacks part of its history (`git clone --depth`)."""
    return _git(root, "rev-parse", "--is-shallow-repository").strip() == "true"


def head_commit(root: Path) -> str | None:
    """The commit checked out at `root`, or None outside git."""
    return _git(root, "rev-parse", "--verify", "-q", "HEAD").strip() or None
