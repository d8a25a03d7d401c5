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
import re
import shlex
import statistics
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args
from urllib.parse import urlsplit

import orjson
from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    GetPydanticSchema,
    RootModel,
    Strict,
    WithJsonSchema,
)
from pydantic_core import core_schema

from runner.errors import printable
from runner.tree.jsonpaths import leading_names
from runner.tree.located import PARTICIPANT, Document, Key, ModelError, as_utc, load_yaml
from runner.tree.paths import companion_file
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
    FileName,
    JsonPath,
    Missing,
    Moment,
    Name,
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
    refuse,
)

Status = Literal["upcoming", "active", "completed"]
Incentive = Literal["monetary", "publication", "speaking_engagement", "other"]
SubmissionType = Literal["container_image", "prediction_file", "notebook", "mlcube", "other"]
Category = Literal["featured", "benchmark", "hackathon"]
Role = Literal["challenge_organizer", "data_contributor", "sponsor"]
Sort = Literal["asc", "desc"]
Scoring = Literal["absolute", "mean", "median"]  # grand-challenge: over the ranked columns of each result
CaseMethod = Literal["aggregate-then-rank", "rank-then-aggregate", "test-then-rank"]  # challengeR: over cases
MetricsMethod = Literal["rank-then-average"]  # FLARE: several per-case metrics (ranking_metrics) ranked per case
Method = Literal[Scoring, CaseMethod, MetricsMethod]  # one Literal: a wrong value is one problem, not one per member
Display = Literal["all", "most_recent", "best"]
Kind = Literal["algorithm", "predictions", "training"]
Mode = Literal["batch", "per-case"]
RegistrationMode = Literal["open", "required"]
Combine = Literal["mean", "median", "sum"]
FileChoice = Literal["off", "optional", "required"]  # grand-challenge's supplementary_file_choice

STATUSES: tuple[str, ...] = get_args(Status)
INCENTIVES: tuple[str, ...] = get_args(Incentive)
SUBMISSION_TYPES: tuple[str, ...] = get_args(SubmissionType)
CATEGORIES: tuple[str, ...] = get_args(Category)
ROLES: tuple[str, ...] = get_args(Role)
SORTS: tuple[str, ...] = get_args(Sort)
SCORING: tuple[str, ...] = get_args(Scoring)
CASE_METHODS: tuple[str, ...] = get_args(CaseMethod)
RANK_THEN_AVERAGE: str = get_args(MetricsMethod)[0]
DISPLAY: tuple[str, ...] = get_args(Display)
KINDS: tuple[str, ...] = get_args(Kind)
MODES: tuple[str, ...] = get_args(Mode)
REGISTRATION: tuple[str, ...] = get_args(RegistrationMode)
HERE = "self-hosted"  # the platform slug of challenges this repository runs
# The generated site's own top-level folders (runner.site writes them): no challenge folder may take these names.
SITE_FOLDERS = frozenset({"assets", "feeds", "organizations", "schemas", "search", "reference"})
STRICT = ConfigDict(extra="forbid")  # a typo must not silently fall back to a default
GIB = 1024**3


URL = re.compile(r"https?://[^\s/$.?#][^\s]*")
SUPPLEMENTARY_SUFFIX = ".pdf"


def _url(value: str) -> str:
    if not URL.fullmatch(value) or printable(value, len(value) + 1) != value:  # whole: printable cuts at 1,000
        raise refuse(f"{printable(value, 200)!r} is not a web address (http:// or https://...)")
    return value


Url = Annotated[str, Strict(), AfterValidator(_url),
                WithJsonSchema({"type": "string", "pattern": "^https?://", "x-type": "URL"})]
MAX_LINK = 2000  # characters of a link a participant gives: pages and comments show it whole
MAX_COMMENT = 128  # characters of a submission's comment, as on grand-challenge.org


def _https_url(value: str) -> str:
    """A participant's link that pages show as one: https only (no http, no javascript:), bounded."""
    if not value.startswith("https://") or len(value) > MAX_LINK:
        raise refuse(f"{printable(value, 200)!r} is not an https:// address of at most {MAX_LINK} characters")
    return _url(value)


HttpsUrl = Annotated[str, Strict(), AfterValidator(_https_url), WithJsonSchema(
    {"type": "string", "pattern": "^https://", "maxLength": MAX_LINK, "x-type": "https:// URL"})]


