"""Typed records of what a participant submits: submissions/<phase>/<participant>/<id>.yml (`SubmissionFile`,
read as a `Submission`), a method report added to a submission later (`MethodReport`), and the details of a
submission that its result carries (`SubmissionDetails`, `details_of`).

Knows: runner.errors, `model` (the shared vocabulary and web addresses), `schema_types`, `paths` (the files
beside a submission). Must not import `loading`, which validates these files and holds a submission to its
phase's switches, nor `phase_model` (a submission names its phase by slug alone) or `result_model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar
from urllib.parse import urlsplit

from pydantic import AfterValidator, ConfigDict, Strict, WithJsonSchema

from runner.errors import printable
from runner.tree.model import MAX_COMMENT, STRICT, SUPPLEMENTARY_SUFFIX, HttpsUrl, Url
from runner.tree.paths import companion_file
from runner.tree.schema_types import Bool, FileName, Sha256, ShownText, Slug, SubmittedImage, meta, refuse

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
    title: Annotated[ShownText, meta("A name for this submission on the leaderboard.", max_length=120)] = ""
    description: Annotated[ShownText, meta("What this submission does differently.", max_length=2000)] = ""
    comment: Annotated[ShownText, meta(
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
