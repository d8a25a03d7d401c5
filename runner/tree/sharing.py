"""The same image submitted by different participants: a sign of shared work or of one person under
two accounts, which organizers decide on (an exclusion, a team), so it is flagged, never refused.

One image is one digest, whatever name it was pushed under (`ghcr.io/a/x@sha256:D` and
`docker.io/b/y@sha256:D` are the same bytes), or one local image ID; one image archive is one
sha256, wherever it is hosted (a participant can copy another's URL and hash, an archive encrypted
to the runner's key included). `challenge check` warns with `shared_images` over the submissions it
read; the pull-request review notes it with `same_image`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

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


class Shared(NamedTuple):
    """Other participants' submissions of one image: the first NAMED of them, and how many there are."""

    named: list[Submission]
    total: int


NAMED = 5  # a baseline image submitted by a thousand participants is named five times per warning, not 999


def shared_images(submissions: Iterable[Submission]) -> dict[str, Shared]:
    """For each submission whose image another participant of the same challenge also submitted: its key ->
    those other participants' submissions (participants compared without case). Linear in the submissions:
    each group names its first few participants' submissions once."""
    groups: dict[tuple[str, str], list[Submission]] = defaultdict(list)
    for submission in submissions:
        identity = algorithm_identity(submission)
        if identity:
            groups[(submission.challenge, identity)].append(submission)
    shared: dict[str, Shared] = {}
    for group in groups.values():
        counts = Counter(s.participant.lower() for s in group)
        if len(counts) < 2:
            continue
        # The first NAMED submissions of each of the first NAMED + 1 participants: whoever is asking, at least
        # NAMED of those participants are others, so their first NAMED submissions are among these.
        first = set(list(counts)[:NAMED + 1])
        seen: Counter[str] = Counter()
        candidates = []
        for s in group:
            who = s.participant.lower()
            if who in first and seen[who] < NAMED:
                seen[who] += 1
                candidates.append(s)
        for submission in group:
            who = submission.participant.lower()
            named = [s for s in candidates if s.participant.lower() != who][:NAMED]
            shared[submission.key] = Shared(named, len(group) - counts[who])
    return shared


def same_image(store: Store, submission: Submission) -> Shared | None:
    """Other participants' submissions in the submission's challenge that name the same image. Files
    not holding the digest's text are skipped unread, so a large challenge costs little."""
    identity = algorithm_identity(submission)
    if identity is None:
        return None
    needle = identity.rpartition("sha256:")[2].encode()
    found = [submission]
    for path in store.submission_paths(submission.challenge):
        if path.resolve() != submission.path.resolve() and needle in _bytes(path):
            try:
                found.append(store.submission(path))
            except ModelError:
                continue  # a broken file is `challenge check`'s to report
    return shared_images(found).get(submission.key)


def describe(shared: Shared, root: Path) -> str:
    """'bob (challenges/c/submissions/p/bob/v1.yml), ... and 12 more' for a note or a warning."""
    named = ", ".join(f"{s.participant} ({_rel(s.path, root)})" for s in shared.named)
    more = shared.total - len(shared.named)
    return f"{named} and {more} more" if more else named


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
