"""runner.github and the review/notify flow, with the real PyGithub client against the local REST server."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from runner.cli import main
from runner.errors import Retry
from runner.pullrequests.github import GitHub, GitHubError
from runner.pullrequests.review import LABELS, VERDICT_MARKER, _fenced, notify, review
from runner.tree.store import Store
from tests.github_server import OWNER_REPO, git
from tests.helpers import (
    CHALLENGE,
    NOW,
    PHASE,
    edit_yaml,
    phase_file,
    sub,
    text,
    write_result,
)


@pytest.fixture
def tree(tree: Path) -> Path:
    """The built tree, its phase allowing 3 submissions per day (comments say what is left), scores shown to 3
    decimal places."""
    edit_yaml(phase_file(tree), submissions_limit_per_user_per_period=3, submission_limit_period=1,
              score_decimal_places=3)
    return tree

pytestmark = pytest.mark.usefixtures("tree")  # every test on the built tree (`origin` clones it)


@pytest.fixture
def waits() -> list[float]:
    """The retry policy's sleeps, recorded instead of slept."""
    return []


@pytest.fixture
def lines() -> list[str]:
    return []


@pytest.fixture
def hub(github, waits, lines):
    return GitHub(OWNER_REPO, token="test", api_url=github.url, pause=False, log=lines.append,
                  retry=Retry(attempts=4, first=2.0, longest=60.0, sleep=waits.append))


def run_review(hub, tree, pull, *, merge=True, now=NOW):
    return review(hub, Store(tree), number=pull.number, head_sha=pull.head, base="main", now=now, merge=merge)


def test_a_valid_fork_submission_is_commented_labelled_and_merged(github, hub, tree, origin):
    pull = github.open_pull("alice", {sub(): text()})
    outcome = run_review(hub, tree, pull)
    assert outcome.comment == "created" and outcome.merged == github.pulls[1].merge_commit_sha
    assert pull.merged and pull.state == "closed" and pull.labels == [LABELS["valid"]]
    body = pull.comments[0]["body"]
    assert body.startswith(VERDICT_MARKER) and f"Submission `{sub()}` accepted" in body
    assert f"Merged as {outcome.merged[:12]}" in body
    # The participant learns what is left of the limit, this submission counted.
    assert ("Your submissions: `phase 'Final test' allows 3 submissions per day; 'alice' has 0 evaluated and 1 "
            "pending: 2 left`") in body
    assert git(origin, "show", f"main:{sub()}") == text().strip()
    assert git(origin, "log", "-1", "--format=%s", "main") == f"Submission {sub()} (#1)"
    assert "PUT /repos/org/challenges/pulls/1/merge" in github.requests


def test_comments_are_edited_in_place_and_labels_follow_the_verdict(github, hub, tree):
    pull = github.open_pull("alice", {sub(): text(image="ghcr.io/alice/algo:latest")})
    assert run_review(hub, tree, pull, merge=False).comment == "created"
    assert run_review(hub, tree, pull, merge=False).comment == "unchanged"
    assert pull.labels == [LABELS["invalid"]]
    github.push(pull.number, {sub(): text()})
    outcome = run_review(hub, tree, pull, merge=False)
    assert outcome.verdict.ok and outcome.comment == "edited"
    assert len(pull.comments) == 1 and "Valid; it will be merged" in pull.comments[0]["body"]
    assert pull.labels == [LABELS["valid"]] and not pull.merged


def test_a_participants_comment_with_the_marker_is_not_taken_over(github, hub, tree):
    pull = github.open_pull("alice", {sub(): text()})
    pull.comments.append({"id": 1, "body": f"{VERDICT_MARKER}\nlooks fine to me", "user": {"login": "alice",
                                                                                          "type": "User"}})
    assert run_review(hub, tree, pull, merge=False).comment == "created"
    assert pull.comments[0]["body"].endswith("looks fine to me") and len(pull.comments) == 2


def test_a_pull_request_that_moved_on_is_left_to_its_own_validation(github, hub, tree):
    pull = github.open_pull("alice", {sub(): text()})
    validated = pull.head
    github.push(pull.number, {sub(): text().replace("Threshold", "Better")})
    outcome = review(hub, Store(tree), number=1, head_sha=validated, base="main", now=NOW, merge=True)
    assert outcome.skipped.startswith("#1 moved on to ") and not pull.comments and not pull.merged


def test_a_refused_merge_is_reported_on_the_pull_request(github, hub, tree):
    pull = github.open_pull("alice", {sub(): text()})
    github.fail(409, method="PUT", message="Head branch was modified. Review and try the merge again.")
    outcome = run_review(hub, tree, pull)
    assert outcome.merged is None
    assert outcome.merge_error == ("merging pull request #1: GitHub answered 409: Head branch was modified. "
                                   "Review and try the merge again.")
    assert "is valid, but could not be merged" in pull.comments[0]["body"] and not pull.merged


# --- retries ---------------------------------------------------------------------------------------


def test_a_rate_limit_is_waited_out_and_reported(github, hub, waits, lines):
    pull = github.open_pull("alice", {sub(): text()})
    github.fail(403, message="API rate limit exceeded for installation ID 1.",
                headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 30)})
    assert hub.pull(1).head_sha == pull.head
    assert len(waits) == 1 and 25 <= waits[0] <= 31
    assert lines == [f"reading pull request #1: GitHub answered 403 (API rate limit exceeded for installation "
                         f"ID 1.); retrying in {waits[0]:.0f} s (try 2 of 4)"]


