"""A small server speaking the part of GitHub's REST API the runner uses, backed by a real bare git
repository, so the real PyGithub client and real git are exercised with no network.

Pull requests are commits under refs/pull/<n>/head of the bare repository, as on GitHub; merging
squashes one onto main there. A pull request the API opens (the workflow token's: its author is the
bot) has a branch of the repository as its head, written through git's data API (trees, commits,
refs) and followed when the branch moves. Issues and pull requests share their numbers, as on
GitHub. Comments and labels live in memory. `fail()` queues error answers (a rate limit, a 5xx) for
the next requests.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

OWNER_REPO = "org/challenges"
RUNNER_REPO = "org/challenges-runner"  # the private runner repository that evaluates it
BOT = {"login": "github-actions[bot]", "type": "Bot"}
IDENTITY = {"GIT_AUTHOR_NAME": "tester", "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "tester", "GIT_COMMITTER_EMAIL": "t@example.org"}


def git(cwd: Path, *args: str, stdin: bytes | None = None, env: dict | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=True,
                          env={**os.environ, **IDENTITY, **(env or {})}).stdout.decode().strip()


@dataclass(frozen=True)
class Link:
    """A symbolic link to put in a pull request instead of a file's text."""

    target: str


@dataclass
class Pull:
    number: int
    author: str
    head: str
    title: str
    state: str = "open"
    merged: bool = False
    merge_commit_sha: str | None = None
    labels: list[str] = field(default_factory=list)
    comments: list[dict] = field(default_factory=list)
    head_ref: str = "main"  # the head's branch
    head_repo: str | None = None  # OWNER/NAME of the head's repository; None: the author's fork
    body: str = ""


@dataclass
class Issue:
    number: int
    author: str
    title: str
    body: str
    state: str = "open"
    state_reason: str | None = None
    labels: list[str] = field(default_factory=list)
    comments: list[dict] = field(default_factory=list)


