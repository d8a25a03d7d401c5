"""Typed records of the challenge tree: challenge.yml, phases/*.yml, submissions and results.

Each field is declared once, here, with its type, default, meaning and grand-challenge's name
(`meta`): the loaders validate files against these declarations (`schema_parse.parse`), and the
JSON Schemas (`challenge schema`) and the field reference for organizers are derived from them.
The records are frozen dataclasses, so the rest of the package builds and copies them as before.

Field names follow grand-challenge.org's Phase options and OpenChallenges' challenge vocabulary,
so organizers can bring configurations they already have and the catalog can be exported.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import ConfigDict, Field, GetPydanticSchema, RootModel
from pydantic_core import core_schema

from runner.tree.located import PARTICIPANT, Document, Key, ModelError, as_utc, load_yaml
from runner.tree.references import DIGEST, PINNED, SHA256, check_image_ref
from runner.tree.schema_parse import Issue, parse
from runner.tree.schema_types import (
    APPROVAL,
    NAME,
    SLUG,
    Approval,
    Bool,
    Closing,
    Day,
    JsonPath,
    Missing,
    Moment,
    Number,
    OrganizerImage,
    Probability,
    Sha256,
    Size,
    Slug,
    SubmittedImage,
    Text,
    Whole,
    meta,
)

Status = Literal["upcoming", "active", "completed"]
Incentive = Literal["monetary", "publication", "speaking_engagement", "other"]
SubmissionType = Literal["container_image", "prediction_file", "notebook", "mlcube", "other"]
Category = Literal["featured", "benchmark", "hackathon"]
Role = Literal["challenge_organizer", "data_contributor", "sponsor"]
Sort = Literal["asc", "desc"]
Scoring = Literal["absolute", "mean", "median"]  # grand-challenge: over the ranked columns of each result
CaseMethod = Literal["aggregate-then-rank", "rank-then-aggregate", "test-then-rank"]  # challengeR: over cases
Method = Literal[Scoring, CaseMethod]  # one Literal, so a wrong value is one problem, not one per union member
Display = Literal["all", "most_recent", "best"]
Kind = Literal["algorithm", "predictions"]
Mode = Literal["batch", "per-case"]
RegistrationMode = Literal["open", "required"]
Combine = Literal["mean", "median", "sum"]

STATUSES: tuple[str, ...] = get_args(Status)
INCENTIVES: tuple[str, ...] = get_args(Incentive)
SUBMISSION_TYPES: tuple[str, ...] = get_args(SubmissionType)
CATEGORIES: tuple[str, ...] = get_args(Category)
ROLES: tuple[str, ...] = get_args(Role)
SORTS: tuple[str, ...] = get_args(Sort)
SCORING: tuple[str, ...] = get_args(Scoring)
CASE_METHODS: tuple[str, ...] = get_args(CaseMethod)
DISPLAY: tuple[str, ...] = get_args(Display)
KINDS: tuple[str, ...] = get_args(Kind)
MODES: tuple[str, ...] = get_args(Mode)
REGISTRATION: tuple[str, ...] = get_args(RegistrationMode)
STRICT = ConfigDict(extra="forbid")  # a typo must not silently fall back to a default
GIB = 1024**3


# --- challenge.yml -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Organization:
    """One organization behind the challenge."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    name: Annotated[Text, meta("The organization's name.")]
    role: Annotated[Role, meta("What it does for the challenge.")] = "challenge_organizer"
    url: Annotated[Text | None, meta("Its website.")] = None


@dataclass(frozen=True)
class PhaseWeight:
    """One phase of a combined leaderboard and the weight of its rank."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    phase: Annotated[Slug, meta("A phase of this challenge (its file name without .yml).")]
    weight: Annotated[Number, meta("The weight of this phase's rank in a mean or sum.", ge=0)] = 1.0


def _pairs(items: tuple[PhaseWeight, ...]) -> tuple[tuple[str, float], ...]:
    return tuple((item.phase, item.weight) for item in items)


# Written as a list of {phase, weight}, kept as (phase, weight) pairs.
PhasePairs = Annotated[tuple[tuple[str, float], ...], GetPydanticSchema(
    lambda _source, handler: core_schema.no_info_after_validator_function(
        _pairs, handler.generate_schema(Annotated[tuple[PhaseWeight, ...], Field(min_length=2)])))]


@dataclass(frozen=True)
class CombinedLeaderboard:
    """One ranking over several phases (tasks): each participant's best rank per phase, combined.
    Only participants ranked in every phase appear, as on grand-challenge.org."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    slug: Annotated[Slug, meta("Its name in URLs and in `challenge leaderboard C SLUG`.")]
    title: Annotated[Text, meta("Its title on the site.")]
    phases: Annotated[PhasePairs, meta("The phases it combines, at least two.")]
    combine: Annotated[Combine, meta("How each participant's per-phase ranks combine: their weighted mean, "
                                     "median (no weights) or weighted sum.")] = "mean"


