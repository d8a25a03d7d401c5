"""Results an organizer took out of a phase's rankings: `challenges/<c>/exclusions/<phase>.yml`.

The file kind is declared in `model` (`ExclusionsFile`); this module knows where it sits and reads
it for a phase, so the leaderboard on the site, `challenge leaderboard` and `challenge check` agree.
"""

from __future__ import annotations

from pathlib import Path

from runner.tree.model import load_exclusions
from runner.tree.paths import TreePaths

FOLDER = "exclusions"


def exclusions_file(paths: TreePaths, slug: str, phase: str) -> Path:
    return paths.challenge(slug) / FOLDER / f"{phase}.yml"


def exclusions(paths: TreePaths, slug: str, phase: str) -> dict[str, str]:
    """participant/id -> the reason it is excluded, for one phase (none without a file)."""
    path = exclusions_file(paths, slug, phase)
    return load_exclusions(path) if path.is_file() else {}
