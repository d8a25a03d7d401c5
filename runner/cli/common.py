"""What every command shares: the two consoles and how tables are shown on them, the error for wrong
arguments, and the tree as a runner host keeps it (its state folder)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from runner.errors import ChallengeError
from runner.tree.records import Keys
from runner.tree.store import Store

ENV_STATE = "CHALLENGE_STATE_DIR"

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
UNBOUNDED = 1_000_000  # columns: a table measured as wide as it wants to be


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


def print_table(table: Table, console: Console = out) -> None:
    """Every table the CLI prints. Not on a terminal (a pipe, a log file, CI) it is printed as wide as its
    values need, whatever the assumed width (80), so no value is cut; on a terminal too narrow for it,
    cells fold onto more lines rather than end in "…" (a score cut to "0.8…" reads as another score)."""
    if console.is_terminal:
        for column in table.columns:
            column.overflow = "fold"
    else:
        table.width = Measurement.get(console, console.options.update_width(UNBOUNDED), table).maximum
    console.print(table)