@dataclass(frozen=True, kw_only=True)
class Challenge:
    """challenge.yml, in OpenChallenges' words plus grand-challenge's challenge type."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    slug: Annotated[Slug, meta("The challenge's name in URLs. Defaults to the folder name, and must match it "
                               "when written.", gc="short_name")] = ""
    name: Annotated[Text, meta("The challenge's full name.", gc="title", min_length=3, max_length=255)]
    headline: Annotated[Text, meta("One line under the name in the catalog.", max_length=80)]
    description: Annotated[Text, meta("A paragraph for the catalog.", gc="description", max_length=1000)] = ""
    status: Annotated[Status | None, meta("upcoming, active or completed. Unset: from start_date and end_date, "
                                          "as OpenChallenges computes it.")] = None
    platform: Annotated[Slug, meta("Where the challenge runs, as an OpenChallenges platform slug.")] = "self-hosted"
    start_date: Annotated[Day | None, meta("The day the challenge starts.")] = None
    end_date: Annotated[Day | None, meta("The day the challenge ends; not before start_date.")] = None
    type: Annotated[Whole, meta("The challenge type as grand-challenge counts them: 1 when participants submit "
                                "predictions, 2 when they submit algorithms.", gc="challenge_type",
                                ge=0, le=3)] = 2
    incentives: Annotated[tuple[Incentive, ...], meta("What participants can win.")] = ()
    submission_types: Annotated[tuple[SubmissionType, ...], meta("What participants submit.")] = ()
    input_data_types: Annotated[tuple[Text, ...], meta("The kinds of data algorithms read (3D image, text, "
                                                       "...).")] = ()
    operation: Annotated[Text | None, meta("The task, e.g. image segmentation.")] = None
    categories: Annotated[tuple[Category, ...], meta("Catalog categories.")] = ()
    tags: Annotated[tuple[Text, ...], meta("Free keywords for the catalog.")] = ()
    website_url: Annotated[Text | None, meta("The challenge's own website, if it has one.")] = None
    doi: Annotated[Text | None, meta("A DOI of the challenge's design or results paper.")] = None
    organizations: Annotated[tuple[Organization, ...], meta("Who organizes, contributes data or sponsors.")] = ()
    data_url: Annotated[Text | None, meta("Where the public training data can be downloaded.")] = None
    registration: Annotated[RegistrationMode, meta(
        "open: anyone may submit; required: a participant first adds registrations/<login>.yml (accepting the "
        "rules) and an organizer merges it.")] = "open"
    combined_leaderboards: Annotated[tuple[CombinedLeaderboard, ...], meta(
        "Rankings over several phases, as grand-challenge's combined leaderboards.")] = ()
    recipients: Annotated[tuple[Text, ...], meta(
        "Who may open the sealed part of results (what a phase withholds from the public): organizers' public "
        "keys, each an age key (age1...), an SSH key (ssh-ed25519 ...), or github:<login> for the SSH keys "
        "GitHub publishes for that login.")] = ()
    publish_key: Annotated[Text | None, meta(
        "The site's public age key (age1...): sealed results are sealed to it too, so `challenge build` with "
        "its secret (the CHALLENGE_PUBLISH_KEY Actions secret) publishes what the phases allow once they "
        "allow it. `challenge keys new` makes one.")] = None

    def current_status(self, today: dt.date) -> str:
        """The written status, else one computed from the dates as OpenChallenges does."""
        if self.status:
            return self.status
        if self.start_date and today < self.start_date:
            return "upcoming"
        if self.end_date and today > self.end_date:
            return "completed"
        return "active"


# --- phases/<phase>.yml ------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A leaderboard column: the score or one of grand-challenge's extra_results_columns."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    path: Annotated[JsonPath, meta("Where the value is in each result: a JSONPath into the evaluation's "
                                   "metrics.json, or under runner for the runner's measurements.", gc="path")]
    title: Annotated[Text, meta("The column's title.", gc="title")]
    order: Annotated[Sort, meta("desc: higher is better; asc: lower is better.", gc="order")] = "desc"
    error_path: Annotated[JsonPath | None, meta("Where the value's error is (e.g. a standard deviation), shown "
                                                "as ± next to it.", gc="error_path")] = None
    exclude_from_ranking: Annotated[Bool, meta("Shown, but left out of the mean or median of ranks.",
                                               gc="exclude_from_ranking")] = False


@dataclass(frozen=True, kw_only=True)
class Resources:
    """What one container of a phase may use; the runner's sandbox enforces these."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    memory: Annotated[Size, meta("Memory, without swap: bytes, or 512m, 2g.")] = 2 * GIB
    cpus: Annotated[Number, meta("CPU cores (fractions allowed).", ge=0.01)] = 1.0
    gpus: Annotated[Whole, meta("GPUs passed to the container (the runner's --gpus picks which).", ge=0)] = 0
    output: Annotated[Size, meta("Size of /output, a tmpfs: writing more fails inside the container.")] = GIB


