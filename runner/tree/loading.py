"""The tree's files read and checked against their records: challenge.yml, phases/*.yml, submissions,
method reports, approvals, exclusions and example submissions (a result's record: `result_model`).

Each loader parses its file against the file kind's declaration (`schema_parse.parse`), then checks what
spans fields or needs the file's place in the tree (its folder's name, its phase) in a `_*_issues` function,
so every problem comes out in one `ModelError` naming file, line and field. Which of grand-challenge's Phase
options a phase file refuses, and why (`UNSUPPORTED_GC_OPTIONS`), is decided here once. The small file kinds
that nothing but their loader reads (approvals, exclusions, examples/<name>/example.yml) are declared here too.

Knows: the record modules (`model`, `phase_model`, `submission_model`), `located`, `schema_parse`,
`schema_types`. None of the record modules may import it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import ConfigDict, RootModel

from runner.tree.located import PARTICIPANT, Document, Key, ModelError, load_yaml
from runner.tree.model import (
    CASE_METHODS,
    RANK_THEN_AVERAGE,
    SITE_FOLDERS,
    STRICT,
    SUPPLEMENTARY_SUFFIX,
    Challenge,
    Url,
    url_file,
)
from runner.tree.phase_model import Phase, PhaseFile, PhaseOptions, nested_paths
from runner.tree.schema_parse import Issue, parse
from runner.tree.schema_types import NAME, SLUG, Approval, Name, Slug, Text, meta
from runner.tree.submission_model import MethodReport, Submission, SubmissionFields, SubmissionFile

# --- challenge.yml -----------------------------------------------------------------------------


def load_challenge(path: Path) -> Challenge:
    """challenge.yml; its slug is its folder's name."""
    folder = path.parent.name
    challenge = parse(load_yaml(path), Challenge, checks=lambda c, _: _challenge_issues(c, folder))
    return challenge if challenge.slug else replace(challenge, slug=folder)


def _challenge_issues(challenge: Challenge, folder: str) -> Iterator[Issue]:
    if not SLUG.fullmatch(folder):
        yield None, f"folder name {folder!r} is not a kebab-case slug"
    if challenge.slug and challenge.slug != folder:
        yield ("slug",), f"must match the folder name {folder!r}"
    if folder in SITE_FOLDERS:
        yield None, f"folder name {folder!r} is taken by the site's own pages ({', '.join(sorted(SITE_FOLDERS))})"
    if not challenge.hosted_here and not challenge.website_url:
        yield ("website_url",), (f"a challenge hosted elsewhere (platform: {challenge.platform}) needs the address "
                                 "the catalog links to")
    if challenge.start_date and challenge.end_date and challenge.end_date < challenge.start_date:
        yield ("end_date",), "is before start_date"
    if challenge.data_release_date and challenge.results_announcement_date and \
            challenge.results_announcement_date < challenge.data_release_date:
        yield ("results_announcement_date",), "is before data_release_date"
    if challenge.registration_closes_at and challenge.registration != "required":
        yield ("registration_closes_at",), "closes a registration nobody needs: set registration: required"
    for i, board in enumerate(challenge.combined_leaderboards):
        if board.combine == "median" and any(weight != 1.0 for _, weight in board.phases):
            yield ("combined_leaderboards", i, "combine"), "weights apply to mean and sum; a median takes none"
    yield from _dataset_issues(challenge)


def _dataset_issues(challenge: Challenge) -> Iterator[Issue]:
    """A gated data set keeps its link out of this public file; an open one needs it."""
    seen: set[str] = set()
    for i, data in enumerate(challenge.data):
        if data.name in seen:
            yield ("data", i, "name"), f"another data set is already named {data.name!r}"
        seen.add(data.name)
        if data.terms and data.url:
            yield ("data", i, "url"), ("a data set behind terms must not publish its URL (the repository is public): "
                                       "keep it in the links file `challenge data seal` reads")
        elif not data.terms and not data.url:
            yield ("data", i, "url"), "is required (or set terms, to give the link to registered participants only)"
        if data.terms and challenge.registration != "required":
            yield ("data", i, "terms"), ("participants accept terms by registering: set registration: required "
                                         "in this file")
        if not data.file and not (data.url and url_file(data.url)):
            yield ("data", i, "file"), "is required when the URL does not end in a file name"


# --- phases/<phase>.yml ------------------------------------------------------------------------