class FakeGitHub:
    def __init__(self, origin: Path):
        self.origin = origin
        self.pulls: dict[int, Pull] = {}
        self.issues: dict[int, Issue] = {}
        self.faults: list[tuple[str | None, int, dict, str]] = []
        self.requests: list[str] = []
        self.lock = threading.Lock()
        self.next_id = 1000
        self.ssh_keys: dict[str, list[str]] = {}  # login (lower case) -> the public SSH keys GitHub publishes
        self.dispatches: list[dict] = []  # repository_dispatch events received: repository, type, payload, token
        self.unsettled = 0  # GET /pulls/N answers mergeable null this many times, as GitHub does while it works it out
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- what tests set up ---------------------------------------------------------------------

    def open_pull(self, author: str, files: dict[str, str | Link | None], *, title: str = "Submission",
                  head_ref: str = "main", head_repo: str | None = None) -> Pull:
        """A fork's pull request: one commit on main writing (or, for None, deleting) `files`. `head_ref`
        and `head_repo` name the branch it comes from (by default the fork's main)."""
        number = self._number()
        head = self._commit("refs/heads/main", files, title, author)
        git(self.origin, "update-ref", f"refs/pull/{number}/head", head)
        self.pulls[number] = Pull(number, author, head, title, head_ref=head_ref, head_repo=head_repo)
        return self.pulls[number]

    def open_issue(self, author: str, body: str, *, title: str = "Submission",
                   labels: tuple[str, ...] = ("submission-form",)) -> Issue:
        """An issue, as the submission form opens one (with its label) unless told otherwise."""
        number = self._number()
        self.issues[number] = Issue(number, author, title, body, labels=list(labels))
        return self.issues[number]

    def _number(self) -> int:
        return len(self.pulls) + len(self.issues) + 1

    def thread(self, number: int) -> Pull | Issue:
        """The pull request or issue `number` (KeyError: neither)."""
        return self.pulls[number] if number in self.pulls else self.issues[number]

    def push(self, number: int, files: dict[str, str | None]) -> str:
        """Another commit on the pull request (the author pushed a fix)."""
        pull = self.pulls[number]
        pull.head = self._commit(pull.head, files, "fix", pull.author)
        git(self.origin, "update-ref", f"refs/pull/{number}/head", pull.head)
        return pull.head

    def fail(self, status: int, *, times: int = 1, headers: dict | None = None, message: str = "boom",
             method: str | None = None) -> None:
        """Answer the next `times` requests (of `method`, if given) with this error."""
        self.faults += [(method, status, headers or {}, message)] * times

    def fault(self, method: str) -> tuple[int, dict, str] | None:
        for i, (wanted, *answer) in enumerate(self.faults):
            if wanted in (None, method):
                del self.faults[i]
                return tuple(answer)
        return None

    def _commit(self, parent: str, files: dict[str, str | None], title: str, author: str) -> str:
        index = {"GIT_INDEX_FILE": str(self.origin / f"index-{threading.get_ident()}")}
        git(self.origin, "read-tree", parent, env=index)
        for path, text in files.items():
            if text is None:
                git(self.origin, "update-index", "--force-remove", path, env=index)
                continue
            mode, data = ("120000", text.target) if isinstance(text, Link) else ("100644", text)
            blob = git(self.origin, "hash-object", "-w", "--stdin", stdin=data.encode())
            git(self.origin, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=index)
        tree = git(self.origin, "write-tree", env=index)
        return git(self.origin, "commit-tree", tree, "-p", parent, "-m", title,
                   env={"GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": f"{author}@users.noreply.github.com"})

    # --- the API -----------------------------------------------------------------------------------

    def pull_json(self, pull: Pull) -> dict:
        api = f"{self.url}/repos/{OWNER_REPO}"
        kind = "Bot" if pull.author == BOT["login"] else "User"
        return {"number": pull.number, "title": pull.title, "body": pull.body, "state": pull.state,
                "merged": pull.merged, "merge_commit_sha": pull.merge_commit_sha, "url": f"{api}/pulls/{pull.number}",
                "html_url": f"https://github.example/{OWNER_REPO}/pull/{pull.number}",
                "issue_url": f"{api}/issues/{pull.number}", "user": {"login": pull.author, "type": kind},
                "head": {"sha": pull.head, "ref": pull.head_ref,
                         "repo": {"full_name": pull.head_repo or f"{pull.author}/challenges"}},
                "base": {"sha": git(self.origin, "rev-parse", "main"), "ref": "main",
                         "repo": {"full_name": OWNER_REPO}},
                "labels": [{"name": name} for name in pull.labels]}

    def files(self, pull: Pull) -> list[dict]:
        base = git(self.origin, "merge-base", "main", pull.head)
        out = []
        for line in git(self.origin, "diff", "--name-status", "-M", base, pull.head).splitlines():
            status, *paths = line.split("\t")
            entry = {"filename": paths[-1], "sha": "0" * 40, "additions": 1, "deletions": 0, "changes": 1,
                     "status": {"A": "added", "M": "modified", "D": "removed", "R": "renamed"}[status[0]]}
            if status[0] == "R":
                entry["previous_filename"] = paths[0]
            out.append(entry)
        return out

    def merge(self, pull: Pull, body: dict) -> tuple[int, dict]:
        if body.get("sha") and body["sha"] != pull.head:
            return 409, {"message": "Head branch was modified. Review and try the merge again."}
        if pull.state != "open":
            return 405, {"message": "Pull Request is not mergeable"}
        main = git(self.origin, "rev-parse", "main")
        tree = git(self.origin, "merge-tree", "--write-tree", main, pull.head).splitlines()[0]
        message = f"{body.get('commit_title', pull.title)}\n\n{body.get('commit_message', '')}"
        sha = git(self.origin, "commit-tree", tree, "-p", main, "-m", message,
                  env={"GIT_COMMITTER_NAME": "GitHub", "GIT_COMMITTER_EMAIL": "noreply@github.com"})
        git(self.origin, "update-ref", "refs/heads/main", sha, main)
        pull.state, pull.merged, pull.merge_commit_sha = "closed", True, sha
        return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}

    def comment_json(self, pull: Pull | Issue, comment: dict) -> dict:
        return {**comment, "url": f"{self.url}/repos/{OWNER_REPO}/issues/comments/{comment['id']}",
                "issue_url": f"{self.url}/repos/{OWNER_REPO}/issues/{pull.number}"}

    def issue_json(self, number: int) -> dict:
        """GET /issues/N: an issue, or a pull request as the issues API shows one (with `pull_request`)."""
        api = f"{self.url}/repos/{OWNER_REPO}"
        if number in self.pulls:
            return {**self.pull_json(self.pulls[number]), "url": f"{api}/issues/{number}",
                    "pull_request": {"url": f"{api}/pulls/{number}"}}
        issue = self.issues[number]
        return {"number": number, "title": issue.title, "body": issue.body, "state": issue.state,
                "state_reason": issue.state_reason, "user": {"login": issue.author, "type": "User"},
                "labels": [{"name": name} for name in issue.labels], "comments": len(issue.comments),
                "url": f"{api}/issues/{number}", "html_url": f"https://github.example/{OWNER_REPO}/issues/{number}"}

    def route(self, method: str, path: str, query: dict, body: dict, token: str | None = None) -> tuple[int, object]:
        prefix = f"/repos/{OWNER_REPO}"
        if (target := re.fullmatch(r"/repos/([^/]+/[^/]+)/dispatches", path)) and method == "POST":
            if target.group(1) != RUNNER_REPO or not token:  # as GitHub answers a token that cannot see it
                return 404, {"message": "Not Found"}
            self.dispatches.append({"repository": target.group(1), "event_type": body.get("event_type"),
                                    "client_payload": body.get("client_payload"), "token": token})
            return 204, None
        if (user := re.fullmatch(r"/users/([A-Za-z0-9-]+)(/keys)?", path)) and method == "GET":
            login, keys = user.group(1), self.ssh_keys.get(user.group(1).lower())
            if keys is None:
                return 404, {"message": "Not Found"}
            if user.group(2) is None:
                return 200, {"login": login, "type": "User", "url": f"{self.url}/users/{login}"}
            return 200, [{"id": i + 1, "key": key} for i, key in enumerate(keys)]
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}
        rest = path[len(prefix):]
        routes = [
            ("GET", r"", lambda: (200, {"full_name": OWNER_REPO, "url": f"{self.url}{prefix}",
                                        "default_branch": "main"})),
            ("GET", r"/pulls", lambda: (200, self._pulls(query))),
            ("POST", r"/pulls", lambda: self._open(body)),
            ("GET", r"/pulls/(\d+)", lambda n: (200, self._get_pull(self.pulls[n]))),
            ("GET", r"/issues/(\d+)", lambda n: (200, self.issue_json(n))),
            ("PATCH", r"/issues/(\d+)", lambda n: self._edit_issue(self.issues[n], body)),
            ("GET", r"/pulls/(\d+)/files", lambda n: (200, self.files(self.pulls[n]))),
            ("PUT", r"/pulls/(\d+)/merge", lambda n: self.merge(self.pulls[n], body)),
            ("GET", r"/issues/(\d+)/comments", lambda n: (200, [self.comment_json(self.thread(n), c)
                                                                 for c in self.thread(n).comments])),
            ("POST", r"/issues/(\d+)/comments", lambda n: self._comment(self.thread(n), body["body"])),
            ("PATCH", r"/issues/comments/(\d+)", lambda i: self._edit(i, body["body"])),
            ("GET", r"/issues/(\d+)/labels", lambda n: (200, [{"name": x} for x in self.thread(n).labels])),
            ("POST", r"/issues/(\d+)/labels", lambda n: self._label(self.thread(n), body)),
            ("DELETE", r"/issues/(\d+)/labels/(.+)", lambda n, name: self._unlabel(self.thread(n), name)),
            ("GET", r"/git/ref/(heads/.+)", lambda ref: self._ref(ref)),
            ("POST", r"/git/refs", lambda: self._create_ref(body)),
            ("PATCH", r"/git/refs/(heads/.+)", lambda ref: self._move_ref(ref, body)),
            ("POST", r"/git/trees", lambda: self._create_tree(body)),
            ("POST", r"/git/commits", lambda: self._create_commit(body)),
            ("GET", r"/git/commits/([0-9a-f]{40})", lambda sha: self._git_commit(sha)),
            ("GET", r"/git/trees/([0-9a-f]{40})", lambda sha: self._git_tree(sha)),
            ("GET", r"/git/blobs/([0-9a-f]{40})", lambda sha: self._git_blob(sha)),
            ("GET", r"/commits/([0-9a-f]{40})",
             lambda sha: (200, {"sha": sha, "url": f"{self.url}{prefix}/commits/{sha}"})),
            ("GET", r"/commits/([0-9a-f]{40})/pulls", lambda sha: (200, [self.pull_json(p) for p in self.pulls.values()
                                                                      if p.merge_commit_sha == sha])),
        ]
        for verb, pattern, handle in routes:
            if verb == method and (m := re.fullmatch(pattern, rest)):
                args = [int(a) if a.isdigit() else urllib.parse.unquote(a) for a in m.groups()]
                try:
                    return handle(*args)
                except KeyError:  # no such pull request or issue
                    return 404, {"message": "Not Found"}
        return 404, {"message": "Not Found"}

    def _comment(self, pull: Pull | Issue, text: str) -> tuple[int, dict]:
        self.next_id += 1
        pull.comments.append({"id": self.next_id, "body": text, "user": BOT})
        return 201, self.comment_json(pull, pull.comments[-1])

    def _edit(self, comment_id: int, text: str) -> tuple[int, dict]:
        for pull in [*self.pulls.values(), *self.issues.values()]:
            for comment in pull.comments:
                if comment["id"] == comment_id:
                    comment["body"] = text
                    return 200, self.comment_json(pull, comment)
        return 404, {"message": "Not Found"}

    def _label(self, pull: Pull | Issue, body) -> tuple[int, list]:
        names = body if isinstance(body, list) else body.get("labels", [])
        pull.labels += [n for n in names if n not in pull.labels]
        return 200, [{"name": n} for n in pull.labels]

    def _unlabel(self, pull: Pull | Issue, name: str) -> tuple[int, object]:
        if name not in pull.labels:
            return 404, {"message": "Label does not exist"}
        pull.labels.remove(name)
        return 200, [{"name": n} for n in pull.labels]

    def _get_pull(self, pull: Pull) -> dict:
        settled, self.unsettled = self.unsettled == 0, max(self.unsettled - 1, 0)
        return {**self.pull_json(pull), "mergeable": (pull.state == "open") if settled else None}

    def _edit_issue(self, issue: Issue, body: dict) -> tuple[int, dict]:
        issue.state = body.get("state", issue.state)
        issue.state_reason = body.get("state_reason", issue.state_reason)
        return 200, self.issue_json(issue.number)

    # --- pull requests from a branch of the repository, as the workflow token opens them ---------------

    def _pulls(self, query: dict) -> list[dict]:
        """GET /pulls: `state` (open by default, closed, all) and `head` (OWNER:BRANCH) filter."""
        state = query.get("state", ["open"])[0]
        head = query.get("head", [None])[0]
        found = [p for p in self.pulls.values() if state in ("all", p.state)]
        if head is not None:
            owner, _, branch = head.partition(":")
            found = [p for p in found if p.head_ref == branch
                     and (p.head_repo or f"{p.author}/challenges").split("/")[0] == owner]
        return [self.pull_json(p) for p in found]

    def _open(self, body: dict) -> tuple[int, dict]:
        """POST /pulls from a branch of this repository, by the token's bot."""
        owner = OWNER_REPO.split("/")[0]
        branch, base = body["head"].removeprefix(f"{owner}:"), body["base"]
        head = self._branch(branch)
        if head is None or self._branch(base) is None:
            return 422, {"message": "Validation Failed", "errors": [{"field": "head", "code": "invalid"}]}
        if any(p.state == "open" and p.head_ref == branch and p.head_repo == OWNER_REPO for p in self.pulls.values()):
            return 422, {"message": "Validation Failed",
                         "errors": [{"message": f"A pull request already exists for {owner}:{branch}."}]}
        number = self._number()
        git(self.origin, "update-ref", f"refs/pull/{number}/head", head)
        self.pulls[number] = Pull(number, BOT["login"], head, body.get("title", ""), head_ref=branch,
                                  head_repo=OWNER_REPO, body=body.get("body") or "")
        return 201, self.pull_json(self.pulls[number])

    def _branch(self, name: str) -> str | None:
        found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], cwd=self.origin,
                               capture_output=True, text=True)
        return found.stdout.strip() or None

    # --- git's own objects, as GitHub's git data API serves them ------------------------------------

    def _ref_json(self, ref: str, sha: str) -> dict:
        api = f"{self.url}/repos/{OWNER_REPO}"
        return {"ref": f"refs/{ref}", "url": f"{api}/git/refs/{ref}",
                "object": {"sha": sha, "type": "commit", "url": f"{api}/git/commits/{sha}"}}

    def _ref(self, ref: str) -> tuple[int, dict]:
        sha = self._branch(ref.removeprefix("heads/"))
        return (404, {"message": "Not Found"}) if sha is None else (200, self._ref_json(ref, sha))

    def _create_ref(self, body: dict) -> tuple[int, dict]:
        ref = body["ref"].removeprefix("refs/")
        if not ref.startswith("heads/") or self._object(body["sha"], "commit") is None:
            return 422, {"message": "Reference update failed"}
        if self._branch(ref.removeprefix("heads/")) is not None:
            return 422, {"message": "Reference already exists"}
        git(self.origin, "update-ref", f"refs/{ref}", body["sha"])
        return 201, self._ref_json(ref, body["sha"])

    def _move_ref(self, ref: str, body: dict) -> tuple[int, dict]:
        """PATCH a branch; an open pull request from it follows, as on GitHub."""
        old, sha = self._branch(ref.removeprefix("heads/")), body["sha"]
        if old is None or self._object(sha, "commit") is None:
            return 422, {"message": "Reference does not exist"}
        ahead = subprocess.run(["git", "merge-base", "--is-ancestor", old, sha], cwd=self.origin).returncode == 0
        if not ahead and not body.get("force"):
            return 422, {"message": "Update is not a fast forward"}
        git(self.origin, "update-ref", f"refs/{ref}", sha)
        for pull in self.pulls.values():
            if pull.state == "open" and pull.head_repo == OWNER_REPO and f"heads/{pull.head_ref}" == ref:
                pull.head = sha
                git(self.origin, "update-ref", f"refs/pull/{pull.number}/head", sha)
        return 200, self._ref_json(ref, sha)

    def _create_tree(self, body: dict) -> tuple[int, dict]:
        """POST /git/trees: `base_tree` with each entry written (inline `content`, or a blob's `sha`)."""
        index = {"GIT_INDEX_FILE": str(self.origin / f"index-{threading.get_ident()}")}
        if body.get("base_tree"):
            git(self.origin, "read-tree", body["base_tree"], env=index)
        else:
            git(self.origin, "read-tree", "--empty", env=index)
        for entry in body["tree"]:
            blob = entry.get("sha") or git(self.origin, "hash-object", "-w", "--stdin",
                                           stdin=entry["content"].encode())
            git(self.origin, "update-index", "--add", "--cacheinfo", f"{entry['mode']},{blob},{entry['path']}",
                env=index)
        return self._git_tree(git(self.origin, "write-tree", env=index))

    def _create_commit(self, body: dict) -> tuple[int, dict]:
        parents = [arg for sha in body["parents"] for arg in ("-p", sha)]
        sha = git(self.origin, "commit-tree", body["tree"], *parents, "-m", body["message"],
                  env={"GIT_AUTHOR_NAME": BOT["login"], "GIT_AUTHOR_EMAIL": "bot@users.noreply.github.com"})
        data = self._git_commit(sha)[1]
        return 201, {**data, "message": body["message"], "parents": [{"sha": p} for p in body["parents"]]}

    def _object(self, sha: str, kind: str) -> bytes | None:
        found = subprocess.run(["git", "cat-file", "-t", sha], cwd=self.origin, capture_output=True, text=True)
        if found.returncode or found.stdout.strip() != kind:
            return None
        return subprocess.run(["git", "cat-file", kind, sha], cwd=self.origin, capture_output=True, check=True).stdout

    def _git_commit(self, sha: str) -> tuple[int, dict]:
        if self._object(sha, "commit") is None:
            return 404, {"message": "Not Found"}
        tree = git(self.origin, "rev-parse", f"{sha}^{{tree}}")
        return 200, {"sha": sha, "url": f"{self.url}/repos/{OWNER_REPO}/git/commits/{sha}",
                     "tree": {"sha": tree, "url": f"{self.url}/repos/{OWNER_REPO}/git/trees/{tree}"}}

    def _git_tree(self, sha: str) -> tuple[int, dict]:
        if self._object(sha, "tree") is None:
            return 404, {"message": "Not Found"}
        entries = []
        for line in git(self.origin, "ls-tree", "-z", sha).split("\0"):
            if line:
                meta, name = line.split("\t", 1)
                mode, kind, oid = meta.split()
                entries.append({"path": name, "mode": mode, "type": kind, "sha": oid,
                                "url": f"{self.url}/repos/{OWNER_REPO}/git/{kind}s/{oid}"})
        return 200, {"sha": sha, "url": f"{self.url}/repos/{OWNER_REPO}/git/trees/{sha}", "tree": entries,
                     "truncated": False}

    def _git_blob(self, sha: str) -> tuple[int, dict]:
        data = self._object(sha, "blob")
        if data is None:
            return 404, {"message": "Not Found"}
        return 200, {"sha": sha, "size": len(data), "encoding": "base64", "content": base64.b64encode(data).decode(),
                     "url": f"{self.url}/repos/{OWNER_REPO}/git/blobs/{sha}"}