# --- challenge.yml -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Dataset:
    """One public data set of the challenge: listed on its page, fetched and verified by `challenge data
    download`. A data set behind terms publishes no URL: `challenge data seal` gives its link to each
    registered participant alone, sealed to their SSH keys."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    name: Annotated[Text, meta("Its name on the challenge page and on the command line.", min_length=1,
                               max_length=100)]
    url: Annotated[Url | None, meta("Where it is downloaded from (a server that answers HTTP Range requests "
                                    "lets broken downloads resume). Leave it out for data behind terms.")] = None
    file: Annotated[Name | None, meta("The file name it is saved as. Unset: the last part of the URL.")] = None
    size: Annotated[Size, meta("Its size: bytes, or 512m, 2g (shown on the page and as download progress).")]
    sha256: Annotated[Sha256, meta("Its sha256, 64 lowercase hex digits (sha256sum FILE), checked after "
                                   "download.")]
    license: Annotated[Text, meta("Its license, e.g. CC-BY-4.0.")] = ""
    terms: Annotated[Text | None, meta(
        "Terms of use participants accept before they may download it (text, or a link to them). Set: the data "
        "set is gated; registering (registration: required) accepts them.")] = None


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
    platform: Annotated[Slug, meta(
        "Where the challenge runs, as an OpenChallenges platform slug: self-hosted (this repository runs it), or "
        "where a challenge listed here is hosted (grand-challenge, kaggle, codalab, codabench, evalai, synapse, "
        "...). A challenge hosted elsewhere is a challenge.yml alone, with website_url and no phases: the catalog "
        "lists it and links out.")] = HERE
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
    website_url: Annotated[Url | None, meta("The challenge's own website, if it has one; required for a "
                                             "challenge hosted elsewhere, where the catalog links.")] = None
    doi: Annotated[Text | None, meta("A DOI of the challenge's design or results paper.")] = None
    organizations: Annotated[tuple[Organization, ...], meta("Who organizes, contributes data or sponsors.")] = ()
    data_url: Annotated[Text | None, meta("Where the public training data can be downloaded.")] = None
    data: Annotated[tuple[Dataset, ...], meta(
        "The data sets participants may download, shown on the challenge page (`challenge data download`).")] = ()
    registration: Annotated[RegistrationMode, meta(
        "open: anyone may submit; required: a participant first adds registrations/<login>.yml (accepting the "
        "rules) and an organizer merges it.")] = "open"
    registration_closes_at: Annotated[Closing | None, meta(
        "When registration closes, apart from the phases' submission deadlines (L2L's registration deadline); a "
        "date alone closes at the end of that day (UTC). Registrations proposed later are refused; those merged "
        "before still count. Unset: registration stays open. Needs registration: required.")] = None
    data_release_date: Annotated[Day | None, meta(
        "Milestone: the day the training data is released (L2L's timeline), shown in the challenge's timeline, "
        "its countdown and the deadlines feed.")] = None
    report_deadline_at: Annotated[Closing | None, meta(
        "Milestone: when method reports (short papers) are due, where they are sent elsewhere (by e-mail, to a "
        "workshop); a date alone is the end of that day (UTC). A phase that takes reports here has its own.")] = None
    results_announcement_date: Annotated[Day | None, meta(
        "Milestone: the day the results are announced (e.g. at a MICCAI workshop).")] = None
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

    @property
    def hosted_here(self) -> bool:
        """Whether this repository runs the challenge; else the catalog lists it and links out."""
        return self.platform == HERE

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


@dataclass(frozen=True)
class RankingMetric:
    """One per-case metric that FLARE's rank-then-average ranks (scoring_method_choice: rank-then-average)."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    path: Annotated[JsonPath, meta(
        "Each case's value, a JSONPath whose one * stands for the case: into the evaluation's metrics.json "
        "(case.*.dsc) or into the runner's measurements in per-case mode (runner.cases.*.wall_time_s). Cases are "
        "matched by name up to the first dot, so the runner's case-001.nii.gz and the evaluation's case-001 are "
        "one case.")]
    title: Annotated[Text, meta("The metric's name in the ranking's explanation.")]
    order: Annotated[Sort, meta("desc: higher is better; asc: lower is better.")] = "desc"
    weight: Annotated[Number, meta("Its weight in each result's mean rank.", gt=0)] = 1.0


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


# --- the container contract: where an algorithm reads and writes, what runs, and whose layout ------


RESERVED_PATHS = ("/proc", "/sys", "/dev", "/tmp", "/opt/ml/input/data/ground_truth")
Interface = Literal["runner", "grand-challenge"]
SocketKind = Literal["image", "value", "file"]


def _container_path(value: str) -> str:
    parts = value.split("/")
    if not value.startswith("/") or value == "/" or "" in parts[1:] or "." in parts or ".." in parts:
        raise refuse(f"{value!r} is not an absolute folder path such as /workspace/inputs")
    if any(value == reserved or value.startswith(reserved + "/") for reserved in RESERVED_PATHS):
        raise refuse(f"{value!r} is under {', '.join(RESERVED_PATHS)}, which the sandbox keeps for itself")
    return value


def _shell_words(value: Any) -> Any:
    """A command written as one string is split as a shell would split it (sh predict.sh)."""
    if not isinstance(value, str):
        return value
    try:
        return tuple(shlex.split(value))
    except ValueError as exc:
        raise refuse(f"{value!r} cannot be split into words: {exc}") from None


