"""Git as the workflows use it: what a pull request changes, the commit that added a file, and
results committed and pushed with retries when another runner pushed first.

Everything is a `git` subprocess on a working tree; a failure is a GitError naming the command and
git's last line.
"""

from __future__ import annotations

import base64
import fnmatch
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.errors import ChallengeError, Retry
from runner.pullrequests.rules import Change
from runner.tree.paths import CHALLENGES, RESULT_PATH, SEALED_PATH, SUBMISSION_PATH

RESULTS = f":(glob){CHALLENGES}/*/results/**"
SUBMISSIONS = f":(glob){CHALLENGES}/*/submissions/**"
BOT = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")
STATUSES = {"A": "added", "M": "modified", "D": "removed", "R": "renamed", "C": "copied", "T": "changed"}


class GitError(ChallengeError):
    """A git command failed."""


def git(root: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    return _run(root, args, env).decode()


def _run(root: Path, args: tuple[str, ...], env: Mapping[str, str] | None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, check=False,
                          env={**os.environ, **(env or {})})
    if proc.returncode:
        raise GitError(f"git {_command(args)} failed: {_reason(proc.stderr.decode(errors='replace'), proc.returncode)}")
    return proc.stdout


def _command(args: tuple[str, ...]) -> str:
    rest = list(args)
    while rest and rest[0] == "-c":  # skip `-c name=value` settings
        rest = rest[2:]
    return rest[0] if rest else "git"


def _reason(stderr: str, code: int) -> str:
    """git's first fatal or error line (later ones are advice), else its last line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), lines[-1] if lines else f"exit {code}")


def changes(root: Path, base: str, head: str) -> tuple[Change, ...]:
    """The files `head` changes against `base`, in GitHub's words (added, modified, removed, renamed)."""
    # A name that is not UTF-8 is kept as it is (surrogate escapes) for the rules to refuse by name.
    fields = _run(root, ("diff", "--name-status", "-z", "-M", base, head), None).decode(
        "utf-8", "surrogateescape").split("\0")
    out, i = [], 0
    while i < len(fields) - 1:
        status = fields[i][0]
        if status in "RC":
            out.append(Change(fields[i + 2], STATUSES[status], fields[i + 1]))
            i += 3
        else:
            out.append(Change(fields[i + 1], STATUSES.get(status, "changed")))
            i += 2
    return tuple(out)


def show(root: Path, rev: str, path: str) -> bytes | None:
    """A regular file's bytes at `rev`; None for a symbolic link or a submodule, which are never read."""
    entry = git(root, "ls-tree", "-z", rev, "--", path).split(" ", 1)[0]
    if entry not in ("100644", "100755"):
        return None
    return _run(root, ("cat-file", "blob", f"{rev}:{path}"), None)


def added_in(root: Path, rev: str, pattern: str) -> list[str]:
    """Files that commit `rev` added, matching a glob such as challenges/*/results/*/*/*.json."""
    names = git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "--diff-filter=A", "--root", rev)
    return [n for n in names.split("\0") if n and fnmatch.fnmatch(n, pattern)]


def current_branch(root: Path) -> str:
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    if branch == "HEAD":
        raise GitError("HEAD is detached: pass --branch")
    return branch


def token_env(token: str | None, server_url: str = "https://github.com") -> dict[str, str]:
    """Git configuration, through the environment, that sends `token` to GitHub as actions/checkout
    does, so the token never sits in .git/config on the runner nor in a command line."""
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"http.{server_url.rstrip('/')}/.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"}


@dataclass(frozen=True)
class Pushed:
    commit: str | None  # None: there was nothing to commit
    tries: int = 0


def commit_results(root: Path, *, message: str, remote: str = "origin", branch: str | None = None,
                   attempts: int = 5, wait: float = 2.0, sleep: Callable[[float], None] = time.sleep,
                   env: Mapping[str, str] | None = None, log: Callable[[str], None] = lambda line: None) -> Pushed:
    """Commit every new or changed result file (and the submission files `challenge rerun` wrote for
    them) and push it. When the push is refused because another runner pushed first, rebase on theirs
    (results are distinct files, so this never conflicts) and try again, waiting a little longer each time."""
    # Only result records and their sealed parts: a temporary file a killed runner left is never committed.
    written = [p for p in git(root, "ls-files", "-z", "--others", "--modified", "--exclude-standard",
                              "--", RESULTS).split("\0") if RESULT_PATH.fullmatch(p) or SEALED_PATH.fullmatch(p)]
    # New submission files only: a rerun's, carried by an organizer; a merged submission is never changed here.
    written += [p for p in git(root, "ls-files", "-z", "--others", "--exclude-standard", "--",
                               SUBMISSIONS).split("\0") if SUBMISSION_PATH.fullmatch(p)]
    if not written:
        return Pushed(None)
    branch = branch or current_branch(root)
    git(root, "add", "--", *written)
    git(root, "-c", f"user.name={BOT[0]}", "-c", f"user.email={BOT[1]}", "commit", "--quiet", "-m", message,
        "--", *written)

    def push(attempt: int) -> Pushed:
        try:
            if attempt > 1:
                _rebase(root, remote, branch, env)
            git(root, "push", "--quiet", remote, f"HEAD:refs/heads/{branch}", env=env)
        except GitError as exc:  # most likely another runner pushed first: rebase on theirs and try again
            raise GitError(f"results not pushed: {exc}", transient=True) from None
        return Pushed(git(root, "rev-parse", "HEAD").strip(), attempt)

    retry = Retry(attempts=attempts, first=wait, sleep=sleep)
    return retry.call(push, log=log)


def _rebase(root: Path, remote: str, branch: str, env: Mapping[str, str] | None) -> None:
    try:
        git(root, "-c", f"user.name={BOT[0]}", "-c", f"user.email={BOT[1]}",
            "pull", "--rebase", "--quiet", remote, branch, env=env)
    except GitError:
        subprocess.run(["git", "rebase", "--abort"], cwd=root, capture_output=True, check=False)
        raise


def checkout_pull(root: Path, number: int, *, remote: str = "origin") -> None:
    """What actions/checkout gives a pull_request run: the pull request merged into its base, so
    HEAD^1 is the base and HEAD^2 the pull request's head."""
    git(root, "fetch", "--quiet", remote, f"refs/pull/{number}/head")
    git(root, "-c", f"user.name={BOT[0]}", "-c", f"user.email={BOT[1]}",
        "merge", "--quiet", "--no-ff", "--no-edit", "FETCH_HEAD")
