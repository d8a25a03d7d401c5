"""A small server speaking the part of GitHub's REST API the runner uses, backed by a real bare git
repository, so the real PyGithub client and real git are exercised with no network.

Pull requests are commits under refs/pull/<n>/head of the bare repository, as on GitHub; merging
squashes one onto main there. Comments and labels live in memory. `fail()` queues error answers
(a rate limit, a 5xx) for the next requests.
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


class FakeGitHub:
    def __init__(self, origin: Path):
        self.origin = origin
        self.pulls: dict[int, Pull] = {}
        self.faults: list[tuple[str | None, int, dict, str]] = []
        self.requests: list[str] = []
        self.lock = threading.Lock()
        self.next_id = 1000
        self.ssh_keys: dict[str, list[str]] = {}  # login (lower case) -> the public SSH keys GitHub publishes
        self.dispatches: list[dict] = []  # repository_dispatch events received: repository, type, payload, token
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- what tests set up ---------------------------------------------------------------------

    def open_pull(self, author: str, files: dict[str, str | Link | None], *, title: str = "Submission") -> Pull:
        """A fork's pull request: one commit on main writing (or, for None, deleting) `files`."""
        number = len(self.pulls) + 1
        head = self._commit("refs/heads/main", files, title, author)
        git(self.origin, "update-ref", f"refs/pull/{number}/head", head)
        self.pulls[number] = Pull(number, author, head, title)
        return self.pulls[number]

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
        return {"number": pull.number, "title": pull.title, "state": pull.state, "merged": pull.merged,
                "merge_commit_sha": pull.merge_commit_sha, "url": f"{api}/pulls/{pull.number}",
                "html_url": f"https://github.example/{OWNER_REPO}/pull/{pull.number}",
                "issue_url": f"{api}/issues/{pull.number}", "user": {"login": pull.author, "type": "User"},
                "head": {"sha": pull.head, "ref": "main", "repo": {"full_name": f"{pull.author}/challenges"}},
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

    def comment_json(self, pull: Pull, comment: dict) -> dict:
        return {**comment, "url": f"{self.url}/repos/{OWNER_REPO}/issues/comments/{comment['id']}",
                "issue_url": f"{self.url}/repos/{OWNER_REPO}/issues/{pull.number}"}

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
            ("GET", r"/pulls/(\d+)", lambda n: (200, self.pull_json(self.pulls[n]))),
            ("GET", r"/issues/(\d+)", lambda n: (200, {**self.pull_json(self.pulls[n]),
                                                       "url": f"{self.url}{prefix}/issues/{n}"})),
            ("GET", r"/pulls/(\d+)/files", lambda n: (200, self.files(self.pulls[n]))),
            ("PUT", r"/pulls/(\d+)/merge", lambda n: self.merge(self.pulls[n], body)),
            ("GET", r"/issues/(\d+)/comments", lambda n: (200, [self.comment_json(self.pulls[n], c)
                                                                 for c in self.pulls[n].comments])),
            ("POST", r"/issues/(\d+)/comments", lambda n: self._comment(self.pulls[n], body["body"])),
            ("PATCH", r"/issues/comments/(\d+)", lambda i: self._edit(i, body["body"])),
            ("GET", r"/issues/(\d+)/labels", lambda n: (200, [{"name": x} for x in self.pulls[n].labels])),
            ("POST", r"/issues/(\d+)/labels", lambda n: self._label(self.pulls[n], body)),
            ("DELETE", r"/issues/(\d+)/labels/(.+)", lambda n, name: self._unlabel(self.pulls[n], name)),
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
                except KeyError:  # no such pull request
                    return 404, {"message": "Not Found"}
        return 404, {"message": "Not Found"}

    def _comment(self, pull: Pull, text: str) -> tuple[int, dict]:
        self.next_id += 1
        pull.comments.append({"id": self.next_id, "body": text, "user": BOT})
        return 201, self.comment_json(pull, pull.comments[-1])

    def _edit(self, comment_id: int, text: str) -> tuple[int, dict]:
        for pull in self.pulls.values():
            for comment in pull.comments:
                if comment["id"] == comment_id:
                    comment["body"] = text
                    return 200, self.comment_json(pull, comment)
        return 404, {"message": "Not Found"}

    def _label(self, pull: Pull, body) -> tuple[int, list]:
        names = body if isinstance(body, list) else body.get("labels", [])
        pull.labels += [n for n in names if n not in pull.labels]
        return 200, [{"name": n} for n in pull.labels]

    def _unlabel(self, pull: Pull, name: str) -> tuple[int, object]:
        if name not in pull.labels:
            return 404, {"message": "Label does not exist"}
        pull.labels.remove(name)
        return 200, [{"name": n} for n in pull.labels]

    # --- git's own objects, as GitHub's git data API serves them ------------------------------------

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
def origin(repo: Path, tmp_path: Path) -> Path:
    make_origin(repo, tmp_path / "origin.git")
    return tmp_path / "origin.git"


@pytest.fixture
def github(origin: Path):
    hub = FakeGitHub(origin)
    yield hub
    hub.close()


__all__ = ["OWNER_REPO", "RUNNER_REPO", "FakeGitHub", "Link", "git", "github", "make_origin", "origin"]
