"""The two ways an evaluation fails: the participant's submission is wrong, or the image lacks a reader.

grand-challenge.org shows the participant the last non-empty line of stderr, so an uncaught
EvaluationError's message is exactly what they read: it names the case, what is wrong and what
was expected, on one short line. Organizer-side problems (a broken ground-truth folder, a missing
package) use other exception types so they never read as the participant's fault.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_LISTED = 5


class EvaluationError(Exception):
    """A problem with the submission; the message is the line the participant will read."""


class MissingReaderError(ImportError):
    """The evaluation image lacks the package needed to read a file format (an organizer error)."""


def listing(names: Iterable[str], *, limit: int = MAX_LISTED) -> str:
    """'a, b, c' with at most `limit` names, then '… and N more', so messages stay one short line."""
    items = list(names)
    shown = ", ".join(items[:limit])
    rest = len(items) - limit
    return f"{shown} and {rest} more" if rest > 0 else shown
