"""Carrying a phase's algorithms over to another phase: a living benchmark (a finished phase's images
on new hidden data) and retraining the best (the top of a leaderboard trained on more secret data).

Each carried result becomes an ordinary submission file in the target phase,
`submissions/<target>/<participant>/<same id>.yml`, naming the same image or image archive, so the
queue evaluates it, and `commit-results` commits its result, like any other. Writing those files is
resumable: a file already there for the same algorithm is left alone (and its result, once made,
is not made again); one there for another algorithm is reported and skipped.

The ranks come from the source phase's leaderboard as the site shows it (`runner.ranking`, which
this stage may not import): the caller passes each result with its rank as a `Standing`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import TypeAdapter

from runner.errors import ChallengeError
from runner.tree.located import ModelError
from runner.tree.phase_model import Phase
from runner.tree.result_model import Result
from runner.tree.store import Store
from runner.tree.submission_model import Submission, SubmissionFile

Selection = Literal["all", "best", "top"]


class RerunError(ChallengeError):
    """Phases that cannot be carried over, or a source phase that cannot be ranked by this reader."""


@dataclass(frozen=True)
class Standing:
    """A result of the source phase and its rank on that phase's leaderboard (None: unranked)."""

    result: Result
    rank: int | None


@dataclass(frozen=True)
class Choice:
    """Which results to carry: all succeeded ones, each participant's best, or those ranked `top` or better."""

    how: Selection
    top: int = 0

    def __str__(self) -> str:
        return f"top {self.top}" if self.how == "top" else self.how


@dataclass(frozen=True)
class PlannedRerun:
    """One result of the source phase and the submission file that carries it into the target phase."""

    source: Submission
    rank: int | None
    path: Path
    text: str


@dataclass(frozen=True)
class Carried:
    """What writing a planned rerun did: `written` now, `kept` (already there for the same algorithm),
    or `conflict` (a file for another algorithm is there: skipped, `why` says what)."""

    plan: PlannedRerun
    state: Literal["written", "kept", "conflict"]
    why: str = ""


def check_phases(source: Phase, target: Phase) -> None:
    """Only algorithms can run again (a predictions file was made for the source data alone), and only
    as the same kind: a training image is trained again, an algorithm image is run again."""
    if source.slug == target.slug:
        raise RerunError(f"{source.challenge}: --from and --to are both {source.slug!r}; name another phase")
    for phase in (source, target):
        if not phase.runs_algorithms:
            raise RerunError(f"{phase.challenge}/{phase.slug} takes predictions files, which cannot run on other "
                             "data; only algorithm and training phases can be re-run")
    if source.submission_kind != target.submission_kind:
        raise RerunError(f"{source.challenge}: {source.slug!r} takes {source.submission_kind} submissions but "
                         f"{target.slug!r} takes {target.submission_kind}; a rerun needs the same submission_kind")


def select(standings: Sequence[Standing], choice: Choice) -> list[Standing]:
    """The succeeded results `choice` names, best ranked first. `top` keeps every result ranked N or
    better, so results tied at the cut all go (competition ranks: 1, 2, 2 are the top 2)."""
    succeeded = [s for s in standings if s.result.status == "succeeded"]
    _check_ranked(succeeded)
    ordered = sorted(succeeded, key=lambda s: (s.rank is None, s.rank or 0, s.result.participant, s.result.submission))
    if choice.how == "all":
        return ordered
    ranked = [s for s in ordered if s.rank is not None]
    if choice.how == "top":
        return [s for s in ranked if s.rank is not None and s.rank <= choice.top]
    best: dict[str, Standing] = {}
    for standing in ranked:  # best ranked first: the first of each participant is their best
        best.setdefault(standing.result.participant, standing)
    return list(best.values())


def _check_ranked(succeeded: list[Standing]) -> None:
    """A result whose scores are withheld from this reader (blind, unapproved, not public) cannot be
    ranked, and a selection made without it would be wrong: refuse rather than guess."""
    hidden = [s.result for s in succeeded if s.result.withheld and s.result.metrics is None]
    if hidden:
        first = hidden[0]
        raise RerunError(f"{first.challenge}/{first.phase}: the scores of {len(hidden)} result(s) are withheld "
                         f"({first.withheld}); pass --identity with an organizer's key to rank them")


