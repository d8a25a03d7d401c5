"""All GitHub access, through PyGithub: pull requests, their files and contents, comments, labels,
merges, and what the submission form needs (an issue, a branch holding one new file, a pull request
opened from it). Nothing else in the package talks to GitHub.

GitHub rate-limits (403 with X-RateLimit-Remaining: 0, 429, secondary limits) and has bad moments
(5xx, dropped connections); every call is retried with backoff, each retry is reported through
`log`, and the waits go through an injectable `sleep`. Other answers fail at once, as one line.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException, InputGitTreeElement, UnknownObjectException
from github.GitTreeElement import GitTreeElement
from github.PullRequest import PullRequest as GithubPull
from github.Repository import Repository

from runner.errors import ChallengeError, Retry
from runner.pullrequests.rules import Change

API_URL = "https://api.github.com"
ACTIONS_BOT = "github-actions[bot]"  # who GitHub names as the author of what a workflow's token opens
T = TypeVar("T")
REGULAR = ("100644", "100755")  # git's modes of a regular file (a link is 120000, a submodule 160000)


class GitHubError(ChallengeError):
    """GitHub refused a request, or kept failing after every retry."""


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str
    author: str
    head_sha: str
    head_ref: str  # the head's branch name
    head_repository: str  # OWNER/NAME of the head's repository (a fork's, or this one); "" once a fork is deleted
    base_ref: str
    open: bool
    merged: bool
    url: str


@dataclass(frozen=True)
class Issue:
    number: int
    author: str  # the login of whoever opened it, as GitHub says: never read from its text
    body: str
    open: bool
    labels: tuple[str, ...]
    pull_request: bool  # the issues API answers pull requests too
    url: str


class GitHub:
    """One repository on GitHub (or on a server speaking its REST API, such as the tests' fake)."""

    def __init__(self, repository: str, *, token: str | None, api_url: str = API_URL,
                 retry: Retry = Retry(attempts=5), log: Callable[[str], None] = lambda line: None,
                 pause: bool = True):
        # PyGithub's own retries would sleep out of our sight; ours report and can be shortened.
        # Its pauses between requests keep clear of GitHub's secondary rate limits.
        self._client = Github(auth=Auth.Token(token) if token else None, base_url=api_url.rstrip("/"),
                              retry=0, seconds_between_requests=0.25 if pause else None,
                              seconds_between_writes=1.0 if pause else None, lazy=True)
        self.repository, self.retry, self.log = repository, retry, log
        # Lazy: objects load on first use. No repository (""): a client for users only.
        self._repository = self._client.get_repo(repository) if repository else None
        self._trees: dict[str, dict[str, GitTreeElement]] = {}  # a git tree's entries, by the tree's SHA

    def _repo(self) -> Repository:
        if self._repository is None:
            raise GitHubError("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY")
        return self._repository

    # --- pull requests ---------------------------------------------------------------------------

    def pull(self, number: int) -> PullRequest:
        return self._call(f"reading pull request #{number}", lambda: _pull(self._repo().get_pull(number)))

    def pulls_from(self, branch: str) -> list[PullRequest]:
        """Every pull request, open or closed, that the workflow token opened from `branch` of this repository
        itself (never a fork's, nor one a collaborator pushed there: the form's run would force-move its branch)."""
        owner = self.repository.partition("/")[0]

        def read() -> list[PullRequest]:
            found = [_pull(p) for p in self._repo().get_pulls(state="all", head=f"{owner}:{branch}")]
            return [p for p in found if p.head_ref == branch and p.author == ACTIONS_BOT
                    and p.head_repository.lower() == self.repository.lower()]
        return self._call(f"finding the pull requests of branch {branch}", read)

    def settled(self, number: int, sha: str) -> PullRequest:
        """Pull request `number` once GitHub has caught up with its head at `sha`: it moves an open pull
        request's head after its branch, and works out whether it can be merged, in the background; a merge
        asked for before then may be refused. Waits by the retry policy."""
        def read() -> PullRequest:
            pr = self._repo().get_pull(number)
            if pr.head.sha != sha or pr.mergeable is None:
                raise GitHubError(f"pull request #{number} is not settled at {sha[:12]} yet", transient=True)
            return _pull(pr)
        return self._call(f"waiting for pull request #{number}", read)

    def open_pull(self, branch: str, *, base: str, title: str, body: str) -> PullRequest:
        """A pull request from `branch` of this repository into `base`."""
        return self._call(f"opening a pull request from {branch}", lambda: _pull(
            self._repo().create_pull(base=base, head=branch, title=title, body=body)))

    def changes(self, number: int) -> tuple[Change, ...]:
        def read() -> tuple[Change, ...]:
            return tuple(Change(f.filename, f.status, f.previous_filename)
                         for f in self._repo().get_pull(number).get_files())
        return self._call(f"listing the files of pull request #{number}", read)

    def content(self, path: str, ref: str) -> bytes | None:
        """A regular file's bytes at commit `ref`; None for a link, a submodule or nothing. Read through git's
        own objects (the commit's trees give each entry's mode), never the contents API, which follows a
        link that stays inside the repository and answers with the target's bytes as though they were
        the file's: a submission that is a link to another participant's would pass as its own."""
        def read() -> bytes | None:
            entry = self._entry(self._repo().get_git_commit(ref).tree.sha, PurePosixPath(path).parts)
            if entry is None or entry.type != "blob" or entry.mode not in REGULAR:
                return None
            return base64.b64decode(self._repo().get_git_blob(entry.sha).content)
        return self._call(f"reading {path} at {ref[:12]}", read)

    def _entry(self, tree: str, parts: tuple[str, ...]) -> GitTreeElement | None:
        """The tree entry at `parts` below `tree`, one folder at a time (a recursive tree of a large
        repository is truncated), each folder read once per client."""
        for depth, part in enumerate(parts):
            if tree not in self._trees:
                self._trees[tree] = {e.path: e for e in self._repo().get_git_tree(tree).tree}
            entry = self._trees[tree].get(part)
            if entry is None or depth == len(parts) - 1:
                return entry
            if entry.type != "tree":
                return None
            tree = entry.sha
        return None

    def commit_alone(self, branch: str, *, base: str, path: str, text: str, message: str) -> str:
        """Point `branch` at one new commit on `base`'s tip that adds `path` holding `text`, however the
        branch stood (absent: created; there: moved by force), so it holds that one change and nothing
        else. Through git's own objects, so a retry after a failure part way only writes them again.
        The new commit's SHA."""
        def write() -> str:
            repo = self._repo()
            tip = repo.get_git_commit(repo.get_git_ref(f"heads/{base}").object.sha)
            tree = repo.create_git_tree([InputGitTreeElement(path, "100644", "blob", content=text)], tip.tree)
            sha = repo.create_git_commit(message, tree, [tip]).sha
            ref = repo.get_git_ref(f"heads/{branch}")
            try:
                ref.object  # noqa: B018 (loads the lazy ref: GitHub answers 404 when there is no such branch)
            except UnknownObjectException:
                repo.create_git_ref(f"refs/heads/{branch}", sha)
            else:
                ref.edit(sha, force=True)
            return sha
        return self._call(f"committing {path} to branch {branch}", write)

    def merge(self, number: int, *, sha: str, title: str, message: str = "") -> str:
        """Squash-merge exactly commit `sha` (GitHub refuses if the head moved); the merge commit's SHA.
        Squashing makes the commit that adds a submission GitHub's, so its time cannot be forged."""
        def merge() -> str:
            status = self._repo().get_pull(number).merge(commit_title=title, commit_message=message,
                                                       merge_method="squash", sha=sha)
            if not status.merged:
                raise GitHubError(f"merging pull request #{number}: {status.message}")
            return status.sha
        return self._call(f"merging pull request #{number}", merge)

    def pulls_for_commit(self, sha: str) -> list[int]:
        return self._call(f"finding the pull request of commit {sha[:12]}",
                          lambda: [p.number for p in self._repo().get_commit(sha).get_pulls()])

    def ssh_keys(self, login: str) -> list[str]:
        """The public SSH keys GitHub publishes for `login` (github.com/<login>.keys), to seal what
        only that person may read."""
        return self._call(f"reading the SSH keys of {login}",
                          lambda: [key.key for key in self._client.get_user(login).get_keys()])

    def account_exists(self, login: str) -> bool:
        """Whether GitHub has a user or organization named `login`."""
        def read() -> bool:
            try:
                self._client.get_user(login, lazy=False)
            except UnknownObjectException:
                return False
            return True
        return self._call(f"looking up the GitHub account {login}", read)

    def dispatch(self, event: str, payload: dict[str, Any]) -> None:
        """A `repository_dispatch` of type `event` to this repository: what starts a workflow listening for
        it (the runner repository's evaluate)."""
        self._call(f"asking {self.repository} to {event}",
                   lambda: self._repo().create_repository_dispatch(event, payload))

    # --- issues, comments and labels ----------------------------------------------------------------

    def issue(self, number: int) -> Issue:
        def read() -> Issue:
            issue = self._repo().get_issue(number)
            return Issue(number=issue.number, author=issue.user.login, body=issue.body or "",
                         open=issue.state == "open", labels=tuple(lb.name for lb in issue.labels),
                         pull_request=issue.pull_request is not None, url=issue.html_url)
        return self._call(f"reading issue #{number}", read)

    def close_issue(self, number: int) -> None:
        self._call(f"closing issue #{number}",
                   lambda: self._repo().get_issue(number).edit(state="closed", state_reason="completed"))

    def upsert_comment(self, number: int, *, marker: str, body: str) -> str:
        """Post `body` once per marker: the bot's earlier comment holding the hidden marker is edited
        in place. Returns created, edited or unchanged."""
        text = f"{marker}\n{body}"

        def upsert() -> str:
            issue = self._repo().get_issue(number)
            mine = [c for c in issue.get_comments() if marker in c.body and c.user.type == "Bot"]
            if not mine:
                issue.create_comment(text)
                return "created"
            if mine[0].body == text:
                return "unchanged"
            mine[0].edit(text)
            return "edited"
        return self._call(f"commenting on #{number}", upsert)

    def set_labels(self, number: int, *, add: str, remove: tuple[str, ...] = ()) -> None:
        def label() -> None:
            issue = self._repo().get_issue(number)
            have = {lb.name for lb in issue.get_labels()}
            for name in sorted(have & set(remove) - {add}):
                issue.remove_from_labels(name)
            if add not in have:
                issue.add_to_labels(add)
        self._call(f"labelling #{number}", label)

    # --- retries ------------------------------------------------------------------------------------

    def _call(self, what: str, action: Callable[[], T]) -> T:
        """`action`, with rate limits and GitHub's bad moments retried by the package's one policy."""
        return self.retry.call(lambda attempt: _answered(what, action), log=self.log)


def _pull(pr: GithubPull) -> PullRequest:
    head_repository = pr.head.repo.full_name if pr.head.repo is not None else ""
    return PullRequest(number=pr.number, title=pr.title, author=pr.user.login, head_sha=pr.head.sha,
                       head_ref=pr.head.ref, head_repository=head_repository, base_ref=pr.base.ref,
                       open=pr.state == "open", merged=pr.merged, url=pr.html_url)


def _answered(what: str, action: Callable[[], T]) -> T:
    """`action`'s value, or its failure as a GitHubError: transient for rate limits, 5xx answers and
    dropped connections, carrying how long GitHub asked us to wait when it said."""
    try:
        return action()
    except GithubException as exc:
        if not _transient(exc):
            raise GitHubError(f"{what}: GitHub answered {exc.status}: {_message(exc)}") from None
        raise GitHubError(f"{what}: GitHub answered {exc.status} ({_message(exc)})", transient=True,
                          retry_after=_reset_in(exc)) from None
    except requests.RequestException as exc:
        raise GitHubError(f"{what}: GitHub did not answer ({type(exc).__name__})", transient=True) from None


def _header(exc: GithubException, name: str) -> str | None:
    return next((v for k, v in (exc.headers or {}).items() if k.lower() == name.lower()), None)


def _transient(exc: GithubException) -> bool:
    if exc.status >= 500 or exc.status == 429:
        return True
    limited = _header(exc, "X-RateLimit-Remaining") == "0" or _header(exc, "Retry-After") is not None
    return exc.status == 403 and limited


def _reset_in(exc: GithubException) -> float | None:
    """Seconds until GitHub says the limit lifts: Retry-After, else X-RateLimit-Reset (epoch seconds)."""
    if (after := _header(exc, "Retry-After")) and after.isdigit():
        return float(after)
    if (reset := _header(exc, "X-RateLimit-Reset")) and reset.isdigit():
        return float(reset) - time.time()
    return None


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    return str(data.get("message") or exc.data or "no message").strip()