def _relative_path(value: str) -> str:
    parts = value.split("/")
    if not value or value.startswith("/") or "" in parts or "." in parts or ".." in parts:
        raise refuse(f"{value!r} is not a relative path such as images/ct or nodule-locations.json")
    return value


ContainerPath = Annotated[str, Strict(), AfterValidator(_container_path),
                          WithJsonSchema({"type": "string", "pattern": "^/.+", "x-type": "folder path"})]
Command = Annotated[tuple[Text, ...], BeforeValidator(_shell_words), Field(min_length=1), WithJsonSchema(
    {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
     "x-type": "command: a list of words, or one string split as a shell would"})]
RelativePath = Annotated[str, Strict(), AfterValidator(_relative_path),
                         WithJsonSchema({"type": "string", "pattern": "^[^/]", "x-type": "relative path"})]


@dataclass(frozen=True, kw_only=True)
class Socket:
    """One input or output of an algorithm in grand-challenge's terms (a socket, formerly a component
    interface): its slug and where its file or folder sits under /input or /output."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    slug: Annotated[Slug, meta("The socket's slug, e.g. color-fundus-image.", gc="slug")]
    relative_path: Annotated[RelativePath, meta(
        "Where it sits under /input or /output: images/<name> (a folder holding one image) for images, "
        "<name>.json for values, any other name for files.", gc="relative_path")]
    kind: Annotated[SocketKind | None, meta(
        "image, value (JSON) or file. Unset: image under images/, value for *.json, file otherwise.",
        gc="super_kind")] = None


@dataclass(frozen=True, kw_only=True)
class PhaseOptions:
    """The options a phase file and a phase record share, declared once for both."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    title: Annotated[Text, meta("The phase's name on the site and in messages to participants.", gc="title")]
    description: Annotated[Text, meta("A paragraph shown with the phase.")] = ""
    submission_kind: Annotated[Kind, meta(
        "What participants submit: algorithm, a container image the runner runs on the hidden data; "
        "predictions, a file of outputs; or training (grand-challenge's type 3), a container image the runner "
        "first trains on the phase's hidden training data, then runs on its hidden test inputs.",
        gc="submission_kind")]
    submissions_open_at: Annotated[Moment | None, meta(
        "When submissions open. Unset: open from the start.", gc="submissions_open_at")] = None
    submissions_close_at: Annotated[Closing | None, meta(
        "When submissions close; a date alone closes at the end of that day (UTC). Unset: never. A blind "
        "phase shows its scores from then on.", gc="submissions_close_at")] = None
    method_reports_close_at: Annotated[Closing | None, meta(
        "Until when a participant may add a method report (a PDF pinned by sha256) to a submission of theirs that "
        "has a succeeded result, by a pull request adding reports/<phase>/<participant>/<id>.yml and the PDF "
        "beside it; it may be after submissions_close_at (a short paper once the test phase closed). A date alone "
        "closes at the end of that day (UTC). Needs supplementary_file_choice optional or required, whose label "
        "and link settings the report shares. Unset: no reports after submitting.")] = None
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
    public: Annotated[Bool, meta("false hides the phase: no leaderboard, link or result is published, and it takes "
                                 "no submissions.",
                                 gc="public")] = True
    auto_publish_new_results: Annotated[Bool, meta(
        "false shows a result only once an organizer lists its participant/id in approvals/<phase>.yml.",
        gc="auto_publish_new_results")] = True
    rank_across_data_changes: Annotated[Bool, meta(
        "true ranks results scored on different hidden data or by a different evaluation (their provenance's "
        "data manifest and evaluation) together; false (the default) ranks only those scored as the phase's "
        "newest result was, and lists the others apart, unranked, saying why.")] = False
    inference_mode: Annotated[Mode, meta(
        "batch: one algorithm run over all cases; per-case: one run per case, each with algorithm_time_limit, "
        "its time and memory measured apart (runner.cases, runner.aggregates; FLARE's protocol).")] = "batch"
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
    ranking_metrics: Annotated[tuple[RankingMetric, ...], meta(
        "The per-case metrics scoring_method_choice rank-then-average ranks (FLARE: DSC, NSD, running time, GPU "
        "memory): every result is ranked on each metric in each case, a missing value (a failed case) ranking "
        "last, and ordered by the weighted mean of those ranks divided by the number of results ranked.")] = ()
    self_reported: Annotated[Bool, meta(
        "The metrics are the participants' own (a Type 0 challenge, e.g. LUNA16's cross-validation on public "
        "data): the evaluation checks their shape only, and the leaderboard, the result pages and the "
        "pull-request comments say they are self-reported. A predictions phase; submissions give code_url.")] = False
    supplementary_file_choice: Annotated[FileChoice, meta(
        "Whether a submission may (optional) or must (required) come with a PDF describing the method, committed "
        "beside it and pinned by sha256 (supplementary); the leaderboard links it.",
        gc="supplementary_file_choice")] = "off"
    supplementary_file_label: Annotated[Text, meta(
        "What the supplementary file is called on the leaderboard and result pages.",
        gc="supplementary_file_label", max_length=60)] = "Method description"
    supplementary_file_help_text: Annotated[Text, meta(
        "What the supplementary file should hold, shown in the phase's How to submit box.",
        gc="supplementary_file_help_text", max_length=300)] = ""
    show_supplementary_file_link: Annotated[Bool, meta(
        "Whether the leaderboard and result pages link each submission's supplementary file. grand-challenge's "
        "default is false; here it is true, as phases linked their PDFs before the option came (the PDF is in the "
        "public repository either way).", gc="show_supplementary_file_link")] = True
    supplementary_url_choice: Annotated[FileChoice, meta(
        "Whether a submission may (optional) or must (required) give a link, supplementary_url (https:// only), "
        "e.g. to a paper describing the method.", gc="supplementary_url_choice")] = "off"
    supplementary_url_label: Annotated[Text, meta(
        "What that link is called in the How to submit box and on the leaderboard and result pages.",
        gc="supplementary_url_label", min_length=1, max_length=60)] = "Publication"
    supplementary_url_help_text: Annotated[Text, meta(
        "What that link should point to, shown in the phase's How to submit box.",
        gc="supplementary_url_help_text", max_length=300)] = ""
    show_supplementary_url: Annotated[Bool, meta(
        "Whether the leaderboard and result pages link each submission's supplementary_url.",
        gc="show_supplementary_url")] = False
    allow_submission_comments: Annotated[Bool, meta(
        "Whether a submission may carry a comment (its file's comment).",
        gc="allow_submission_comments")] = False
    display_submission_comments: Annotated[Bool, meta(
        "Whether each result's page shows its submission's comment (the submission file is in the public "
        "repository either way).", gc="display_submission_comments")] = False
    submission_page_markdown: Annotated[Text, meta(
        "Markdown shown above the phase's How to submit box: what participants should know before they submit. "
        "Raw HTML in it shows as text, and its links go to http(s) and mailto addresses only.",
        gc="submission_page_markdown", max_length=20000)] = ""
    creator_must_be_verified: Annotated[Bool, meta(
        "Only verified participants may submit. A participant is verified here by registering, which an organizer "
        "approves by merging, so true needs registration: required in challenge.yml. (grand-challenge has since "
        "dropped the option.)", gc="creator_must_be_verified")] = False
    display_all_metrics: Annotated[Bool, meta(
        "false publishes only the leaderboard's columns of each result; everything else the evaluation wrote "
        "(per-case values included) is sealed to the challenge's recipients.", gc="display_all_metrics")] = True
    algorithm_input_path: Annotated[ContainerPath, meta(
        "Where the algorithm container finds its inputs (read-only), e.g. /workspace/inputs for FLARE21.")] = "/input"
    algorithm_output_path: Annotated[ContainerPath, meta(
        "Where the algorithm container writes its outputs (size-limited), e.g. /workspace/outputs.")] = "/output"
    algorithm_command: Annotated[Command | None, meta(
        "The command the algorithm container runs, as a list of words or one string split as a shell would "
        "(FLARE21: sh predict.sh). Unset: the image's own command.")] = None
    cases_per_run: Annotated[Whole, meta(
        "In per-case mode, how many cases each algorithm run gets (L2L's task instances in batches); each run "
        "has algorithm_time_limit and is measured.", ge=1)] = 1
    algorithm_interface: Annotated[Interface, meta(
        "runner: the algorithm reads the phase's input files at its input path and writes its outputs; "
        "grand-challenge: one run per case, each case folder laid out as grand-challenge lays out /input "
        "(images/<name>/<file>, <name>.json, inputs.json), outputs read from /output/<relative_path>.")] = "runner"
    evaluation_interface: Annotated[Interface, meta(
        "runner: the evaluation reads every output under /input; grand-challenge: /input/predictions.json lists "
        "each algorithm job and its outputs sit at /input/<job pk>/output/<relative_path>, as on "
        "grand-challenge.org, so its evaluation containers run unchanged.")] = "runner"
    algorithm_inputs: Annotated[tuple[Socket, ...], meta(
        "grand-challenge interface: the algorithm's input sockets. Unset: read from each case folder.",
        gc="algorithm_inputs")] = ()
    algorithm_outputs: Annotated[tuple[Socket, ...], meta(
        "grand-challenge interface: the algorithm's output sockets, each checked after every run. Unset: read "
        "from what the algorithm wrote.", gc="algorithm_outputs")] = ()
    training_command: Annotated[Command, meta(
        "Training phases: the command that trains, as a list of words or one string (the image's entrypoint, "
        "if it has one, gets these words). The same image then predicts with algorithm_command.")] = ("train",)
    training_input_path: Annotated[ContainerPath, meta(
        "Training phases: where the training container finds the hidden training data (read-only).")] = (
        "/opt/ml/input/data/training")
    model_path: Annotated[ContainerPath, meta(
        "Training phases: the folder the training container writes its model into (size-limited by "
        "training_resources.output); the predict runs find it there, read-only.")] = "/opt/ml/model"
    checkpoint_path: Annotated[ContainerPath, meta(
        "Training phases: a folder the runner keeps on its disk. Training that is stopped (the runner restarts) "
        "starts again with what it left here, within the same time budget, so it can resume.")] = (
        "/opt/ml/checkpoints")
    checkpoint_max_size: Annotated[Size, meta(
        "Training phases: the most the checkpoint folder may hold; training that writes more is stopped.")] = (
        4 * GIB)


