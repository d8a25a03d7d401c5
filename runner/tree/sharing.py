"""The same image submitted by different participants: a sign of shared work or of one person under
two accounts, which organizers decide on (an exclusion, a team), so it is flagged, never refused.

One image is one digest, whatever name it was pushed under (`ghcr.io/a/x@sha256:D` and
`docker.io/b/y@sha256:D` are the same bytes), or one local image ID; one image archive is one
sha256, wherever it is hosted (a participant can copy another's URL and hash, an archive encrypted
to the runner's key included). `challenge check` warns with `shared_images` over the submissions it
read; the pull-request review notes it with `same_image`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from runner.tree.located import ModelError
from runner.tree.references import DIGEST
from runner.tree.store import Store
from runner.tree.submission_model import Submission


def image_identity(ref: str) -> str | None:
    """The digest (or local image ID) that names the image's content; None for an unpinned ref."""
    found = DIGEST.search(ref)
    return found.group(0) if found else None


def algorithm_identity(submission: Submission) -> str | None:
    """What names the submitted algorithm's content: its image's digest, or its archive's sha256."""
    if submission.image_archive is not None:
        return f"image archive sha256:{submission.image_archive.sha256}"
    return image_identity(submission.image or "")


def shared_images(submissions: Iterable[Submission]) -> dict[str, list[Submission]]:
    """For each submission whose image another participant of the same challenge also submitted:
    its key -> those other participants' submissions (participants compared without case)."""
    groups: dict[tuple[str, str], list[Submission]] = defaultdict(list)
    for submission in submissions:
        identity = algorithm_identity(submission)
        if identity:
            groups[(submission.challenge, identity)].append(submission)
    shared: dict[str, list[Submission]] = {}
    for group in groups.values():
        for submission in group:
            others = [s for s in group if s.participant.lower() != submission.participant.lower()]
            if others:
                shared[submission.key] = others
    return shared


def same_image(store: Store, submission: Submission) -> list[Submission]:
    """Other participants' submissions in the submission's challenge that name the same image. Files
    not holding the digest's text are skipped unread, so a large challenge costs little."""
    identity = algorithm_identity(submission)
    if identity is None:
        return []
    needle = identity.rpartition("sha256:")[2].encode()
    found = [submission]
    for path in store.submission_paths(submission.challenge):
        if path.resolve() != submission.path.resolve() and needle in _bytes(path):
            try:
                found.append(store.submission(path))
            except ModelError:
                continue  # a broken file is `challenge check`'s to report
    return shared_images(found).get(submission.key, [])


def describe(others: list[Submission], root: Path) -> str:
    """'bob (challenges/c/submissions/p/bob/v1.yml), ...' for a note or a warning."""
    return ", ".join(f"{s.participant} ({_rel(s.path, root)})" for s in others)


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
