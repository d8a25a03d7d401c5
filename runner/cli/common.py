"""What every command shares: the two consoles and the error for wrong arguments."""

from __future__ import annotations

from rich.console import Console

from runner.errors import ChallengeError

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


class UsageError(ChallengeError):
    """A wrong argument; the message says which and what to do."""