@dataclass(frozen=True, kw_only=True)
class PhaseFile(PhaseOptions):
    """phases/<phase>.yml: the phase's options in grand-challenge's names."""

    score_title: Annotated[Text, meta("The score column's title.", gc="score_title")] = "Score"
    score_jsonpath: Annotated[JsonPath, meta(
        "Where the score is in each result: a JSONPath into the evaluation's metrics.json (aggregates.dice.mean), "
        "or under runner for the runner's measurements (runner.wall_time_s; the field reference lists them, and "
        "which inference_mode writes which).", gc="score_jsonpath")]
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
    training_time_limit: Annotated[Whole, meta(
        "Training phases: seconds of training in all, resumes included, before training is stopped and the "
        "submission fails (hours: 14400 is four).", ge=1)] = 3600
    training_resources: Annotated[Resources, meta(
        "Training phases: what the training container may use; its output is the size of the model "
        "folder.")] = field(default_factory=Resources)


@dataclass(frozen=True, kw_only=True)
class Phase(PhaseOptions):
    """A phase as the package reads it: its options, where it sits, and its score as a column."""

    challenge: str
    slug: str
    score: Column
    algorithm: Limits = field(default_factory=Limits)
    evaluation: Limits = field(default_factory=Limits)
    training: Limits = field(default_factory=Limits)

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
        training = Limits(time_limit=file.training_time_limit, **asdict(file.training_resources))
        return cls(challenge=challenge, slug=slug, score=score, algorithm=algorithm,
                   evaluation=file.evaluation_resources, training=training, **shared)

    @property
    def runs_per_case(self) -> bool:
        """Whether the algorithm runs once per case (or per cases_per_run cases), each run measured apart:
        per-case mode, or grand-challenge's algorithm interface (one job per case)."""
        return self.inference_mode == "per-case" or self.algorithm_interface == "grand-challenge"

    @property
    def runs_algorithms(self) -> bool:
        """Whether submissions are container images the runner runs (algorithm and training phases)."""
        return self.submission_kind != "predictions"

    @property
    def gpus_wanted(self) -> int:
        """The most GPUs one of its runs asks for: a runner needs that many to evaluate it (or --cpu-fallback)."""
        if not self.runs_algorithms:
            return 0
        return max(self.algorithm.gpus, self.training.gpus if self.submission_kind == "training" else 0)