# grand-challenge's Phase options (its model's fields, and two it has since dropped) that a phase file here does
# not take, each with why and what stands for it: the one decision, which refuses them in a phase file, lists them
# in the field reference, and names them where `challenge import-phase` leaves them out. Every other option is
# read under its own name (each field's `gc`); `slug` is the phase file's name.
_BOOKKEEPING = "grand-challenge's database keeps it; git keeps when the phase file was added and changed"
_VIEWER = "configures grand-challenge's image viewer for algorithm results; this site has no viewer"
UNSUPPORTED_GC_OPTIONS: dict[str, str] = {
    "id": _BOOKKEEPING,
    "created": _BOOKKEEPING,
    "modified": _BOOKKEEPING,
    "challenge": "names the challenge by grand-challenge's database id: the folder the phase file sits in "
                 "(challenges/<slug>/phases/) says which challenge it is part of",
    "archive": "the hidden test data as an archive on grand-challenge.org: here the runner host keeps it under its "
               "data root (<data-root>/<challenge>/<phase>/inputs/)",
    "algorithm_interfaces": "interfaces stored on grand-challenge.org, named by id: write their sockets as "
                            "algorithm_inputs and algorithm_outputs",
    "additional_evaluation_inputs": "values grand-challenge asks the organizers for at each evaluation: build them "
                                    "into the evaluation image or its hidden data",
    "evaluation_outputs": "files grand-challenge keeps from each evaluation besides metrics.json: here an evaluation "
                          "writes /output/metrics.json alone",
    "algorithm_selectable_gpu_type_choices": "GPU types of grand-challenge's cloud that participants choose from: "
                                             "set algorithm_resources.gpus; the runner host decides which GPUs",
    "algorithm_maximum_settable_memory_gb": "the most memory participants may choose for their algorithm there: "
                                            "here the phase fixes it, algorithm_resources.memory (32 GB: 32g)",
    "evaluation_selectable_gpu_type_choices": "GPU types of grand-challenge's cloud for the evaluation: set "
                                              "evaluation_resources.gpus",
    "evaluation_requires_gpu_type": "a GPU type of grand-challenge's cloud: set evaluation_resources.gpus (how "
                                    "many); the runner host decides which",
    "evaluation_maximum_settable_memory_gb": "a cap grand-challenge's staff set on the evaluation's memory; here the "
                                             "runner host's own memory is the cap",
    "evaluation_requires_memory_gb": "set evaluation_resources.memory (8 GB: 8g)",
    "workstation": _VIEWER,
    "workstation_config": _VIEWER,
    "hanging_protocol": _VIEWER,
    "optional_hanging_protocols": _VIEWER,
    "view_content": _VIEWER,
    "average_algorithm_job_duration": "computed, not set: each phase's leaderboard page shows its algorithm's mean "
                                      "running time over its succeeded results",
    "compute_cost_euro_millicents": "grand-challenge's bill for the phase's cloud compute; here the runner hosts are "
                                    "the organizers' own machines",
    "external_evaluation": "a service outside grand-challenge.org scores its submissions: here the runner scores "
                           "every submission (self_reported: true takes participants' own metrics)",
    "submission_page_html": "grand-challenge's older name for it: write the text as submission_page_markdown",
}
MOVED: dict[Key, str] = {
    ("algorithm_resources", "time_limit"): "set algorithm_time_limit instead (grand-challenge's name)",
    **{(name,): f"grand-challenge's {name} is not supported here: {why}"
       for name, why in UNSUPPORTED_GC_OPTIONS.items()},
}


def load_phase(path: Path, challenge: str) -> Phase:
    """phases/<slug>.yml of challenge `challenge`."""
    file = parse(load_yaml(path), PhaseFile, checks=lambda f, _: _phase_issues(f, path.stem), moved=MOVED)
    return Phase.from_file(file, challenge=challenge, slug=path.stem)


def _phase_issues(phase: PhaseFile, slug: str) -> Iterator[Issue]:
    if not SLUG.fullmatch(slug):
        yield None, f"phase file name {slug!r} is not a kebab-case slug"
    opens, closes = phase.submissions_open_at, phase.submissions_close_at
    if opens and closes and closes <= opens:
        yield ("submissions_close_at",), "is not after submissions_open_at"
    yield from _report_issues(phase)
    if phase.parent == slug:
        yield ("parent",), "a phase cannot be its own parent"
    yield from _ranking_metric_issues(phase)
    if phase.self_reported and phase.submission_kind != "predictions":
        yield ("self_reported",), "self-reported metrics are submitted as a file: set submission_kind: predictions"
    yield from _training_issues(phase)
    if phase.scoring_method_choice in CASE_METHODS and not phase.score_case_jsonpath:
        yield ("scoring_method_choice",), (f"{phase.scoring_method_choice} ranks per case: set score_case_jsonpath "
                                           "to the per-case values of the score, e.g. case.*.dice")


def _report_issues(phase: PhaseFile) -> Iterator[Issue]:
    """A method report is the phase's supplementary PDF added later: the phase must take one, and after it closes."""
    reports, closes = phase.method_reports_close_at, phase.submissions_close_at
    if reports and phase.supplementary_file_choice == "off":
        yield ("method_reports_close_at",), ("a method report is a supplementary PDF: set supplementary_file_choice "
                                             "to optional (or required)")
    if reports and closes and reports <= closes:
        yield ("method_reports_close_at",), "is not after submissions_close_at"


