"""Typed records of the challenge tree: challenge.yml, phases/*.yml, submissions and results.

Field names follow grand-challenge.org's Phase options and OpenChallenges' challenge vocabulary,
so organizers can bring configurations they already have and the catalog can be exported.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import jsonpath_ng

from runner.tree.fields import Fields
from runner.tree.located import Document, ModelError, as_utc, load_yaml

SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
PINNED = re.compile(r"(?P<name>[a-z0-9][a-z0-9._/:-]*[a-z0-9])@(?P<digest>sha256:[0-9a-f]{64})")
SHA256 = re.compile(r"[0-9a-f]{64}")

STATUSES = ("upcoming", "active", "completed")
INCENTIVES = ("monetary", "publication", "speaking_engagement", "other")
SUBMISSION_TYPES = ("container_image", "prediction_file", "notebook", "mlcube", "other")
CATEGORIES = ("featured", "benchmark", "hackathon")
ROLES = ("challenge_organizer", "data_contributor", "sponsor")
SORTS = ("asc", "desc")
SCORING = ("absolute", "mean", "median")  # grand-challenge: over the ranked columns of each result
CASE_METHODS = ("aggregate-then-rank", "rank-then-aggregate", "test-then-rank")  # challengeR: over cases
DISPLAY = ("all", "most_recent", "best")
KINDS = ("algorithm", "predictions")
MODES = ("batch", "per-case")
REGISTRATION = ("open", "required")


@dataclass(frozen=True)
class Organization:
    name: str
    role: str = "challenge_organizer"
    url: str | None = None


@dataclass(frozen=True)
class CombinedLeaderboard:
    """One ranking over several phases (tasks): each participant's best rank per phase, combined.
    Only participants ranked in every phase appear, as on grand-challenge.org."""

    slug: str
    title: str
    phases: tuple[tuple[str, float], ...]  # (phase slug, weight)
    combine: str = "mean"  # mean, median or sum of the per-phase ranks


@dataclass(frozen=True)
class Challenge:
    """challenge.yml, in OpenChallenges' words plus grand-challenge's challenge type (0-3)."""

    slug: str
    name: str
    headline: str
    description: str = ""
    status: str | None = None
    platform: str = "self-hosted"
    start_date: dt.date | None = None
    end_date: dt.date | None = None
    type: int = 2
    incentives: tuple[str, ...] = ()
    submission_types: tuple[str, ...] = ()
    input_data_types: tuple[str, ...] = ()
    operation: str | None = None
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    website_url: str | None = None
    doi: str | None = None
    organizations: tuple[Organization, ...] = ()
    data_url: str | None = None
    registration: str = "open"
    combined_leaderboards: tuple[CombinedLeaderboard, ...] = ()

    def current_status(self, today: dt.date) -> str:
        """The written status, else one computed from the dates as OpenChallenges does."""
        if self.status:
            return self.status
        if self.start_date and today < self.start_date:
            return "upcoming"
        if self.end_date and today > self.end_date:
            return "completed"
        return "active"


@dataclass(frozen=True)
class Column:
    """A leaderboard column: the score or one of grand-challenge's extra_results_columns."""

    path: str
    title: str
    order: Literal["asc", "desc"] = "desc"
    error_path: str | None = None
    exclude_from_ranking: bool = False


@dataclass(frozen=True)
class Limits:
    """What one container of a phase may use; the runner's sandbox enforces these."""

    time_limit: int = 300
    memory: int = 2 * 1024**3
    cpus: float = 1.0
    gpus: int = 0
    output: int = 1024**3  # /output is a tmpfs of this size: writing more fails inside the container


@dataclass(frozen=True)
class RankingOptions:
    """Options of the challengeR methods (scoring_method_choice aggregate-then-rank, ...)."""

    aggregate: str = "mean"
    ties: str = "min"
    missing: str | float = "drop"
    alpha: float = 0.05
    p_adjust: str = "none"