@dataclass(frozen=True, kw_only=True)
class Limits(Resources):
    """Resources plus the time limit; the algorithm's comes from algorithm_time_limit."""

    time_limit: Annotated[Whole, meta("Seconds the container may run before it is killed.",
                                      gc="evaluation_time_limit", ge=1)] = 300


@dataclass(frozen=True)
class RankingOptions:
    """Options of the challengeR methods (scoring_method_choice aggregate-then-rank, ...)."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    aggregate: Annotated[Literal["mean", "median"], meta(
        "How per-case values (aggregate-then-rank) or per-case ranks (rank-then-aggregate) combine.")] = "mean"
    ties: Annotated[Literal["min", "max", "average"], meta("The rank tied values share.")] = "min"
    missing: Annotated[Missing, meta("A missing or NaN per-case value: drop it, or count it as this "
                                     "number.")] = "drop"
    alpha: Annotated[Probability, meta("test-then-rank's significance level.")] = 0.05
    p_adjust: Annotated[Literal["none", "holm", "bonferroni", "hochberg", "fdr_bh"], meta(
        "test-then-rank's correction of its p-values for multiple tests.")] = "none"


@dataclass(frozen=True, kw_only=True)
class PhaseOptions:
    """The options a phase file and a phase record share, declared once for both."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    title: Annotated[Text, meta("The phase's name on the site and in messages to participants.", gc="title")]
    description: Annotated[Text, meta("A paragraph shown with the phase.")] = ""
    submission_kind: Annotated[Kind, meta(
        "What participants submit: algorithm, a container image the runner runs on the hidden data; or "
        "predictions, a file of outputs.", gc="submission_kind")]
    submissions_open_at: Annotated[Moment | None, meta(
        "When submissions open. Unset: open from the start.", gc="submissions_open_at")] = None
    submissions_close_at: Annotated[Closing | None, meta(
        "When submissions close; a date alone closes at the end of that day (UTC). Unset: never. A blind "
        "phase shows its scores from then on.", gc="submissions_close_at")] = None
    score_decimal_places: Annotated[Whole, meta("Decimal places shown for the score.", gc="score_decimal_places",
                                                ge=0, le=12)] = 4
    extra_results_columns: Annotated[tuple[Column, ...], meta(
        "More leaderboard columns, each read from the results by its own path.", gc="extra_results_columns")] = ()
    scoring_method_choice: Annotated[Method, meta(
        "How results rank: absolute (on the score alone), mean or median (of the ranks of every ranked column), "
        "as grand-challenge does; or challengeR's aggregate-then-rank, rank-then-aggregate or test-then-rank "
        "over the score's per-case values (set score_case_jsonpath).", gc="scoring_method_choice")] = "absolute"
    result_display_choice: Annotated[Display, meta(
        "Which results the leaderboard lists: all, each participant's most_recent, or each participant's best.",
        gc="result_display_choice")] = "all"
    submissions_limit_per_user_per_period: Annotated[Whole | None, meta(
        "Submissions a participant may make per period; 0 takes none. Unset: no limit.",
        gc="submissions_limit_per_user_per_period", ge=0)] = None
    submission_limit_period: Annotated[Whole | None, meta(
        "The period of that limit, in days. Unset: all time.", gc="submission_limit_period", ge=1)] = None
    parent: Annotated[Slug | None, meta(
        "A phase of this challenge where a participant needs a succeeded result before submitting here.",
        gc="parent")] = None
    public: Annotated[Bool, meta("false publishes nothing of this phase: no leaderboard, link or result.",
                                 gc="public")] = True
    auto_publish_new_results: Annotated[Bool, meta(
        "false shows a result only once an organizer lists its participant/id in approvals/<phase>.yml.",
        gc="auto_publish_new_results")] = True
    inference_mode: Annotated[Mode, meta(
        "batch: one algorithm run over all cases; per-case: one run per case, each with algorithm_time_limit, "
        "its time and memory measured (FLARE's protocol).")] = "batch"
    evaluation_image: Annotated[OrganizerImage | None, meta(
        "The evaluation container, pinned by digest. Unset: built from challenges/<challenge>/evaluation/"
        "Dockerfile.")] = None
    allowed_registries: Annotated[tuple[Text, ...], meta(
        "Registries submitted images may come from (e.g. ghcr.io). Empty: any.")] = ()
    count_failed_submissions: Annotated[Bool, meta("Whether failed submissions count toward the limit per "
                                                   "period.")] = False
    give_algorithm_editors_job_view_permissions: Annotated[Bool, meta(
        "A debugging phase: participants see their own containers' full logs.",
        gc="give_algorithm_editors_job_view_permissions")] = False
    blind: Annotated[Bool, meta("Withhold scores until submissions close; participants still learn that their "
                                "submission succeeded.")] = False
    score_case_jsonpath: Annotated[JsonPath | None, meta(
        "The score's per-case values in each result (e.g. case.*.dice), for challengeR's methods and the "
        "ranking uncertainty. Per-case values are public with each result, like every metric.")] = None
    ranking_options: Annotated[RankingOptions, meta("Options of challengeR's methods.")] = field(
        default_factory=RankingOptions)
    best_of_last: Annotated[Whole | None, meta("Only each participant's last N results compete (L2L).",
                                               ge=1)] = None
    display_all_metrics: Annotated[Bool, meta(
        "false publishes only the leaderboard's columns of each result; everything else the evaluation wrote "
        "(per-case values included) is sealed to the challenge's recipients.", gc="display_all_metrics")] = True


