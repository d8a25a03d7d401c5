"""Results an organizer took out of a phase's rankings: `challenges/<c>/exclusions/<phase>.yml`.

The file kind is declared in `loading` (`ExclusionsFile`); this module knows where it sits and reads
it for a phase, so the leaderboard on the site, `challenge leaderboard` and `challenge check` agree.
"""

from __future__ import annotations

from collections.abc import Iterable

from runner.tree.loading import load_exclusions
from runner.tree.paths import TreePaths
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result


def exclusions(paths: TreePaths, slug: str, phase: str) -> dict[str, str]:
    """participant/id -> the reason it is excluded, for one phase (none without a file)."""
    path = paths.exclusions_file(slug, phase)
    return load_exclusions(path) if path.is_file() else {}


def ranking_exclusions(paths: TreePaths, phase: Phase, results: Iterable[Result]) -> dict[str, str]:
    """participant/id -> why it ranks nowhere: the organizers' exclusions, and (unless the phase sets
    rank_across_data_changes) each scored result whose hidden data or evaluation differ from those of the
    phase's newest scored result, by their provenance; results without provenance are compared with nothing.
    Failed results rank nowhere anyway, and one that failed before its evaluation ran names the evaluation
    image as pinned, not as built: they set nothing."""
    return _incomparable(phase, results) | exclusions(paths, phase.challenge, phase.slug)


def _incomparable(phase: Phase, results: Iterable[Result]) -> dict[str, str]:
    scored = [(r, r.provenance) for r in results if r.status == "succeeded" and r.provenance is not None]
    if phase.rank_across_data_changes or not scored:
        return {}
    newest = max(scored, key=lambda pair: (pair[1].signed_at, pair[0].finished_at or ""))[1]
    data, evaluation = newest.data_manifest, newest.evaluation()
    found = {}
    for result, origin in scored:
        other = [what for what, differs in (("hidden data", origin.data_manifest != data),
                                            ("evaluation", origin.evaluation() != evaluation)) if differs]
        if other:
            found[f"{result.participant}/{result.submission}"] = (
                f"scored on other {' and another '.join(other)} than the phase's newest results "
                f"(data {short(origin.data_manifest)}, evaluation {short(origin.evaluation())}; "
                f"now {short(data)}, {short(evaluation)}): not comparable with them")
    return found


def short(digest: str) -> str:
    """A content hash as the site shows it: its first 12 hex digits."""
    return digest.rpartition(":")[2][:12]
