"""What the working tree holds unlike HEAD, as git sees it, and HEAD's id of a folder that holds nothing else:
a key of a folder's files from one `git status` for the whole tree, not a stat of each file from Python, and
one that holds across clones (a fresh checkout gives every file a new time and inode, never a new tree id).

Git decides what differs as `git status` does: files modified (by the index's file times and sizes, and by
content where those cannot tell), staged, deleted, untracked or ignored all count, so a folder git calls
unchanged holds exactly the files of its tree at HEAD.

Knows: git. Must not import: anything of runner but runner.errors.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WorkingTree:
    """The working tree at `root` (a repository's top), with the paths `git status` lists under `under`."""

    root: Path
    entries: frozenset[str]  # repository-relative, as `git status` lists them (a folder without its "/")
    folders: frozenset[str]  # every folder above an entry

    def differs(self, rel: str) -> bool:
        """Whether the file or folder `rel` (repository-relative) holds anything unlike HEAD."""
        if rel in self.folders:
            return True
        parts = rel.split("/")
        return any("/".join(parts[:n]) in self.entries for n in range(1, len(parts) + 1))

    def folder_ids(self, folders: list[str]) -> dict[str, str]:
        """HEAD's tree id of each of `folders` (repository-relative) that the working tree holds as HEAD does,
        from one `git cat-file`; a folder that differs or is no folder at HEAD is left out."""
        asked = [folder for folder in folders if not self.differs(folder) and "\n" not in folder]
        if not asked:
            return {}
        done = subprocess.run(["git", "cat-file", "--batch-check=%(objectname) %(objecttype)"], cwd=self.root,
                              input="".join(f"HEAD:{folder}\n" for folder in asked).encode(),
                              capture_output=True, check=False)
        if done.returncode != 0:
            return {}
        found = {}
        for folder, line in zip(asked, done.stdout.decode("ascii", errors="replace").splitlines(), strict=False):
            fields = line.split()
            if len(fields) == 2 and fields[1] == "tree":
                found[folder] = fields[0]
        return found


def working_tree(root: Path, under: str) -> WorkingTree | None:
    """What differs from HEAD under `under` (a repository-relative folder) in the working tree at `root`; None
    where `root` is not the top of a git working tree with a commit (the caller then looks at files itself).
    `--no-optional-locks`: the status never writes the index, so a runner committing meanwhile never finds
    it locked."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel", "--verify", "-q", "HEAD"], cwd=root,
                             capture_output=True, check=False)
        if top.returncode != 0 or os.path.realpath(top.stdout.decode(errors="replace").split("\n", 1)[0]) != \
                os.path.realpath(root):
            return None
        done = subprocess.run(["git", "--no-optional-locks", "-c", "core.quotepath=off", "status", "--porcelain=v1",
                               "-z", "--untracked-files=all", "--ignored=matching", "--no-renames", "--",
                               f":(literal){under}"], cwd=root, capture_output=True, check=False)
    except FileNotFoundError:  # no git
        return None
    if done.returncode != 0:
        return None
    entries = {item[3:].rstrip("/") for item in done.stdout.decode("utf-8", errors="surrogateescape").split("\0")
               if len(item) > 3}
    folders = {path[:at] for path in entries for at in _slashes(path)}
    return WorkingTree(root, frozenset(entries), frozenset(folders))


def _slashes(path: str) -> list[int]:
    return [at for at, char in enumerate(path) if char == "/"]