@dataclass(frozen=True)
class Phase:
    """phases/<slug>.yml, named after grand-challenge's Phase options."""

    challenge: str
    slug: str
    title: str
    submission_kind: Literal["algorithm", "predictions"]
    score: Column
    description: str = ""
    submissions_open_at: dt.datetime | None = None
    submissions_close_at: dt.datetime | None = None
    score_decimal_places: int = 4
    extra_results_columns: tuple[Column, ...] = ()
    scoring_method_choice: str = "absolute"
    result_display_choice: str = "all"
    submissions_limit_per_user_per_period: int | None = None
    submission_limit_period: int | None = None
    parent: str | None = None
    public: bool = True
    auto_publish_new_results: bool = True
    inference_mode: str = "batch"
    algorithm: Limits = field(default_factory=Limits)
    evaluation: Limits = field(default_factory=Limits)
    evaluation_image: str | None = None
    allowed_registries: tuple[str, ...] = ()  # empty: any registry
    count_failed_submissions: bool = False  # toward the limit per period
    # grand-challenge's name for a debugging phase: participants see their own full logs.
    give_algorithm_editors_job_view_permissions: bool = False
    blind: bool = False  # scores withheld until submissions close; success is still shown
    # Per-case values of the score (e.g. case.*.dice), for challengeR's methods and uncertainty.
    score_case_jsonpath: str | None = None
    ranking_options: RankingOptions = field(default_factory=lambda: RankingOptions())
    best_of_last: int | None = None  # L2L: only each participant's last N results compete

    @property
    def columns(self) -> tuple[Column, ...]:
        return (self.score, *self.extra_results_columns)

    def is_open(self, now: dt.datetime) -> bool:
        if self.submissions_open_at and now < self.submissions_open_at:
            return False
        return not (self.submissions_close_at and now >= self.submissions_close_at)


@dataclass(frozen=True)
class Submission:
    """submissions/<phase>/<participant>/<id>.yml; identity comes from the path, content from the file."""

    challenge: str
    phase: str
    participant: str
    id: str
    path: Path
    image: str | None = None
    predictions: str | None = None
    predictions_sha256: str | None = None
    title: str = ""
    description: str = ""

    @property
    def key(self) -> str:
        return f"{self.challenge}/{self.phase}/{self.participant}/{self.id}"


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

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        runs = {k: RunRecord(**data[k]) if data.get(k) else None for k in ("algorithm", "evaluation")}
        return cls(**{**data, **runs})


def check_image_ref(ref: str, *, allow_local: bool) -> str | None:
    """None if `ref` may run, else why not. A tag alone can be moved, so only digests are accepted."""
    if PINNED.fullmatch(ref):
        return None
    if DIGEST.fullmatch(ref):
        return None if allow_local else (
            "a local image ID is accepted only for local runs (--allow-local-images); "
            "push the image and write name@sha256:<digest>")
    return "must be pinned by digest: registry/name@sha256:<64 hex digits> (a tag alone can change)"


def load_challenge(path: Path) -> Challenge:
    doc = load_yaml(path)
    f = Fields(doc)
    f.allow_only(("slug", "name", "headline", "description", "status", "platform", "start_date",
                  "end_date", "type", "incentives", "submission_types", "input_data_types",
                  "operation", "categories", "tags", "website_url", "doi", "organizations", "data_url",
                  "registration", "combined_leaderboards"))
    slug = path.parent.name
    if f.text("slug", slug) != slug:
        raise f.error("slug", f"must match the folder name {slug!r}")
    if not SLUG.fullmatch(slug):
        raise ModelError(path, None, None, f"folder name {slug!r} is not a kebab-case slug")
    challenge = Challenge(
        slug=slug,
        name=_name_field(f),
        headline=f.text("headline", max_len=80),
        description=f.text("description", "", max_len=1000),
        status=f.choice("status", STATUSES, None),
        platform=f.text("platform", "self-hosted", pattern=SLUG, what="a platform slug"),
        start_date=f.date("start_date", None),
        end_date=f.date("end_date", None),
        type=f.integer("type", 2, minimum=0, maximum=3),
        incentives=f.choices("incentives", INCENTIVES),
        submission_types=f.choices("submission_types", SUBMISSION_TYPES),
        input_data_types=f.strings("input_data_types"),
        operation=f.text("operation", None),
        categories=f.choices("categories", CATEGORIES),
        tags=f.strings("tags"),
        website_url=f.text("website_url", None),
        doi=f.text("doi", None),
        organizations=tuple(_organization(o) for o in f.blocks("organizations")),
        data_url=f.text("data_url", None),
        registration=f.choice("registration", REGISTRATION, "open"),
        combined_leaderboards=tuple(_combined(c) for c in f.blocks("combined_leaderboards")),
    )
    if challenge.start_date and challenge.end_date and challenge.end_date < challenge.start_date:
        raise f.error("end_date", "is before start_date")
    return challenge


def _name_field(f: Fields) -> str:
    name = f.text("name", max_len=255)
    if len(name) < 3:
        raise f.error("name", "must be at least 3 characters")
    return name


