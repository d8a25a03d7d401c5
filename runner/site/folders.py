"""Folders a build owns (the staging folder, the site): what it no longer writes is removed, so the folder
equals a clean build's.

Knows: the file system. Must not import: anything of runner.
"""

from __future__ import annotations

import os


def remove_unwanted(top: str, keep: set[str]) -> None:
    """Remove every file below `top` whose path (joined to `top` as `os.walk` joins it) is not in `keep`, and
    every folder below it left empty. A folder's emptiness is known from the walk itself (bottom up: its files
    and its subfolders gone), not asked of the file system folder by folder (a listing of each of 1,500
    folders was a third of the walk)."""
    removed: set[str] = set()
    for folder, dirs, names in os.walk(top, topdown=False):
        left = False
        for name in names:
            path = os.path.join(folder, name)
            if path in keep:
                left = True
            else:
                os.unlink(path)
        if folder == top or left or any(os.path.join(folder, name) not in removed for name in dirs):
            continue
        try:
            os.rmdir(folder)
        except OSError:  # written meanwhile: it stays
            continue
        removed.add(folder)