# --- submissions/<phase>/<participant>/<id>.yml ------------------------------------------------


@dataclass(frozen=True)
class Predictions:
    """A predictions file committed next to the submission, pinned by its hash."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    file: Annotated[FileName, meta("The file's name, in the submission file's folder (a .zip is unpacked).")]
    sha256: Annotated[Sha256, meta("The file's sha256, 64 lowercase hex digits (sha256sum FILE).")]


@dataclass(frozen=True)
class Supplementary:
    """A PDF describing the method, committed next to the submission and pinned by its hash
    (grand-challenge's supplementary file), in a phase whose supplementary_file_choice allows it."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    file: Annotated[FileName, meta("The PDF's name, in the submission file's folder.")]
    sha256: Annotated[Sha256, meta("The file's sha256, 64 lowercase hex digits (sha256sum FILE).")]


ARCHIVE_SCHEMES = ("https", "http", "file")


def _archive_url(value: str) -> str:
    if printable(value, len(value) + 1) != value:  # a control or format character would reach terminals and logs
        raise refuse(f"{printable(value, 200)!r} holds a control or format character")
    parts = urlsplit(value)
    if parts.scheme not in ARCHIVE_SCHEMES or not parts.path.strip("/"):
        raise refuse(f"{value!r} is not an https://, http:// or file:// address of a file")
    try:
        _ = parts.port, (parts.hostname or "").encode("idna")
    except (ValueError, UnicodeError):
        raise refuse(f"{value!r} has no valid host and port") from None
    return value


ArchiveUrl = Annotated[str, Strict(), AfterValidator(_archive_url),
                       WithJsonSchema({"type": "string", "pattern": "^(https?|file)://", "x-type": "URL"})]


@dataclass(frozen=True, kw_only=True)
class ImageArchive:
    """A `docker save` tarball the runner downloads, verifies and loads: an algorithm that need not be
    pushed to a registry (FLARE21's way), optionally encrypted to the runner's public key."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    url: Annotated[ArchiveUrl, meta("Where the runner downloads it: https:// (or http://; file:// for local "
                                    "runs). A server that answers HTTP Range requests lets a broken download "
                                    "resume.")]
    sha256: Annotated[Sha256, meta("The sha256 of the file at that address, 64 lowercase hex digits "
                                   "(sha256sum FILE): of the encrypted file when encrypted.")]
    encrypted: Annotated[Bool, meta("true: the file is age-encrypted to the runner's public key "
                                    "(age -r <runner key> -o algo.tar.age algo.tar).")] = False


@dataclass(frozen=True, kw_only=True)
class SubmissionFields:
    """What a submission file and a submission record share."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    phase: Annotated[Slug, meta("The phase submitted to: the folder the file sits in.")]
    image: Annotated[SubmittedImage | None, meta(
        "The algorithm's container image, pinned by digest: registry/name@sha256:<64 hex digits>.")] = None
    image_archive: Annotated[ImageArchive | None, meta(
        "Instead of image: the algorithm as a docker save tarball at a URL, pinned by its sha256.")] = None
    title: Annotated[Text, meta("A name for this submission on the leaderboard.", max_length=120)] = ""
    description: Annotated[Text, meta("What this submission does differently.", max_length=2000)] = ""
    comment: Annotated[Text, meta(
        "A note on this submission, in a phase with allow_submission_comments; its result page shows it where the "
        "phase sets display_submission_comments.", gc="comment", max_length=MAX_COMMENT)] = ""
    supplementary_url: Annotated[HttpsUrl | None, meta(
        "A link (https://), in a phase with supplementary_url_choice optional or required; the phase's "
        "supplementary_url_label says what it should be (a paper, say).", gc="supplementary_url")] = None
    publication_url: Annotated[Url | None, meta("A paper or preprint describing the method, linked from the "
                                                "leaderboard.")] = None
    code_url: Annotated[Url | None, meta("The method's source code, linked from the leaderboard.")] = None
    supplementary: Annotated[Supplementary | None, meta(
        "A PDF describing the method, in a phase that takes one (supplementary_file_choice).")] = None


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
        """The predictions file beside the submission file; None if there is no such regular file."""
        return companion_file(self.path.parent, self.predictions) if self.predictions else None

    @property
    def supplementary_path(self) -> Path | None:
        """The supplementary PDF beside the submission file; None if there is no such regular file."""
        return companion_file(self.path.parent, self.supplementary.file) if self.supplementary else None


# --- reports/<phase>/<participant>/<id>.yml ---------------------------------------------------


@dataclass(frozen=True)
class MethodReport:
    """reports/<phase>/<participant>/<id>.yml: a method report, the PDF describing the method, added to the
    submission <id> once it has a succeeded result, while the phase's method_reports_close_at is ahead. It is a
    file of its own, not an edit of the submission file: that file stays as the runner evaluated and signed it."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    file: Annotated[FileName, meta(f"The PDF's name ({SUPPLEMENTARY_SUFFIX}), in this file's folder.")]
    sha256: Annotated[Sha256, meta("The PDF's sha256, 64 lowercase hex digits (sha256sum FILE).")]


def load_report(path: Path) -> MethodReport:
    """A method report file, held to the participant policy (a participant writes it)."""
    return parse(participant_yaml(path), MethodReport, checks=lambda report, invalid: (
        [] if "file" in invalid or report.file.lower().endswith(SUPPLEMENTARY_SUFFIX)
        else [(("file",), f"must name a PDF ({SUPPLEMENTARY_SUFFIX})")]))


# --- results/<phase>/<participant>/<id>.json (written by the runner) --------------------------


@dataclass(frozen=True)
class Measurement:
    """A number the runner measures of each algorithm run. Score paths read it under `runner`: the
    whole job's (`whole` folds a per-case job's runs into one), and in per-case mode each run's
    (`runner.cases`) and their SUMMARIES (`runner.aggregates`). The field reference lists them."""

    name: str  # its field in RunRecord and in each run's record
    meaning: str
    whole: Literal["sum", "max"]


MEASUREMENTS = (
    Measurement("wall_time_s", "seconds the container ran", "sum"),
    Measurement("peak_memory_bytes", "the container's peak memory in bytes (its cgroup's high-water mark)", "max"),
    Measurement("gpu_memory_max_bytes", "its stable maximum of GPU memory in bytes, sampled through NVML every "
                "0.1 s (phases with algorithm_resources.gpus)", "max"),
    Measurement("gpu_memory_auc_byte_s", "its GPU memory's area under the curve in byte-seconds (phases with "
                "algorithm_resources.gpus)", "sum"),
)
# Each measurement's summaries over a per-case job's runs, by their names in runner.aggregates.<measurement>.<name>.
SUMMARIES: dict[str, Callable[[list[float]], float]] = {"mean": statistics.fmean, "max": max, "sum": sum}


def unwritten_runner_path(phase: Phase, path: str) -> str | None:
    """Why no result of `phase` holds what a score path reads under `runner` (None: results may): a
    predictions phase runs no container, and only per-case runs write runner.cases and runner.aggregates."""
    names = leading_names(path)
    if names[:1] != ("runner",):
        return None
    if not phase.runs_algorithms:
        return "reads the runner's measurements, but a predictions phase runs no container to measure"
    if names[1:2] in (("cases",), ("aggregates",)) and not phase.runs_per_case:
        return (f"reads runner.{names[1]}, which only per-case runs write, but this phase runs in batch mode: "
                "set inference_mode: per-case, or read the whole run's runner.<measurement>")
    return None


@dataclass
class RunRecord:
    """What the sandbox saw of a container's run(s), as stored in a result. In per-case mode
    `cases` holds each run's measurements and `aggregates` their SUMMARIES, so a leaderboard
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
    gpu: str | None = None  # the GPU(s) a GPU phase's run got ("0"), or "none (cpu fallback)"
    last_line: str | None = None  # the last line it wrote to stderr (training: what the participant sees)
    resumes: int = 0  # training: how often it started again from its checkpoints after the runner stopped
    model_sha256: str | None = None  # training: the model folder it wrote (tree hash), also kept on the runner