def _combined(f: Fields) -> CombinedLeaderboard:
    f.allow_only(("slug", "title", "phases", "combine"))
    phases = []
    for item in f.blocks("phases"):
        item.allow_only(("phase", "weight"))
        phases.append((item.text("phase", pattern=SLUG, what="a phase slug"), item.number("weight", 1.0, minimum=0.0)))
    if len(phases) < 2:
        raise f.error("phases", "a combined leaderboard needs at least two phases")
    combine = f.choice("combine", ("mean", "median", "sum"), "mean")
    if combine == "median" and any(w != 1.0 for _, w in phases):
        raise f.error("combine", "weights apply to mean and sum; a median takes none")
    return CombinedLeaderboard(f.text("slug", pattern=SLUG, what="a kebab-case slug"), f.text("title"),
                               tuple(phases), combine)


def _organization(f: Fields) -> Organization:
    f.allow_only(("name", "role", "url"))
    return Organization(f.text("name"), f.choice("role", ROLES, "challenge_organizer"), f.text("url", None))


def load_phase(path: Path, challenge: str) -> Phase:
    doc = load_yaml(path)
    f = Fields(doc)
    f.allow_only((
        "title", "description", "submission_kind", "submissions_open_at", "submissions_close_at",
        "score_title", "score_jsonpath", "score_error_jsonpath", "score_default_sort",
        "score_decimal_places", "extra_results_columns", "scoring_method_choice",
        "result_display_choice", "submissions_limit_per_user_per_period", "submission_limit_period",
        "parent", "public", "auto_publish_new_results", "algorithm_time_limit", "inference_mode",
        "algorithm_resources", "evaluation_image", "evaluation_resources", "allowed_registries",
        "count_failed_submissions", "give_algorithm_editors_job_view_permissions", "blind",
        "score_case_jsonpath", "ranking_options", "best_of_last"))
    slug = path.stem
    if not SLUG.fullmatch(slug):
        raise ModelError(path, None, None, f"phase file name {slug!r} is not a kebab-case slug")
    phase = Phase(
        challenge=challenge,
        slug=slug,
        title=f.text("title"),
        description=f.text("description", ""),
        submission_kind=f.choice("submission_kind", KINDS),
        submissions_open_at=f.time("submissions_open_at", None),
        submissions_close_at=f.time("submissions_close_at", None),
        score=Column(
            path=_jsonpath(f, "score_jsonpath"),
            title=f.text("score_title", "Score"),
            order=f.choice("score_default_sort", SORTS, "desc"),
            error_path=_jsonpath(f, "score_error_jsonpath", None),
        ),
        score_decimal_places=f.integer("score_decimal_places", 4, minimum=0, maximum=12),
        extra_results_columns=tuple(_column(c) for c in f.blocks("extra_results_columns")),
        scoring_method_choice=f.choice("scoring_method_choice", SCORING + CASE_METHODS, "absolute"),
        result_display_choice=f.choice("result_display_choice", DISPLAY, "all"),
        submissions_limit_per_user_per_period=f.integer("submissions_limit_per_user_per_period", None, minimum=0),
        submission_limit_period=f.integer("submission_limit_period", None, minimum=1),
        parent=f.text("parent", None, pattern=SLUG, what="a phase slug"),
        public=f.get("public", bool, True),
        auto_publish_new_results=f.get("auto_publish_new_results", bool, True),
        inference_mode=f.choice("inference_mode", MODES, "batch"),
        algorithm=_limits(f.block("algorithm_resources", None), f.integer("algorithm_time_limit", 300, minimum=1)),
        evaluation_image=_image(f, "evaluation_image"),
        evaluation=_limits(f.block("evaluation_resources", None), None),
        allowed_registries=f.strings("allowed_registries"),
        count_failed_submissions=f.get("count_failed_submissions", bool, False),
        give_algorithm_editors_job_view_permissions=f.get("give_algorithm_editors_job_view_permissions", bool, False),
        blind=f.get("blind", bool, False),
        score_case_jsonpath=_jsonpath(f, "score_case_jsonpath", None),
        ranking_options=_ranking_options(f.block("ranking_options", None)),
        best_of_last=f.integer("best_of_last", None, minimum=1),
    )
    opens, closes = phase.submissions_open_at, phase.submissions_close_at
    if opens and closes and closes <= opens:
        raise f.error("submissions_close_at", "is not after submissions_open_at")
    if phase.parent == slug:
        raise f.error("parent", "a phase cannot be its own parent")
    if phase.scoring_method_choice in CASE_METHODS and not phase.score_case_jsonpath:
        raise f.error("scoring_method_choice", f"{phase.scoring_method_choice} ranks per case: "
                      "set score_case_jsonpath to the per-case values of the score, e.g. case.*.dice")
    return phase