def check_withheld(source: Phase, choice: Choice, *, ranking_public: bool, publish_selection: bool) -> None:
    """A selection by rank writes submission files for the selected only, so the files show who was
    selected: from a phase whose ranking is withheld now, only when the organizer says so."""
    if choice.how != "all" and not ranking_public and not publish_selection:
        raise RerunError(f"{source.challenge}/{source.slug} withholds its ranking now: the files --{choice.how} "
                         "writes would publish who was selected; rerun --all, wait until it is revealed, or pass "
                         "--publish-selection to publish the selection (never the ranks)")


def plan(store: Store, target: Phase, chosen: Sequence[Standing], *, ranking_public: bool = True
         ) -> list[PlannedRerun]:
    """The submission file in `target` for each chosen result of the source phase. A source phase whose
    ranking is withheld now is named in none of them, nor any rank."""
    planned = []
    for standing in chosen:
        result = standing.result
        path = store.paths.submission_file(result.challenge, result.phase, result.participant, result.submission)
        if not path.is_file():
            raise RerunError(f"{result.challenge}/{result.phase}: result {result.participant}/{result.submission} "
                             f"has no submission file at {path.relative_to(store.root)}")
        source = store.submission(path)
        planned.append(PlannedRerun(
            source, standing.rank,
            store.paths.submission_file(target.challenge, target.slug, source.participant, source.id),
            _text(source, target, standing.rank if ranking_public else None, ranking_public=ranking_public)))
    return planned


def _text(source: Submission, target: Phase, rank: int | None, *, ranking_public: bool) -> str:
    """The carried submission: the same algorithm and title, and a description saying where it came from
    (from a phase that withholds its ranking, only that the organizers ran it again)."""
    if ranking_public:
        standing = f"rank {rank}" if rank is not None else "unranked"
        said = f"Re-run of {source.phase} result {source.participant}/{source.id} ({standing} in {source.phase})."
    else:
        said = "Re-run by the organizers."
    description = f"{said}\n\n{source.description}" if source.description else said
    algorithm = ({"image": source.image} if source.image else
                 {"image_archive": asdict(source.image_archive)} if source.image_archive else {})
    fields = {"phase": target.slug, **algorithm, "title": source.title,
              "description": description[:_description_max()], "code_url": source.code_url,
              "publication_url": source.publication_url}
    return yaml.safe_dump({k: v for k, v in fields.items() if v}, sort_keys=False, allow_unicode=True)


@cache
def _description_max() -> int:
    """The submission file's own limit on descriptions (`SubmissionFields.description`)."""
    return int(TypeAdapter(SubmissionFile).json_schema()["properties"]["description"]["maxLength"])


def write(store: Store, planned: Sequence[PlannedRerun]) -> list[Carried]:
    """Write each planned file that is not there yet; leave one there for the same algorithm alone."""
    return [_write_one(store, p) for p in planned]


def _write_one(store: Store, planned: PlannedRerun) -> Carried:
    path = planned.path
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(planned.text)
        return Carried(planned, "written")
    if path.read_text() == planned.text:
        return Carried(planned, "kept")
    try:
        there = store.submission(path)
    except ModelError as exc:
        return Carried(planned, "conflict", f"{path.relative_to(store.root)} is there and unreadable: {exc}")
    source = planned.source
    if (there.image, there.image_archive) == (source.image, source.image_archive):
        return Carried(planned, "kept")  # written before, when its rank in the source phase was another
    return Carried(planned, "conflict", f"{path.relative_to(store.root)} is there and names another algorithm")


def queue(store: Store, carried: Sequence[Carried]) -> list[Submission]:
    """The carried submissions that have no result yet: what a rerun evaluates."""
    found = [store.submission(c.plan.path) for c in carried if c.state != "conflict"]
    return [s for s in found if not store.result_path(s).exists()]