@dataclass(frozen=True, kw_only=True)
class PhaseFile(PhaseOptions):
    """phases/<phase>.yml: the phase's options in grand-challenge's names."""

    score_title: Annotated[Text, meta("The score column's title.", gc="score_title")] = "Score"
    score_jsonpath: Annotated[JsonPath, meta(
        "Where the score is in each result: a JSONPath into the evaluation's metrics.json (aggregates.dice.mean), "
        "or under runner for the runner's measurements (runner.aggregates.wall_time_s.mean).", gc="score_jsonpath")]
    score_error_jsonpath: Annotated[JsonPath | None, meta(
        "Where the score's error is (e.g. aggregates.dice.std), shown as ± next to it.",
        gc="score_error_jsonpath")] = None
    score_default_sort: Annotated[Sort, meta("desc: higher scores rank first; asc: lower scores rank first.",
                                             gc="score_default_sort")] = "desc"
    algorithm_time_limit: Annotated[Whole, meta(
        "Seconds an algorithm container may run (per case in per-case mode) before it is killed.",
        gc="algorithm_time_limit", ge=1)] = 300
    algorithm_resources: Annotated[Resources, meta("What an algorithm container may use.")] = field(
        default_factory=Resources)
    evaluation_resources: Annotated[Limits, meta("What the evaluation container may use.")] = field(
        default_factory=Limits)


