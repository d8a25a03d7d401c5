"""Typed records of the challenge tree, part one: the vocabulary every file kind shares, and challenge.yml.

Each field of a file kind is declared once, with its type, default, meaning and grand-challenge's name
(`meta`), in one of four record modules: this one (the words and web addresses every file kind uses, and
challenge.yml's records), `phase_model` (phases/*.yml), `submission_model` (submissions, method reports and
the details a result copies of its submission) and `result_model` (results, which the runner alone writes).
The loaders in `loading` validate files against these declarations (`schema_parse.parse`), and the JSON
Schemas (`challenge schema`) and the field reference for organizers are derived from them.

The records are frozen dataclasses, built and copied (`dataclasses.replace`), never changed in place, but
for two in `result_model`: `Result`, whose `attempts` the evaluation queue sets on the result an evaluation
returned (`evaluation.queue`), and `RunRecord`, which nothing changes once made (`Result.without_logs`
copies it with `replace`) but which is not declared frozen either. `loading`'s `ApprovalsFile` and
`ExclusionsFile` are pydantic root models.

Field names follow grand-challenge.org's Phase options and OpenChallenges' challenge vocabulary,
so organizers can bring configurations they already have and the catalog can be exported.

Knows: runner.errors, `schema_types`. Must not import the other record modules or `loading`: they import it.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal, get_args
from urllib.parse import urlsplit

from pydantic import AfterValidator, ConfigDict, Field, GetPydanticSchema, Strict, WithJsonSchema
from pydantic_core import core_schema

from runner.errors import printable
from runner.tree.schema_types import NAME, Closing, Day, Name, Number, Sha256, Size, Slug, Text, Whole, meta, refuse

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


def url_file(url: str) -> str | None:
    """The file name a URL's path ends in, if a download may be saved under it: a `Dataset`'s file where
    it names none."""
    last = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
    return last if NAME.fullmatch(last) else None


@dataclass(frozen=True)
class Organization:
    """One organization behind the challenge."""

    __pydantic_config__: ClassVar[ConfigDict] = STRICT
    name: Annotated[Text, meta("The organization's name.")]
    role: Annotated[Role, meta("What it does for the challenge.")] = "challenge_organizer"
    url: Annotated[Url | None, meta("Its website.")] = None


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
    data_url: Annotated[Url | None, meta("Where the public training data can be downloaded.")] = None
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
