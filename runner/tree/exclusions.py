"""Results an organizer took out of a phase's rankings: `challenges/<c>/exclusions/<phase>.yml`.

The file kind is declared in `model` (`ExclusionsFile`); this module knows where it sits and reads
it for a phase, so the leaderboard on the site, `challenge leaderboard` and `challenge check` agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from runner.tree.model import Phase, Result, load_exclusions
from runner.tree.paths import TreePaths

FOLDER = "exclusions"


def exclusions_file(paths: TreePaths, slug: str, phase: str) -> Path:
    return paths.challenge(slug) / FOLDER / f"{phase}.yml"


def exclusions(paths: TreePaths, slug: str, phase: str) -> dict[str, str]:
    """participant/id -> the reason it is excluded, for one phase (none without a file)."""
    path = exclusions_file(paths, slug, phase)
    return load_exclusions(path) if path.is_file() else {}


def ranking_exclusions(paths: TreePaths, phase: Phase, results: Iterable[Result]) -> dict[str, str]:
    """participant/id -> why it ranks nowhere: the organizers' exclusions, and (unless the phase sets
    rank_across_data_changes) each result scored on other hidden data or by another evaluation than the
    phase's newest result, by their provenance; results without provenance are compared with nothing."""
    return incomparable(phase, results) | exclusions(paths, phase.challenge, phase.slug)


def incomparable(phase: Phase, results: Iterable[Result]) -> dict[str, str]:
    if phase.rank_across_data_changes:
        return {}
    known = [r for r in results if r.provenance is not None]
    if not known:
        return {}
    newest = max(known, key=lambda r: (r.provenance.signed_at if r.provenance else "", r.finished_at or ""))
    assert newest.provenance is not None
    data, evaluation = newest.provenance.data_manifest, newest.provenance.evaluation()
    found = {}
    for result in known:
        assert result.provenance is not None
        other = [what for what, differs in (("hidden data", result.provenance.data_manifest != data),
                                            ("evaluation", result.provenance.evaluation() != evaluation)) if differs]
        if other:
            found[f"{result.participant}/{result.submission}"] = (
                f"scored on other {' and another '.join(other)} than the phase's newest results "
                f"(data {short(result.provenance.data_manifest)}, evaluation {short(result.provenance.evaluation())}; "
                f"now {short(data)}, {short(evaluation)}): not comparable with them")
    return found


def short(digest: str) -> str:
    """A content hash as the site shows it: its first 12 hex digits."""
    return digest.rpartition(":")[2][:12]