@dataclass(frozen=True, kw_only=True)
class Phase(PhaseOptions):
    """A phase as the package reads it: its options, where it sits, and its score as a column."""

    challenge: str
    slug: str
    score: Column
    algorithm: Limits = field(default_factory=Limits)
    evaluation: Limits = field(default_factory=Limits)

    @property
    def columns(self) -> tuple[Column, ...]:
        return (self.score, *self.extra_results_columns)

    @classmethod
    def from_file(cls, file: PhaseFile, *, challenge: str, slug: str) -> Phase:
        """The record of a validated file: shared options as they are, the score_* fields as a column."""
        shared = {f.name: getattr(file, f.name) for f in fields(PhaseOptions)}
        score = Column(path=file.score_jsonpath, title=file.score_title, order=file.score_default_sort,
                       error_path=file.score_error_jsonpath)
        algorithm = Limits(time_limit=file.algorithm_time_limit, **asdict(file.algorithm_resources))
        return cls(challenge=challenge, slug=slug, score=score, algorithm=algorithm,
                   evaluation=file.evaluation_resources, **shared)


# --- submissions/<phase>/<participant>/<id>.yml ------------------------------------------------


@dataclass(frozen=True)
class Predictions:
    """A predictions file committed next to the submission, pinned by its hash."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    file: Annotated[Text, meta("The file's name, relative to the submission file (a .zip is unpacked).")]
    sha256: Annotated[Sha256, meta("The file's sha256, 64 lowercase hex digits (sha256sum FILE).")]


@dataclass(frozen=True, kw_only=True)
class SubmissionFields:
    """What a submission file and a submission record share."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    phase: Annotated[Slug, meta("The phase submitted to: the folder the file sits in.")]
    image: Annotated[SubmittedImage | None, meta(
        "The algorithm's container image, pinned by digest: registry/name@sha256:<64 hex digits>.")] = None
    title: Annotated[Text, meta("A name for this submission on the leaderboard.", max_length=120)] = ""
    description: Annotated[Text, meta("What this submission does differently.", max_length=2000)] = ""


@dataclass(frozen=True, kw_only=True)
class SubmissionFile(SubmissionFields):
    """submissions/<phase>/<participant>/<id>.yml: one image, or one predictions file."""

    predictions: Annotated[Predictions | None, meta("The predictions file, in a phase that takes "
                                                    "predictions.")] = None


@dataclass(frozen=True, kw_only=True)
class Submission(SubmissionFields):
    """A submission; identity comes from the path, content from the file."""

    challenge: str
    participant: str
    id: str
    path: Path
    predictions: str | None = None
    predictions_sha256: str | None = None

    @property
    def key(self) -> str:
        return f"{self.challenge}/{self.phase}/{self.participant}/{self.id}"

    @property
    def predictions_path(self) -> Path | None:
        """Where the predictions file sits: named relative to the submission file."""
        return self.path.parent / self.predictions if self.predictions else None


# --- results/<phase>/<participant>/<id>.json (written by the runner) --------------------------


@dataclass
class RunRecord:
    """What the sandbox saw of a container's run(s), as stored in a result. In per-case mode
    `cases` holds each case's measurements and `aggregates` their summaries, so a leaderboard
    can rank on them (score path `runner.aggregates.wall_time_s.mean`)."""

    image: str
    image_id: str | None = None
    exit_code: int | None = None
    wall_time_s: float | None = None
    timed_out: bool = False
    oom_killed: bool = False
    peak_memory_bytes: int | None = None
    gpu_memory_max_bytes: int | None = None
    gpu_memory_auc_byte_s: float | None = None
    reused: bool = False
    cases: dict[str, dict[str, Any]] | None = None
    aggregates: dict[str, dict[str, float]] | None = None


@dataclass
class Result:
    """results/<phase>/<participant>/<id>.json, written by the runner only."""

    challenge: str
    phase: str
    participant: str
    submission: str
    status: Literal["succeeded", "failed"]
    created_at: str
    started_at: str
    finished_at: str
    metrics: dict[str, Any] | None = None
    error: str | None = None
    algorithm: RunRecord | None = None
    evaluation: RunRecord | None = None
    logs: dict[str, str] | None = None  # full logs, only in debugging phases (the participant's own)
    attempts: int = 1  # >1 when transient runner failures were retried
    runner_version: str = ""
    # In a public record: what the phase withholds of this result, and until when. The whole result is
    # then sealed beside it (<id>.sealed.age) for the challenge's recipients.
    withheld: str | None = None

    def to_json(self) -> str:
        data = asdict(self)
        if data["withheld"] is None:  # a whole result reads as it always did
            del data["withheld"]
        return json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        runs = {k: RunRecord(**data[k]) if data.get(k) else None for k in ("algorithm", "evaluation")}
        return cls(**{**data, **runs})


