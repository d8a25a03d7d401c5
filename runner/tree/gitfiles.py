"""What git knows of one file of the tree: the commit that added it, and when.

The time a submission landed is the time of the commit that added it (the squash merge of its pull
request, made by GitHub, so a participant cannot forge it); the pull-request comments find the
pull request through the same commit.
"""

from __future__ import annotations

import datetime as dt
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
    done = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H %cI", "-1", "--", rel],
                          cwd=root, capture_output=True, text=True, check=False)
    words = done.stdout.split()
    if done.returncode != 0 or len(words) != 2:
        return None
    return Added(words[0], dt.datetime.fromisoformat(words[1]).astimezone(dt.UTC))
