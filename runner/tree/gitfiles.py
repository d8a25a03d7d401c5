"""What git knows of files of the tree: the commit that added each, and when.

The time a submission landed is the time of the commit that added it (the squash merge of its pull
request, made by GitHub, so a participant cannot forge it); the pull-request comments find the
pull request through the same commit.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Added:
    commit: str
    at: dt.datetime


def added(root: Path, rel: str) -> Added | None:
    """The commit that added `rel` (relative to the repository root `root`), or None when git does
    not know the file (not committed, or no repository)."""
    return _added(root, f":(literal){rel}", first=True).get(rel)


def added_all(root: Path, pattern: str) -> dict[str, Added]:
    """The commit that last added each file matching `pattern` (a glob relative to `root`, `*` within
    one folder, `**` across folders), from one `git log`: a catalog of hundreds of challenges costs one
    walk of the history, not one per file (nor a walk that matches each commit against hundreds of
    paths). Files git does not know (not committed, or no repository) are left out."""
    return _added(root, f":(glob){pattern}", first=False)


def _added(root: Path, pathspec: str, *, first: bool) -> dict[str, Added]:
    done = subprocess.run(["git", "log", *(["-1"] if first else []), "--diff-filter=A", "--no-renames",
                           "--name-only", "-z", "--format=%x01%H %cI", "--", pathspec],
                          cwd=root, capture_output=True, text=True, check=False)
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
    """Every blob id `rel` has had in the history of HEAD (one `git log`); empty outside git."""
    done = subprocess.run(["git", "log", "--format=", "--raw", "--no-abbrev", "--no-renames", "--",
                           f":(literal){rel}"], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return set()
    # Each line: ":<old mode> <new mode> <old blob> <new blob> <status>\t<path>"
    return {line.split()[3] for line in done.stdout.splitlines() if line.startswith(":") and len(line.split()) > 4}


def rewound(root: Path, pattern: str) -> set[str]:
    """The files matching `pattern` (a glob relative to `root`) whose last committed change on HEAD's
    first-parent line brought back content they had held and lost to other content: a record put back
    over its successor. A file deleted and restored as it was is not rewound. Empty outside git."""
    done = subprocess.run(["git", "log", "--reverse", "--first-parent", "--diff-merges=first-parent", "--relative",
                           "--raw", "--no-abbrev", "--no-renames", "--format=", "--", f":(glob){pattern}"],
                          cwd=root, capture_output=True, text=True, check=False)
    current: dict[str, str] = {}  # path -> its last content that was not a deletion
    superseded: dict[str, set[str]] = {}
    back: set[str] = set()
    for line in done.stdout.splitlines() if done.returncode == 0 else ():
        meta, _, path = line.partition("\t")
        new = meta.split()[3] if line.startswith(":") and len(meta.split()) > 4 else None
        if new is None or not new.strip("0"):
            continue
        (back.add if new in superseded.get(path, ()) else back.discard)(path)
        if current.get(path, new) != new:
            superseded.setdefault(path, set()).add(current[path])
        current[path] = new
    return back


def head_commit(root: Path) -> str | None:
    """The commit checked out at `root`, or None outside git."""
    done = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None