@dataclass(frozen=True)
class SubmissionDetails:
    """What a leaderboard and a result page show of a submission besides its scores.

    The runner copies it from the submission into the result it writes (`details_of`), so a build
    that already reads every listed result reads no submission file at all: at 60,000 results,
    reading each submission file (about 1 ms each under the participant policy) would cost a
    minute per build, while the copy costs nothing. Both files are immutable once merged, so the
    copy cannot go stale. Results written before the copy existed carry none; for those alone the
    site reads the submission file (`tree.details.submission_details`)."""

    title: str = ""
    description: str = ""
    publication_url: str | None = None
    code_url: str | None = None
    supplementary: str | None = None  # the PDF's name beside the submission file
    supplementary_sha256: str | None = None
    comment: str = ""
    supplementary_url: str | None = None

    @property
    def empty(self) -> bool:
        return self == SubmissionDetails()


# Details added after results were first signed: a record leaves them out where empty, so a result signed
# before they existed reads (and verifies) as it was signed.
LATER_DETAILS = ("comment", "supplementary_url")


def details_of(submission: Submission) -> SubmissionDetails:
    """The details a result carries of its submission (what `SubmissionDetails` says and why)."""
    extra = submission.supplementary
    return SubmissionDetails(title=submission.title, description=submission.description,
                             publication_url=submission.publication_url, code_url=submission.code_url,
                             supplementary=extra.file if extra else None,
                             supplementary_sha256=extra.sha256 if extra else None,
                             comment=submission.comment, supplementary_url=submission.supplementary_url)


