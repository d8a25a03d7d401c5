"""The `challenge` command: each GitHub workflow step and each organizer task is one call.

Each module here registers its subcommands (`register(subparsers)`) and keeps only argument
handling and printing; the work is done by the package's lower parts.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

import docker.errors

from .. import __version__
from ..evaluate import RunnerError
from ..located import ModelError
from ..sandbox import SandboxError
from ..sitebuild import BuildError
from . import demo, evaluate, leaderboard, rank, site, submissions, tree
from .common import UsageError, err

COMMANDS = (tree, evaluate, leaderboard, rank, site, demo, submissions)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except (ModelError, RunnerError, SandboxError, BuildError, UsageError, docker.errors.DockerException,
            OSError) as exc:
        if args.verbose:
            err.print(traceback.format_exc(), markup=False)
        err.print(f"error: {exc}", markup=False)
        return 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="challenge", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"challenge {__version__}")
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: current folder)")
    p.add_argument("-v", "--verbose", action="store_true", help="show full tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.register(sub)
    return p


if __name__ == "__main__":
    sys.exit(main())
