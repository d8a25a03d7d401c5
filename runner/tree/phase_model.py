"""Typed records of phases/<phase>.yml: the file as organizers write it (`PhaseFile`), the phase as the
package reads it (`Phase`) and the options both share (`PhaseOptions`), with the leaderboard's columns,
challengeR's ranking options, the containers' resources and the container contract (folders, command,
grand-challenge's sockets).

Also what follows from a phase's declaration alone: whether its results can hold what a score path reads
under `runner` (`unwritten_runner_path`), and whether two container folders overlap (`nested_paths`).

Knows: `model` (the shared vocabulary), `schema_types`, `jsonpaths`. Must not import `loading`, which
validates phase files against these records, nor `submission_model` or `result_model`.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field, fields
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, Strict, WithJsonSchema

from runner.tree.jsonpaths import leading_names
from runner.tree.model import GIB, STRICT, Display, FileChoice, Kind, Method, Mode, Sort
from runner.tree.schema_types import (
    Bool,
    Closing,
    JsonPath,
    Missing,
    Moment,
    Number,
    OrganizerImage,
    Probability,
    Size,
    Slug,
    Text,
    Whole,
    meta,
    refuse,
)

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
        "image, value (JSON, parsed into predictions.json: a large JSON output is better a file) or file. "
        "Unset: image under images/, value for *.json, file otherwise.",
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
    predictions_max_size: Annotated[Size, meta(
        "Predictions phases: the largest predictions file a submission may commit (it stays in the public "
        "repository's history for good; GitHub warns past 50 MB and refuses past 100 MB).")] = 50 * 1024**2
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


def nested_paths(first: str, second: str) -> bool:
    """Whether two container folders are the same or one holds the other."""
    return first == second or first.startswith(second + "/") or second.startswith(first + "/")