@dataclass(frozen=True)
class Provenance:
    """What produced a result, as the runner saw it when it evaluated; its signature covers it all, so a
    reader can tell which data and which evaluation made each leaderboard row (`tree.verification`)."""

    submission_blob: str  # the submission file's git blob id, as the runner read it
    phase_blob: str  # the phase file's git blob id then: its rules, windows and evaluation settings
    algorithm: str | None  # what ran or was scored: an image digest or ID, an archive's or predictions' sha256
    evaluation_image: str  # the ID of the image that scored it
    evaluation_context: str | None  # sha256 of the build context it was built from (None: a pinned image)
    data: dict[str, str]  # each hidden data folder's content hash: inputs, ground-truth, training
    data_manifest: str  # one hash over `data`: rows are comparable when theirs are equal
    runner_commit: str | None  # the repository commit the runner ran from (its package installs from it)
    signed_at: str  # when the runner signed the record: the time its key must be valid at

    def __post_init__(self) -> None:
        """Text where text is meant: a record edited by hand must fail to load, not fail a page later."""
        for name, value in vars(self).items():
            optional = name in ("algorithm", "evaluation_context", "runner_commit")
            if name == "data":
                if not isinstance(value, dict) or not all(isinstance(x, str) for item in value.items() for x in item):
                    raise TypeError("provenance.data must map names to text")
            elif not (isinstance(value, str) or (optional and value is None)):
                raise TypeError(f"provenance.{name} must be text")

    def evaluation(self) -> str:
        """What names the evaluation: its build context's hash, else the pinned image's ID."""
        return self.evaluation_context or self.evaluation_image


