"""The client side of a warm runner (`challenge runner`): `challenge evaluate --runner SOCKET` sends
its arguments to the warm process and prints what comes back, with its exit status.

It imports nothing beyond the standard library, so handing a job over costs about an interpreter's
start: the point of a warm runner is that the imports, the engine's connection and the /output
keepers are paid for once. The protocol is one JSON line from the client ({"argv", "cwd", "env": its
CHALLENGE_* variables and GitHub's}), then
JSON lines from the runner ({"out": text}, {"err": text}), the last one {"exit": status}.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterable, Sequence

ENV_RUNNER = "CHALLENGE_RUNNER"
OPTION = "--runner"
FORWARDED = ("evaluate",)
GITHUB_VARIABLES = ("GITHUB_TOKEN", "GITHUB_API_URL")  # whose SSH keys results are sealed to


def forwarded(name: str) -> bool:
    """The variables a job takes to the warm runner: the runner's own, and GitHub's address and token."""
    return name.startswith("CHALLENGE_") or name in GITHUB_VARIABLES


def target(argv: Sequence[str], command: str | None) -> str | None:
    """The warm runner's socket the command `command` goes to: --runner PATH, else $CHALLENGE_RUNNER;
    None when it runs here (another command, --help, or no runner named)."""
    words = list(argv)
    if command not in FORWARDED or "-h" in words or "--help" in words:
        return None
    for i, word in enumerate(words):
        if word == OPTION and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(OPTION + "="):
            return word.partition("=")[2]
    return os.environ.get(ENV_RUNNER) or None


def forward(path: str, argv: Sequence[str]) -> int:
    """Run `argv` on the warm runner at `path`; its exit status (1, with one line, if it cannot)."""
    try:
        here = os.getcwd()
    except OSError as exc:
        sys.stderr.write(f"error: the current folder cannot be read ({exc}): run from the repository\n")
        return 1
    env = {name: value for name, value in os.environ.items() if forwarded(name)}
    request = {"argv": list(argv), "cwd": here, "env": env}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(path)
            connection.sendall(json.dumps(request).encode() + b"\n")
            return _relay(connection.makefile("r", encoding="utf-8"))
    except (FileNotFoundError, ConnectionRefusedError):
        sys.stderr.write(f"error: no warm runner answers at {path}: start one with `challenge runner --socket "
                         f"{path}`, or evaluate without {OPTION}\n")
    except OSError as exc:
        sys.stderr.write(f"error: the warm runner at {path} could not be reached: {exc}\n")
    return 1


def _relay(lines: Iterable[str]) -> int:
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:  # cut off mid-line: the runner died
            break
        if "exit" in message:
            return int(message["exit"])
        stream = sys.stdout if "out" in message else sys.stderr
        stream.write(message.get("out", message.get("err", "")))
        stream.flush()
    sys.stderr.write("error: the warm runner stopped before it finished; what it was evaluating stays pending "
                     "(evaluate it again once the runner is back)\n")
    return 1