def _training_issues(phase: PhaseFile) -> Iterator[Issue]:
    """A training run and the predict runs after it mount their folders side by side: none inside another."""
    if phase.submission_kind != "training":
        return
    names = ("training_input_path", "model_path", "checkpoint_path", "algorithm_input_path", "algorithm_output_path")
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            outer, inner = getattr(phase, first), getattr(phase, second)
            if nested_paths(outer, inner):
                yield (second,), f"{inner!r} must be a folder apart from {first} ({outer!r})"


def _ranking_metric_issues(phase: PhaseFile) -> Iterator[Issue]:
    """rank-then-average needs its metrics, each path with one * for the case; other methods take none."""
    if phase.scoring_method_choice != RANK_THEN_AVERAGE:
        if phase.ranking_metrics:
            yield ("ranking_metrics",), (f"only scoring_method_choice {RANK_THEN_AVERAGE} ranks on these; "
                                         f"{phase.scoring_method_choice} ranks the leaderboard's columns")
        return
    if not phase.ranking_metrics:
        yield ("scoring_method_choice",), (f"{RANK_THEN_AVERAGE} ranks per-case metrics: list them in "
                                           "ranking_metrics, e.g. {path: case.*.dsc, title: DSC, order: desc}")
    for i, metric in enumerate(phase.ranking_metrics):
        if metric.path.count("*") != 1:
            yield ("ranking_metrics", i, "path"), (f"{metric.path!r} must hold exactly one * standing for the case, "
                                                   "e.g. case.*.dsc")
        elif metric.path.startswith("runner.cases.") and phase.cases_per_run > 1:
            yield ("ranking_metrics", i, "path"), ("the runner measures each run, and a run here covers "
                                                   f"{phase.cases_per_run} cases: rank per case with cases_per_run: 1")


# --- submissions and method reports -----------------------------------------------------------


def load_submission(path: Path, *, challenge: str, phase: str, participant: str,
                    kind: str | None = None, extras: PhaseOptions | None = None) -> Submission:
    """Read a submission; its phase, participant and id come from where the file sits. `kind` is the phase's
    submission_kind; `extras` the phase whose switches for a supplementary file, a supplementary URL and a
    comment the submission must meet (None: not checked, as for a submission merged before they changed)."""
    file = parse(participant_yaml(path), SubmissionFile,
                 checks=lambda f, invalid: [*_submission_issues(f, invalid, path, phase, kind),
                                            *_extras_issues(f, phase, extras)])
    shared = {f.name: getattr(file, f.name) for f in fields(SubmissionFields)}
    files = file.predictions
    return Submission(challenge=challenge, participant=participant, id=path.stem, path=path,
                      predictions=files.file if files else None, predictions_sha256=files.sha256 if files else None,
                      **shared)


def _submission_issues(file: SubmissionFile, invalid: frozenset[str | int], path: Path, phase: str,
                       kind: str | None) -> Iterator[Issue]:
    if not NAME.fullmatch(path.stem):
        yield None, f"submission id {path.stem!r} may use letters, digits, '-', '_' and '.'"
    if file.phase != phase:
        yield ("phase",), f"says {file.phase!r} but the file is under submissions/{phase}/"
    if invalid & {"image", "image_archive", "predictions"}:
        return  # what was meant is unclear until that is fixed
    given = [name for name in ("image", "image_archive", "predictions") if getattr(file, name) is not None]
    algorithm = next((name for name in given if name != "predictions"), None)
    if len(given) != 1:
        yield ((given or ["image"])[-1],), "give exactly one of image, image_archive (algorithm) or predictions (file)"
    elif kind in ("algorithm", "training") and file.predictions is not None:
        what = "a training" if kind == "training" else "an algorithm"
        yield ("predictions",), f"phase {phase!r} takes {what} image, not predictions"
    elif kind == "predictions" and algorithm is not None:
        yield (algorithm,), f"phase {phase!r} takes a predictions file, not an image"


