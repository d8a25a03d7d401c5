"""What every command shares: the two consoles, the error for wrong arguments, and the tree as a runner
host keeps it (its state folder)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from runner.errors import ChallengeError
from runner.tree.records import Keys
from runner.tree.store import Store

ENV_STATE = "CHALLENGE_STATE_DIR"

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


class UsageError(ChallengeError):
    """A wrong argument; the message says which and what to do."""


def state_dir(root: Path) -> Path:
    """What this runner keeps between jobs: $CHALLENGE_STATE_DIR on a runner host, else ROOT/build."""
    return Path(os.environ.get(ENV_STATE) or root / "build").resolve()


def open_store(root: Path, *, keys: Keys = Keys(), copies: bool = True) -> Store:
    """The tree at `root`, with what a runner keeps of it in its state folder: the submissions' locks and
    the whole results its public records withhold (read unless `copies` is False)."""
    state = state_dir(root)
    return Store(root, keys=keys, locks=state / "locks", withheld=state / "withheld", copies=copies)