@dataclass
class Result:
    """results/<phase>/<participant>/<id>.json, written by the runner only."""

    challenge: str
    phase: str
    participant: str
    submission: str
    status: Literal["succeeded", "failed"]
    created_at: str
    started_at: str | None  # None in a public record that withholds measurements (it gives the running time)
    finished_at: str | None
    metrics: dict[str, Any] | None = None
    error: str | None = None
    algorithm: RunRecord | None = None
    evaluation: RunRecord | None = None
    training: RunRecord | None = None  # training phases: the training run (its resumes folded in)
    logs: dict[str, str] | None = None  # full logs, only in debugging phases (the participant's own)
    attempts: int = 1  # >1 when transient runner failures were retried
    runner_version: str = ""
    # In a public record: what the phase withholds of this result, and until when. The whole result is
    # then sealed beside it (<id>.sealed.age) for the challenge's recipients.
    withheld: str | None = None
    details: SubmissionDetails | None = None  # the submission's title, links, ... (see SubmissionDetails)
    provenance: Provenance | None = None  # what produced it (results written before provenance have none)
    signature: str | None = None  # the runner's SSH signature of the rest (`tree.signing`)

    def without_logs(self) -> Result:
        """This result less its logs: the full logs, and each run's last stderr line (a piece of them,
        public only as a failure's error). What the runner keeps whole, only it and the participant read."""
        runs = (self.algorithm, self.evaluation, self.training)
        if self.logs is None and all(run is None or run.last_line is None for run in runs):
            return self  # most results: nothing to take out, and a site build asks for 60,000 of them

        def quiet(run: RunRecord | None) -> RunRecord | None:
            return replace(run, last_line=None) if run else None

        return replace(self, logs=None, algorithm=quiet(self.algorithm), evaluation=quiet(self.evaluation),
                       training=quiet(self.training))

    def to_json(self) -> str:
        """The record as JSON every reader takes: text that is not valid Unicode (a lone surrogate from a
        file name or an evaluation's JSON) is written as `printable` shows it, never as an escape that
        strict readers refuse (one such record once stopped every build and every review of its phase)."""
        return json.dumps(self.document(), indent=2, sort_keys=False, allow_nan=False) + "\n"

    def document(self) -> dict[str, Any]:
        """The record as its JSON file holds it: what `to_json` writes and a signature covers."""
        data: dict[str, Any] = _valid_text(asdict(self))
        for name in OMITTED_WHEN_NONE:  # a result of another phase, or of an older runner, reads as it did
            if data[name] is None:
                del data[name]
        if data["details"]:
            data["details"] = {k: v for k, v in data["details"].items() if v or k not in LATER_DETAILS}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        runs = {k: RunRecord(**data[k]) if data.get(k) else None for k in ("algorithm", "evaluation", "training")}
        details = SubmissionDetails(**data["details"]) if data.get("details") else None
        provenance = Provenance(**data["provenance"]) if data.get("provenance") else None
        return cls(**{**data, **runs, "details": details, "provenance": provenance})


OMITTED_WHEN_NONE = ("withheld", "training", "provenance", "signature")


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


def url_file(url: str) -> str | None:
    """The file name a URL's path ends in, if a download may be saved under it."""
    last = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
    return last if NAME.fullmatch(last) else None


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


def nested_paths(first: str, second: str) -> bool:
    """Whether two container folders are the same or one holds the other."""
    return first == second or first.startswith(second + "/") or second.startswith(first + "/")


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


def _valid_text(value: Any) -> Any:
    """`value` with every string (keys too) encodable as UTF-8."""
    if isinstance(value, str):
        return value if value.isascii() or _encodable(value) else printable(value, limit=len(value) * 8)
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_valid_text(v) for v in value]
    return value


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def load_result(path: Path) -> Result:
    return parse_result(path.read_bytes(), path)


def parse_result(text: bytes, path: Path) -> Result:
    """A result record's bytes (a public record's, or a sealed one's once opened); ModelError naming `path`."""
    try:
        data = orjson.loads(text)  # orjson: a build reads thousands, 4x faster
        if not isinstance(data, dict):
            raise ModelError(path, None, None, "not a result record: not a JSON object")
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
    (size cap, no aliases) wherever it sits, a pull request's scratch copy included. A link is never read:
    a submission that links to another participant's would run their algorithm under its own name."""
    if path.is_symlink():
        raise ModelError(path, None, None, "must be a regular file, not a symbolic link")
    return load_yaml(path, PARTICIPANT)


def parse_time(text: str) -> dt.datetime:
    return as_utc(dt.datetime.fromisoformat(text))


__all__ = ["APPROVAL", "CASE_METHODS", "DIGEST", "NAME", "PINNED", "SCORING", "SHA256", "SLUG", "Challenge",
           "Column", "CombinedLeaderboard", "Document", "Limits", "ModelError", "Organization", "Phase",
           "RankingOptions", "Result", "RunRecord", "Submission", "check_image_ref", "load_approvals",
           "load_challenge", "load_phase", "load_result", "load_submission", "parse_time", "scored_document"]