def _extras_issues(file: SubmissionFile, phase: str, options: PhaseOptions | None) -> Iterator[Issue]:
    """What a submission adds besides its algorithm, held to the phase's switches (grand-challenge's)."""
    extra = file.supplementary
    if extra is not None and not extra.file.lower().endswith(SUPPLEMENTARY_SUFFIX):
        yield ("supplementary", "file"), f"must name a PDF ({SUPPLEMENTARY_SUFFIX})"
    if options is None:
        return
    if options.supplementary_file_choice == "off" and extra is not None:
        yield ("supplementary",), f"phase {phase!r} takes no supplementary file (its supplementary_file_choice is off)"
    elif options.supplementary_file_choice == "required" and extra is None:
        yield ("supplementary",), (f"phase {phase!r} requires a PDF describing the method: commit it beside this "
                                   "file and add supplementary: {file: NAME.pdf, sha256: ...}")
    url, label = file.supplementary_url, " ".join(options.supplementary_url_label.split())
    if options.supplementary_url_choice == "off" and url is not None:
        yield ("supplementary_url",), f"phase {phase!r} takes no link (its supplementary_url_choice is off)"
    elif options.supplementary_url_choice == "required" and url is None:
        yield ("supplementary_url",), f"phase {phase!r} requires a link ({label}): add supplementary_url: https://..."
    if file.comment and not options.allow_submission_comments:
        yield ("comment",), f"phase {phase!r} takes no comment (its allow_submission_comments is false)"


def load_report(path: Path) -> MethodReport:
    """A method report file, held to the participant policy (a participant writes it)."""
    return parse(participant_yaml(path), MethodReport, checks=lambda report, invalid: (
        [] if "file" in invalid or report.file.lower().endswith(SUPPLEMENTARY_SUFFIX)
        else [(("file",), f"must name a PDF ({SUPPLEMENTARY_SUFFIX})")]))


def participant_yaml(path: Path) -> Document:
    """A file a participant wrote (a submission, a registration), read under the participant policy
    (size cap, no aliases) wherever it sits, a pull request's scratch copy included. A link is never read:
    a submission that links to another participant's would run their algorithm under its own name."""
    if path.is_symlink():
        raise ModelError(path, None, None, "must be a regular file, not a symbolic link")
    return load_yaml(path, PARTICIPANT)


# --- approvals, examples and exclusions -------------------------------------------------------


class ApprovalsFile(RootModel[tuple[Approval, ...]]):
    """approvals/<phase>.yml: each result an organizer published, as participant/id (the result file's
    folder and name, e.g. alice/v1), in a phase with auto_publish_new_results: false."""

    model_config = ConfigDict(defer_build=True)  # built on first use, not on every import of the package


@dataclass(frozen=True, kw_only=True)
class ExampleFile:
    """examples/<name>/example.yml: an example submission `challenge demo` builds (or copies) and submits."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    phase: Annotated[Slug, meta("The phase the demo submits it to.")]
    participant: Annotated[Name, meta("The participant folder it is submitted under.")]
    id: Annotated[Name, meta("The submission's id (its file name without .yml).")]
    title: Annotated[Text, meta("The submission's title.", max_length=120)] = ""
    submitted_as: Annotated[Literal["image", "archive"], meta(
        "image: the folder's image, built and pinned by its local ID; archive: that image saved with docker save "
        "and named by a file:// URL and its sha256.")] = "image"
    predictions: Annotated[Name | None, meta("A predictions file in the example's folder, submitted instead of an "
                                             "image.")] = None
    code_url: Annotated[Url | None, meta("A link to the example's code, shown with the submission.")] = None
    supplementary: Annotated[Name | None, meta(
        "A PDF in the example's folder describing the method, committed beside the submission and pinned by "
        "sha256, for a phase that takes one (supplementary_file_choice).")] = None


def load_example(path: Path) -> ExampleFile:
    return parse(load_yaml(path), ExampleFile)


def load_approvals(path: Path) -> list[str]:
    """approvals/<phase>.yml: a list of participant/id an organizer published (by a commit)."""
    return list(parse(load_yaml(path), ApprovalsFile, blank=list).root)


@dataclass(frozen=True)
class Exclusion:
    """One result an organizer takes out of the rankings, and why."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    result: Annotated[Approval, meta("The result, as participant/id (its file's folder and name, e.g. alice/v1).")]
    reason: Annotated[Text, meta("Why, shown publicly beside it on the leaderboard.", min_length=3,
                                 max_length=500)]


class ExclusionsFile(RootModel[tuple[Exclusion, ...]]):
    """exclusions/<phase>.yml: results taken out of the phase's rankings (a rule broken, a duplicate
    account, a leak), each with its reason. The leaderboard lists them apart, with the reason."""

    model_config = ConfigDict(defer_build=True)


def load_exclusions(path: Path) -> dict[str, str]:
    """exclusions/<phase>.yml as participant/id -> reason."""
    entries = parse(load_yaml(path), ExclusionsFile, blank=list, checks=lambda f, _: _exclusion_issues(f)).root
    return {entry.result: entry.reason for entry in entries}


def _exclusion_issues(file: ExclusionsFile) -> Iterator[Issue]:
    seen: set[str] = set()
    for i, entry in enumerate(file.root):
        if entry.result in seen:
            yield (i, "result"), f"{entry.result} is listed twice"
        seen.add(entry.result)
