"""What every command shares: the two consoles and how tables and long steps are shown on them, the
error for wrong arguments, what a command runs with (`Job`: its variables, folder and consoles; and the
settings they make), and the tree as a runner host keeps it (its state folder)."""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from runner.errors import ChallengeError
from runner.settings import Settings, variable
from runner.tree.policy import took
from runner.tree.records import Keys
from runner.tree.signing import SigningKey
from runner.tree.store import Store
from runner.tree.verification import Verifier

if TYPE_CHECKING:
    from runner.pullrequests.github import GitHub

# What each command module's register() is given: `add_subparsers()`'s result. argparse's class is generic
# only in its stubs, so the alias is a string (never evaluated at run time).
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
UNBOUNDED = 1_000_000  # columns: a table measured as wide as it wants to be


class UsageError(ChallengeError):
    """A wrong argument; the message says which and what to do."""


@dataclass(frozen=True, kw_only=True)
class Job:
    """What one command runs with besides its options: its variables, its working folder and its two
    consoles. A command run here gets this process's (`Job.here`); a warm runner's job, its client's."""

    env: Mapping[str, str]
    cwd: Path
    out: Console
    err: Console

    @classmethod
    def here(cls) -> Job:
        return cls(env=dict(os.environ), cwd=Path.cwd(), out=out, err=err)

    def settings(self, args: argparse.Namespace | None = None) -> Settings:
        """The runner's settings: `args`' options, else this job's variables, else the defaults."""
        return Settings.of(args, env=self.env, cwd=self.cwd)


def settings_here(args: argparse.Namespace | None = None) -> Settings:
    """The settings of a command run in this process: its options, else this process's variables."""
    return Job.here().settings(args)


def github(settings: Settings, repository: str | None, api_url: str | None, **options: Any) -> GitHub:
    """A client of `repository`, else the settings' (GITHUB_REPOSITORY), at `api_url`, else the settings' API,
    else GitHub's own, with the settings' token: in a workflow step, what GitHub Actions sets."""
    from runner.pullrequests.github import API_URL, GitHub  # PyGithub only for the commands that talk to GitHub

    repository = repository or settings.github_repository
    if not repository:
        raise UsageError(f"no repository: pass --repo OWNER/NAME or set {variable('github_repository')}")
    return GitHub(repository, token=settings.github_token, api_url=api_url or settings.github_api_url or API_URL,
                  **options)


def open_store(root: Path, settings: Settings, *, keys: Keys = Keys(), copies: bool = True,
               signer: SigningKey | None = None, verifier: Verifier | None = None) -> Store:
    """The tree at `root`, with what a runner keeps of it in its state folder: the submissions' locks and
    the whole results its public records withhold (read unless `copies` is False); results it writes are
    signed with `signer` (`keys.runner_store`); with a `verifier`, it reads only what verifies."""
    state = settings.state(root)
    return Store(root, keys=keys, locks=state / "locks", withheld=state / "withheld", copies=copies, signer=signer,
                 verifier=verifier)


def port(text: str) -> int:
    """argparse type: a TCP port to serve on."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 1 to 65535, not {text!r}")
    return int(text)


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


@contextlib.contextmanager
def stage(label: str, console: Console = err) -> Iterator[None]:
    """A long step: a spinner with the time elapsed on a terminal, a plain line when not (logs keep
    no spinner); then "<label> done in N s", or "<label> failed after N s" when it raised."""
    start = time.monotonic()
    ended = "failed after"
    try:
        with _spinner(label, console):
            yield
        ended = "done in"
    finally:
        console.print(f"{label} {ended} {took(time.monotonic() - start)}", markup=False)


def progress_bar(console: Console) -> Progress:
    """A progress bar on `console` (stderr): the runner's, the check's; gone once done (the lines printed
    above it stay)."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


def _spinner(label: str, console: Console) -> contextlib.AbstractContextManager[Progress | None]:
    if not console.is_terminal:
        console.print(f"{label}...", markup=False)
        return contextlib.nullcontext()
    spinner = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn(),
                       console=console, transient=True)  # gone once done: the final line says how long
    spinner.add_task(label, total=None)
    return spinner

