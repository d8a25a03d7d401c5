"""The one error base every stage raises, the one retry policy, and how a participant's text is shown.

Knows nothing of challenges, Docker, git or GitHub, and imports nothing else of the package, so
every stage can use it. The CLI catches `ChallengeError` alone and prints it as one line.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Unicode's control, format, surrogate and unassigned characters (U+FFFF, which XML refuses), and its line
# and paragraph separators: invisible or line-breaking wherever they are shown.
HIDDEN = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})


class ChallengeError(Exception):
    """A problem the user reads as one line. `transient` marks one that the same call may not meet
    again (an engine hiccup, a rate limit, a push race): `Retry` tries those again; `retry_after`
    is how long the other side asked us to wait, when it said."""

    def __init__(self, message: str, *, transient: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.transient, self.retry_after = transient, retry_after


@dataclass(frozen=True)
class Retry:
    """How often and how long to wait between tries: doubling from `first`, or as long as the other
    side asked, never longer than `longest`. The waits go through `sleep`, so tests record them."""

    attempts: int = 3
    first: float = 2.0
    longest: float = 300.0
    sleep: Callable[[float], None] = time.sleep

    def wait(self, attempt: int, asked: float | None = None) -> float:
        if asked is not None:
            return min(max(asked, 1.0), self.longest)
        return min(self.first * 2.0 ** (attempt - 1), self.longest)

    def call(self, action: Callable[[int], T], *, log: Callable[[str], None] = lambda line: None) -> T:
        """`action(attempt)` until it returns. A transient ChallengeError is tried again after a wait,
        reported through `log`; any other error, or the last attempt's, is raised as it is, the
        last one saying how many tries were made."""
        for attempt in range(1, self.attempts + 1):
            try:
                return action(attempt)
            except ChallengeError as exc:
                if not exc.transient:
                    raise
                if attempt == self.attempts:
                    if self.attempts > 1:
                        exc.args = (f"{exc}; gave up after {self.attempts} tries",)
                    raise
                wait = self.wait(attempt, exc.retry_after)
                log(f"{exc}; retrying in {wait:.0f} s (try {attempt + 1} of {self.attempts})")
                self.sleep(wait)
        raise AssertionError("unreachable")


def printable(text: str, limit: int = 1000) -> str:
    """A participant's text (a file name a container wrote, a line it printed) as one line that any
    record, page, feed or terminal takes: bytes that were not UTF-8 (kept by Python as surrogate escapes),
    control and format characters (newlines, terminal escapes, bidi overrides), line separators and
    noncharacters shown as \\xNN or \\uNNNN, at most `limit` characters. A lone surrogate written to a
    result once made JSON that no reader accepted."""
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte stands for (JSON's \\ud800): shown by its code
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = CONTROL.sub(_escaped, text) if text.isascii() else "".join(
        _escaped(char) if unicodedata.category(char) in HIDDEN else char for char in text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _escaped(char: str | re.Match[str]) -> str:
    code = ord(char if isinstance(char, str) else char.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