def test_server_errors_are_retried_with_growing_waits(github, hub, waits, lines):
    github.open_pull("alice", {sub(): text()})
    github.fail(502, times=2, message="Bad Gateway")
    assert [c.path for c in hub.changes(1)] == [sub()]
    assert waits == [2.0, 4.0]
    assert lines[1].endswith("GitHub answered 502 (Bad Gateway); retrying in 4 s (try 3 of 4)")


def test_retries_give_up_with_one_line(github, hub, waits, lines):
    github.open_pull("alice", {sub(): text()})
    github.fail(503, times=4, message="Service Unavailable")
    with pytest.raises(GitHubError) as caught:
        hub.upsert_comment(1, marker="<!-- m -->", body="hi")
    assert str(caught.value) == "commenting on #1: GitHub answered 503 (Service Unavailable); gave up after 4 tries"
    assert waits == [2.0, 4.0, 8.0]


def test_a_client_error_is_not_retried(github, hub, waits, lines):
    with pytest.raises(GitHubError, match=r"^reading pull request #7: GitHub answered 404: Not Found$"):
        hub.pull(7)
    assert waits == []


# --- results on the pull request ----------------------------------------------------------------------


def merged_with_result(github, hub, tree, *, status="succeeded"):
    pull = github.open_pull("alice", {sub(): text()})
    assert run_review(hub, tree, pull).merged
    git(tree, "pull", "--quiet", "--ff-only")
    write_result(tree, "alice", "v1", status=status)
    git(tree, "add", "--all")
    git(tree, "commit", "--quiet", "-m", "Results")
    return pull


def test_a_result_is_commented_on_its_pull_request_once(github, hub, tree):
    pull = merged_with_result(github, hub, tree)
    notices = notify(hub, Store(tree), commit="HEAD", now=NOW)
    assert [(n.pulls, n.comments) for n in notices] == [((1,), ("created",))]
    body = pull.comments[-1]["body"]
    assert f"<!-- challenge-bot:result:{CHALLENGE}/{PHASE}/alice/v1 -->" in body
    assert "succeeded" in body and "| Dice (mean) |" in body and "| 0.800 |" in body
    assert notify(hub, Store(tree), commit="HEAD", now=NOW)[0].comments == ("unchanged",)
    assert len(pull.comments) == 2  # the verdict and the result


def test_a_failed_result_shows_its_reason_as_code(github, hub, tree):
    pull = merged_with_result(github, hub, tree, status="failed")
    notify(hub, Store(tree), commit="HEAD", now=NOW)
    assert "failed\n\n```\nAlgorithm failed: boom\n```\n\nYour submissions: `phase 'Final test' allows 3 " \
           "submissions per day; 'alice' has 0 evaluated and 0 pending: 3 left`" in pull.comments[-1]["body"]
    assert _fenced("x ```` @everyone") == "`````\nx ```` @everyone\n`````"


def test_a_blind_phase_withholds_scores(github, hub, tree):
    pull = merged_with_result(github, hub, tree)
    edit_yaml(phase_file(tree), blind=True)
    notify(hub, Store(tree), commit="HEAD", now=NOW)
    body = pull.comments[-1]["body"]
    assert "succeeded, scores withheld" in body and "Scores withheld until 2027-12-31 23:59 UTC." in body
    assert "0.800" not in body


# --- the CLI steps ------------------------------------------------------------------------------------


def test_review_step_reads_only_the_number_from_the_verdict_artifact(github, tree, tmp_path, capsys):
    pull = github.open_pull("alice", {sub(): text()})
    verdict = tmp_path / "verdict.json"
    verdict.write_text(json.dumps({"pull_request": 1, "kind": "submission", "problems": []}))
    args = ["--root", str(tree), "pr", "review", "--verdict", str(verdict), "--head-sha", pull.head, "--merge",
            "--repo", OWNER_REPO, "--api-url", github.url]
    assert main(args) == 0 and pull.merged
    assert "#1: comment created, merged as" in capsys.readouterr().out
    verdict.write_text(json.dumps({"pull_request": "1; rm -rf /"}))
    assert main(args) == 1
    assert capsys.readouterr().err.strip() == f"error: {verdict}: pull_request is not a pull request number"


def test_notify_step_without_a_repository_is_one_line(tree, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    assert main(["--root", str(tree), "pr", "notify"]) == 1
    assert capsys.readouterr().err.strip() == "error: no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY"


def test_retry_never_waits_longer_than_its_cap():
    retry = Retry(first=2.0, longest=10.0)
    assert [retry.wait(n, None) for n in (1, 2, 3, 4)] == [2.0, 4.0, 8.0, 10.0]
    assert retry.wait(1, 3600.0) == 10.0 and retry.wait(1, -5.0) == 1.0


def test_a_logins_public_ssh_keys_are_read(github, hub):
    github.ssh_keys["alice"] = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample alice@laptop"]
    assert hub.ssh_keys("Alice") == github.ssh_keys["alice"]
    with pytest.raises(GitHubError, match=r"^reading the SSH keys of nobody: GitHub answered 404"):
        hub.ssh_keys("nobody")
