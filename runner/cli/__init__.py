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
    from collections.abc import Sequence

# subcommand -> the module here that registers it
COMMANDS = {
    "check": "tree", "evaluate": "evaluate", "leaderboard": "leaderboard", "rank": "rank", "report": "report",
    "build": "site", "serve": "site", "demo": "demo", "check-submission": "submissions",
    "pr": "submissions", "pending": "submissions", "commit-results": "submissions", "dry-run": "submissions",
    "dispatch": "submissions", "runner-repo": "submissions",
    "new": "new", "try": "tryout", "data": "data",
    "schema": "schema", "keys": "keys", "unseal": "keys", "reseal": "keys", "logs": "keys", "runner": "warm",
    "rerun": "reruns", "preserve": "reruns", "doctor": "doctor", "verify": "verify", "reproduce": "verify",
    "status": "status",
}
GLOBAL_OPTIONS_WITH_VALUE = ("--root",)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if socket := warm_client.target(argv, _command(argv)):  # before any heavy import: a warm runner does the work
        return warm_client.forward(socket, argv)
    return dispatch(parser(argv).parse_args(argv))


def dispatch(args: argparse.Namespace) -> int:
    """Run a parsed command; errors of ours (and the operating system's) as one line and status 1."""
    import traceback

    from runner.errors import ChallengeError

    from .common import err

    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except (ChallengeError, OSError) as exc:  # every error of ours, and the operating system's (disk full, ...)
        if args.verbose:
            err.print(traceback.format_exc(), markup=False)
        err.print(f"error: {exc}", markup=False)
        return 1


def parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    # Imported here: a job handed to a warm runner (`main`) pays for the interpreter and warm_client alone.
    import argparse
    import importlib
    from pathlib import Path

    from runner import __version__

    p = argparse.ArgumentParser(prog="challenge", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"challenge {__version__}")
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: current folder)")
    p.add_argument("-v", "--verbose", action="store_true", help="show full tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)
    wanted = _command(argv)
    for name in dict.fromkeys(COMMANDS[wanted] if wanted else m for m in COMMANDS.values()):
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return p


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