def _ranking_options(f: Fields) -> RankingOptions:
    f.allow_only(("aggregate", "ties", "missing", "alpha", "p_adjust"))
    missing = f.get("missing", (str, int, float), "drop")
    if isinstance(missing, str) and missing != "drop":
        raise f.error("missing", f"{missing!r} is neither drop nor a number")
    alpha = f.number("alpha", 0.05, minimum=0.0)
    if not 0 < alpha < 1:
        raise f.error("alpha", f"must lie between 0 and 1, got {alpha}")
    return RankingOptions(
        aggregate=f.choice("aggregate", ("mean", "median"), "mean"),
        ties=f.choice("ties", ("min", "max", "average"), "min"),
        missing=missing,
        alpha=alpha,
        p_adjust=f.choice("p_adjust", ("none", "holm", "bonferroni", "hochberg", "fdr_bh"), "none"),
    )


def _jsonpath(f: Fields, name: str, default: Any = ...) -> str:
    value = f.text(name) if default is ... else f.text(name, default)
    if value is not None:
        try:
            jsonpath_ng.parse(value)
        except Exception as exc:  # jsonpath_ng raises several unrelated types
            raise f.error(name, f"{value!r} is not a JSONPath: {exc}") from None
    return value


def _column(f: Fields) -> Column:
    f.allow_only(("path", "title", "order", "error_path", "exclude_from_ranking"))
    return Column(
        path=_jsonpath(f, "path"),
        title=f.text("title"),
        order=f.choice("order", SORTS, "desc"),
        error_path=_jsonpath(f, "error_path", None),
        exclude_from_ranking=f.get("exclude_from_ranking", bool, False),
    )


def _limits(f: Fields, time_limit: int | None) -> Limits:
    f.allow_only(("time_limit", "memory", "cpus", "gpus", "output"))
    default = Limits()
    if time_limit is not None and "time_limit" in f.data:
        raise f.error("time_limit", "set algorithm_time_limit instead (grand-challenge's name)")
    return Limits(
        time_limit=time_limit or f.integer("time_limit", default.time_limit, minimum=1),
        memory=f.size("memory", default.memory),
        cpus=f.number("cpus", default.cpus, minimum=0.01),
        gpus=f.integer("gpus", default.gpus, minimum=0),
        output=f.size("output", default.output),
    )


def _image(f: Fields, name: str) -> str | None:
    ref = f.text(name, None)
    if ref is not None and (why := check_image_ref(ref, allow_local=False)):
        raise f.error(name, why)
    return ref


def load_submission(path: Path, *, challenge: str, phase: str, participant: str,
                    kind: str | None = None) -> Submission:
    """Read a submission; its phase, participant and id come from where the file sits."""
    doc = load_yaml(path)
    f = Fields(doc)
    f.allow_only(("phase", "image", "predictions", "title", "description"))
    if f.text("phase") != phase:
        raise f.error("phase", f"says {f.data['phase']!r} but the file is under submissions/{phase}/")
    if not NAME.fullmatch(path.stem):
        raise ModelError(path, None, None, f"submission id {path.stem!r} may use letters, digits, '-', '_' and '.'")
    image = f.text("image", None)
    predictions = f.block("predictions", None)
    predictions.allow_only(("file", "sha256"))
    if (image is None) == (not predictions.data):
        raise ModelError(path, doc.line(()), None, "give exactly one of image (algorithm) or predictions (file)")
    if kind == "algorithm" and image is None:
        raise f.error("predictions", f"phase {phase!r} takes an algorithm image, not predictions")
    if kind == "predictions" and image is not None:
        raise f.error("image", f"phase {phase!r} takes a predictions file, not an image")
    if image is not None and not (PINNED.fullmatch(image) or DIGEST.fullmatch(image)):
        raise f.error("image", check_image_ref(image, allow_local=False) or "")
    files = (predictions.text("file"), predictions.text("sha256", pattern=SHA256, what="64 lowercase hex digits")) \
        if predictions.data else (None, None)
    return Submission(
        challenge=challenge, phase=phase, participant=participant, id=path.stem, path=path,
        image=image, predictions=files[0], predictions_sha256=files[1],
        title=f.text("title", "", max_len=120),
        description=f.text("description", "", max_len=2000),
    )


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


def parse_time(text: str) -> dt.datetime:
    return as_utc(dt.datetime.fromisoformat(text))


__all__ = ["Challenge", "Column", "Document", "Limits", "ModelError", "Organization", "Phase",
           "Result", "RunRecord", "Submission", "check_image_ref", "load_challenge", "load_phase",
           "load_result", "load_submission", "parse_time"]