def scored_document(result: Result) -> dict[str, Any]:
    """What score paths read: the evaluation's metrics, plus the runner's own measurements
    (time, memory, per case) under `runner`, so a leaderboard can rank on them."""
    document = dict(result.metrics or {})
    if result.algorithm is not None and "runner" not in document:
        document["runner"] = vars(result.algorithm)  # read-only here: no copy of every case
    return document


# --- loaders -----------------------------------------------------------------------------------


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
    if challenge.start_date and challenge.end_date and challenge.end_date < challenge.start_date:
        yield ("end_date",), "is before start_date"
    for i, board in enumerate(challenge.combined_leaderboards):
        if board.combine == "median" and any(weight != 1.0 for _, weight in board.phases):
            yield ("combined_leaderboards", i, "combine"), "weights apply to mean and sum; a median takes none"


MOVED: dict[Key, str] = {("algorithm_resources", "time_limit"): "set algorithm_time_limit instead (grand-challenge's "
                                                                 "name)"}


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
    if phase.parent == slug:
        yield ("parent",), "a phase cannot be its own parent"
    if phase.scoring_method_choice in CASE_METHODS and not phase.score_case_jsonpath:
        yield ("scoring_method_choice",), (f"{phase.scoring_method_choice} ranks per case: set score_case_jsonpath "
                                           "to the per-case values of the score, e.g. case.*.dice")


def load_submission(path: Path, *, challenge: str, phase: str, participant: str,
                    kind: str | None = None) -> Submission:
    """Read a submission; its phase, participant and id come from where the file sits."""
    file = parse(participant_yaml(path), SubmissionFile,
                 checks=lambda f, invalid: _submission_issues(f, invalid, path, phase, kind))
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
    if invalid & {"image", "predictions"}:
        return  # what was meant is unclear until that is fixed
    if file.image is None and file.predictions is None:
        yield ("image",), "give exactly one of image (algorithm) or predictions (file)"
    elif file.image is not None and file.predictions is not None:
        yield ("predictions",), "give exactly one of image (algorithm) or predictions (file)"
    elif kind == "algorithm" and file.predictions is not None:
        yield ("predictions",), f"phase {phase!r} takes an algorithm image, not predictions"
    elif kind == "predictions" and file.image is not None:
        yield ("image",), f"phase {phase!r} takes a predictions file, not an image"


class ApprovalsFile(RootModel[tuple[Approval, ...]]):
    """approvals/<phase>.yml: each result an organizer published, as participant/id (the result file's
    folder and name, e.g. alice/v1), in a phase with auto_publish_new_results: false."""

    model_config = ConfigDict(defer_build=True)  # built on first use, not on every import of the package


def load_approvals(path: Path) -> list[str]:
    """approvals/<phase>.yml: a list of participant/id an organizer published (by a commit)."""
    return list(parse(load_yaml(path), ApprovalsFile, blank=list).root)


def load_result(path: Path) -> Result:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        result = Result.from_dict(data)
    except json.JSONDecodeError as exc:
        raise ModelError(path, exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    except TypeError as exc:
        raise ModelError(path, None, None, f"not a result record: {exc}") from None
    if result.status not in ("succeeded", "failed"):
        raise ModelError(path, None, "status", f"{result.status!r} is not succeeded or failed")
    return result


def participant_yaml(path: Path) -> Document:
    """A file a participant wrote (a submission, a registration), read under the participant policy
    (size cap, no aliases) wherever it sits, a pull request's scratch copy included."""
    return load_yaml(path, PARTICIPANT)


def parse_time(text: str) -> dt.datetime:
    return as_utc(dt.datetime.fromisoformat(text))


__all__ = ["APPROVAL", "CASE_METHODS", "DIGEST", "NAME", "PINNED", "SCORING", "SHA256", "SLUG", "Challenge",
           "Column", "CombinedLeaderboard", "Document", "Limits", "ModelError", "Organization", "Phase",
           "RankingOptions", "Result", "RunRecord", "Submission", "check_image_ref", "load_approvals",
           "load_challenge", "load_phase", "load_result", "load_submission", "parse_time", "scored_document"]
