"""A submission's details (title, description, links, supplementary PDF, method report) as leaderboards and
result pages show them, and the rules on its supplementary PDF (a method report's too).

Where they come from is argued in `submission_model.SubmissionDetails`: the result carries a copy, and only a
result written before the runner made that copy sends the site to its submission file. The
supplementary PDF's rules (a PDF, pinned by sha256, at most `SUPPLEMENTARY_MAX_BYTES`) live here
once: `challenge check` reads the committed file and the pull-request review the proposed one,
both through `supplementary_problem`. Its sha256 pin is checked as any companion file's: `pinned_problem`; a
predictions file's, and its size, through `predictions_problem`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from runner.tree.loading import load_report
from runner.tree.located import ModelError
from runner.tree.paths import companion_file
from runner.tree.result_model import Result
from runner.tree.schema_types import size_text
from runner.tree.store import Store
from runner.tree.submission_model import SubmissionDetails, details_of

SUPPLEMENTARY_MAX_BYTES = 20 * 1024**2
PDF_MAGIC = b"%PDF-"


def submission_details(store: Store, result: Result) -> SubmissionDetails | None:
    """The result's copy of its submission's details, else (an older result) its submission file's,
    else None (no file any more, or one that no longer reads)."""
    if result.details is not None:
        return result.details
    path = store.paths.submission_file(result.challenge, result.phase, result.participant, result.submission)
    if not path.is_file():
        return None
    try:
        submission = store.submission(path)
    except (ModelError, OSError, UnicodeDecodeError):
        return None
    return details_of(submission)


def supplementary_file(store: Store, result: Result, details: SubmissionDetails) -> Path | None:
    """The supplementary PDF committed beside the result's submission, if it is there as pinned."""
    if not details.supplementary:
        return None
    folder = store.paths.submissions(result.challenge) / result.phase / result.participant
    return _pinned(folder, details.supplementary, details.supplementary_sha256 or "")


def method_reports(store: Store, slug: str, phase: str) -> dict[str, Path]:
    """The method reports added to the phase's submissions after their evaluation (participant/id -> the PDF),
    each where its PDF is there as pinned; one listing of the phase's reports folder, not one look per result."""
    found = {}
    for path in sorted(store.paths.reports(slug, phase).glob("*/*.yml")):
        try:
            report = load_report(path)
        except (ModelError, OSError, UnicodeDecodeError):
            continue  # `challenge check` names what is wrong with it
        if pdf := _pinned(path.parent, report.file, report.sha256):
            found[f"{path.parent.name}/{path.stem}"] = pdf
    return found


def _pinned(folder: Path, name: str, sha256: str) -> Path | None:
    """The PDF `name` in `folder` if it is there as pinned by `sha256`, else None."""
    path = companion_file(folder, name)
    if path is None:
        return None
    data = path.read_bytes() if path.stat().st_size <= SUPPLEMENTARY_MAX_BYTES else b""
    return path if supplementary_problem(data, sha256) is None else None


@dataclass(frozen=True)
class Problem:
    """What is wrong with a supplementary file, and which field of `supplementary` says so."""

    field: str
    message: str


def supplementary_problem(data: bytes | None, pinned: str, *, name: str = "the supplementary file") -> Problem | None:
    """Why `data` is not the supplementary PDF the submission pins, or None."""
    if data is not None and len(data) > SUPPLEMENTARY_MAX_BYTES:
        return Problem("file", f"{name} is {len(data) / 1024**2:.1f} MiB; at most "
                               f"{SUPPLEMENTARY_MAX_BYTES // 1024**2} MiB are allowed")
    if data is not None and not data.startswith(PDF_MAGIC):
        return Problem("file", f"{name} is not a PDF file")
    return pinned_problem(data, pinned, name=name)


def predictions_problem(data: bytes | None, pinned: str, *, name: str, max_bytes: int,
                        size: int | None = None) -> Problem | None:
    """Why `data` is not the predictions file the submission pins, or None: larger than the phase's
    `max_bytes` (`size`: where the caller did not read a file that large), or not the one pinned."""
    size = len(data) if size is None and data is not None else size
    if size is not None and size > max_bytes:
        return Problem("file", f"{name} is {size:,} bytes; the phase allows {size_text(max_bytes)} "
                               "(predictions_max_size)")
    return pinned_problem(data, pinned, name=name)


def pinned_problem(data: bytes | None, pinned: str, *, name: str) -> Problem | None:
    """Why `data`, the file `name` committed beside a submission (None: not there), is not the one pinned
    by sha256 `pinned`, or None."""
    if data is None:
        return Problem("file", f"{name} was not found next to the submission (commit it in the same pull request)")
    digest = hashlib.sha256(data).hexdigest()
    if digest != pinned:
        return Problem("sha256", f"{name} has sha256 {digest}, not the pinned one; pin the file you committed "
                                 "(sha256sum FILE)")
    return None