def _handler(hub: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet: tests read hub.requests instead
            pass

        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            with hub.lock:
                hub.requests.append(f"{self.command} {url.path}")
                if fault := hub.fault(self.command):
                    status, headers, message = fault
                    return self._answer(status, {"message": message}, headers)
                token = (self.headers.get("Authorization") or "").removeprefix("token ").removeprefix("Bearer ")
                status, data = hub.route(self.command, url.path, urllib.parse.parse_qs(url.query), body,
                                         token or None)
            self._answer(status, data)

        def _answer(self, status: int, data: object, headers: dict | None = None) -> None:
            payload = b"" if status == 204 else json.dumps(data).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", "Content-Length": str(len(payload)),
                                **(headers or {})}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Handler


# --- fixtures ---------------------------------------------------------------------------------------


def make_origin(repo: Path, origin: Path) -> None:
    """Make `repo` a git checkout of main whose origin is the bare repository `origin`."""
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "The challenges")
    git(repo.parent, "clone", "--quiet", "--bare", str(repo), str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "fetch", "--quiet", "origin")
    git(repo, "branch", "--quiet", "--set-upstream-to=origin/main", "main")


@pytest.fixture
def origin(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The bare origin of the test's tree: `tree` (built) where the test asks for it, else `repo` (the demo's copy)."""
    checkout = request.getfixturevalue("tree" if "tree" in request.fixturenames else "repo")
    make_origin(checkout, tmp_path / "origin.git")
    return tmp_path / "origin.git"


@pytest.fixture
def github(origin: Path):
    hub = FakeGitHub(origin)
    yield hub
    hub.close()


__all__ = ["BOT", "OWNER_REPO", "RUNNER_REPO", "FakeGitHub", "Issue", "Link", "git", "github", "make_origin",
           "origin"]
