"""The `challenge` command: each GitHub workflow step and each organizer task is one call.

Each module here registers its subcommands (`register(subparsers)`) and keeps only argument
handling and printing; the work is done by the package's lower parts. Only the module of the
command being run is imported (all of them for --help), so a workflow step that evaluates does
not pay for pandas, scipy and the site's templates.
"""

from __future__ import annotations

import sys

from . import warm_client

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (7 ms of a forwarded job's start)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

    from rich.console import Console



class Command:
    """A subcommand: the module here that registers it, and its line in `challenge --help`. A plain
    class: NamedTuple and dataclass would import typing or dataclasses into every forwarded job's start."""

    __slots__ = ("module", "summary")

    def __init__(self, module: str, summary: str) -> None:
        self.module = module
        self.summary = summary


# Each subcommand, declared once: `challenge --help` lists them from here without importing a module.
COMMANDS = {
    "check": Command("tree", "validate the challenge tree, or one file or folder"),
    "evaluate": Command("evaluate", "evaluate submissions in the sandbox and write their results"),
    "leaderboard": Command("leaderboard", "print a phase's leaderboard"),
    "rank": Command("rank", "rank per-case results from a CSV file (task, case, algorithm, value)"),
    "report": Command("report", "write a challenge's results report (HTML and Markdown with figures)"),
    "build": Command("site", "generate pages, then build the static site"),
    "serve": Command("site", "serve the site, regenerating pages as you edit"),
    "demo": Command("demo", "evaluate the example challenges for real, build and serve the site"),
    "check-submission": Command("submissions", "judge a pull request's diff by the submission rules"),
    "pr": Command("submissions", "act on pull requests through the GitHub API"),
    "pending": Command("submissions", "count pending submissions and plan evaluation shards"),
    "commit-results": Command("submissions", "commit new result files and push them, retrying on races"),
    "dry-run": Command("submissions", "walk one pull request through every workflow step against a local GitHub API "
                                      "server, with the real Docker engine"),
    "dispatch": Command("submissions", "ask the runner repository to evaluate, when something is pending"),
    "runner-repo": Command("submissions", "write the private runner repository that evaluates this one's submissions "
                                          "on self-hosted GPU runners"),
    "new": Command("new", "write a new challenge folder that passes `challenge check` and runs in `challenge try`"),
    "run": Command("run", "run a published result's algorithm on your own cases, in the phase's sandbox"),
    "try": Command("tryout", "run a submission locally as the runner would, on public sample data; writes no result"),
    "data": Command("data", "download a challenge's data sets, or seal gated links for participants"),
    "schema": Command("schema", "print the JSON Schema of one file kind, or of all of them by kind"),
    "import-phase": Command("import_phase", "write a phase file from grand-challenge.org's export of a phase, naming "
                                            "each option it leaves out and why"),
    "keys": Command("keys", "the site's publish key; this runner's signing key"),
    "unseal": Command("keys", "print a result whole, its sealed part opened with your key"),
    "reseal": Command("keys", "seal every sealed result again to the challenges' recipients now"),
    "logs": Command("keys", "print a debugging phase's full logs of your submission, opened with your SSH key"),
    "runner": Command("warm", "a warm runner process that `challenge evaluate --runner SOCKET` hands its work to "
                              "(saves each job the runner's start)"),
    "rerun": Command("reruns", "run a phase's algorithms again on another phase's hidden data, as new results there "
                               "(living benchmarks, retraining the best)"),
    "preserve": Command("reruns", "save the algorithm images of a phase's succeeded results as archives on this "
                                  "runner, so a later rerun still finds them"),
    "doctor": Command("doctor", "check this runner host: the engine, GPUs, hidden data and its permissions, disk, keys "
                                "and registries (exit 1 if a check fails)"),
    "verify": Command("verify", "check every result's runner signature and provenance"),
    "reproduce": Command("verify", "evaluate a result's submission again on this runner and compare every metric with "
                                   "the recorded one"),
    "status": Command("status", "whether a phase takes submissions now, and how many a participant has left"),
}
GLOBAL_OPTIONS_WITH_VALUE = ("--root",)
VERBOSE_HELP = "show full tracebacks on errors"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if socket := warm_client.target(argv, _command(argv)):  # before any heavy import: a warm runner does the work
        return warm_client.forward(socket, argv)
    return dispatch(parser(argv).parse_args(argv))


def dispatch(args: argparse.Namespace) -> int:
    """Run a parsed command; errors of ours (and the operating system's) as one line and status 1."""
    from .common import err

    return guarded(lambda: args.func(args) or 0, verbose=args.verbose, err=err)


def guarded(run: Callable[[], int], *, verbose: bool, err: Console) -> int:
    """`run`'s status; errors of ours (and the operating system's) as one line on `err` and status 1."""
    import traceback

    from runner.errors import ChallengeError

    try:
        return run()
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except (ChallengeError, OSError) as exc:  # every error of ours, and the operating system's (disk full, ...)
        if verbose:
            err.print(traceback.format_exc(), markup=False)
        err.print(f"error: {exc}", markup=False)
        return 1


def parser(argv: Sequence[str] = (), *, parser_class: type[argparse.ArgumentParser] | None = None,
           ) -> argparse.ArgumentParser:
    """The `challenge` command's parser, with `argv`'s command's options; `parser_class` (its subcommands'
    too) writes usage and errors where a warm runner's job wants them."""
    # Imported here: a job handed to a warm runner (`main`) pays for the interpreter and warm_client alone.
    import argparse
    import importlib
    from pathlib import Path

    from runner import __version__

    base = parser_class or argparse.ArgumentParser

    class CommandParser(base):  # type: ignore[misc,valid-type]  # a base chosen at run time (a warm job's)
        """A command's parser (and, as argparse makes them of their parent's class, its subcommands'): it takes
        `--verbose` too, so `challenge build --verbose` holds as `challenge --verbose build` does (SUPPRESS:
        left out, it leaves the flag as `challenge` set it)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)

    p = base(prog="challenge", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"challenge {__version__}")
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: current folder)")
    p.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=CommandParser)
    if wanted := _command(argv):
        importlib.import_module(f"{__name__}.{COMMANDS[wanted].module}").register(sub)
    else:  # `challenge --help`, or no command: the list alone, without importing any command's module
        for name, command in COMMANDS.items():
            sub.add_parser(name, help=command.summary)
    return p


def summary(command: str) -> str:
    """A subcommand's line in `challenge --help`, for the module that registers it."""
    return COMMANDS[command].summary


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand in argv (its first positional word), or None when there is none yet."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in GLOBAL_OPTIONS_WITH_VALUE:
            skip = True
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


if __name__ == "__main__":
    sys.exit(main())
