"""`challenge dry-run`: a fork's submission walked through validate, review (comment, label, merge),
evaluate (real Docker), commit, notify and publish, against the local REST server."""

from __future__ import annotations

import json

import pytest

from runner.cli import main
from runner.tree.sealing import identities, new_identity, unseal
from tests.github_server import OWNER_REPO, RUNNER_REPO, git
from tests.helpers import CHALLENGE, PHASE, REPO, edit_yaml, phase_file

pytestmark = pytest.mark.docker


@pytest.fixture(scope="session")
def baseline_image(engine, base_image) -> str:
    return engine.build(REPO / "challenges" / CHALLENGE / "examples" / "baseline", name="challenge-test/baseline",
                        base=base_image)


def dry_run(github, origin, tmp_path, data_root, base_image) -> tuple[int, str]:
    return main(["--root", str(tmp_path), "dry-run", "--pr", "1", "--remote", str(origin), "--api-url", github.url,
                 "--repo", OWNER_REPO, "--data-root", str(data_root), "--base-image", base_image,
                 "--workspace", str(tmp_path / "dry-run")])


def test_a_fork_submission_goes_all_the_way(github, origin, tmp_path, data_root, base_image, baseline_image,
                                            capsys):
    path = f"challenges/{CHALLENGE}/submissions/{PHASE}/alice/v1.yml"
    pull = github.open_pull("alice", {path: f"phase: {PHASE}\nimage: {baseline_image}\ntitle: Baseline\n"})
    workspace = tmp_path / "dry-run"
    code = dry_run(github, origin, tmp_path, data_root, base_image)
    printed = capsys.readouterr().out
    assert code == 0, printed
    steps = [line for line in printed.splitlines() if line.startswith(("== ", "$ challenge "))]
    assert [s.split()[1] if s.startswith("==") else s.split()[2] for s in steps] == [
        "validate.yml:", "check-submission", "review.yml:", "pr", "dispatch.yml:", "dispatch",
        "runner-repository/evaluate.yml:", "pending", "runner-repository/evaluate.yml:", "evaluate",
        "commit-results", "pr", "publish.yml:", "build"]
    assert f"ok: {path} (submission)" in printed
    # The public default branch asked the runner repository; its runner host evaluated a checkout of its own.
    assert github.dispatches == [{"repository": RUNNER_REPO, "event_type": "evaluate",
                                  "token": "dry-run-dispatch-token",
                                  "client_payload": {"pending": 1, "commit": git(origin, "rev-parse", "main~1")}}]
    assert (workspace / "runner-host" / "build" / "logs").is_dir()
    assert not (workspace / "main" / "build" / "logs").exists()

    assert pull.merged and pull.labels == ["submission: valid"]
    verdict, result = (c["body"] for c in pull.comments)
    assert "accepted" in verdict and "Merged as" in verdict
    assert f"<!-- challenge-bot:result:{CHALLENGE}/{PHASE}/alice/v1 -->" in result
    assert "succeeded" in result and "| Dice (mean) |" in result

    stored = json.loads(git(origin, "show", f"main:challenges/{CHALLENGE}/results/{PHASE}/alice/v1.json"))
    assert stored["status"] == "succeeded" and 0 < stored["metrics"]["aggregates"]["dice"]["mean"] <= 1
    assert git(origin, "log", "-1", "--format=%s", "main") == "Results of shard 1/1 (dry run)"
    assert (workspace / "main" / "build" / "site" / "index.html").is_file()


def test_a_blind_phases_scores_stay_sealed_all_the_way(github, origin, repo, tmp_path, data_root, base_image,
                                                       baseline_image, capsys):
    """The same walk in a blind phase: the scores are committed sealed only, the comment withholds
    them, the site built without the key shows none, and the organizer's key opens them."""
    organizer, publish = new_identity(), new_identity()
    edit_yaml(repo / "challenges" / CHALLENGE / "challenge.yml", recipients=[organizer[1]], publish_key=publish[1])
    edit_yaml(phase_file(repo), blind=True)
    git(repo, "commit", "--quiet", "-am", "A blind phase, sealed for the organizers")
    git(repo, "push", "--quiet", "origin", "main")
    path = f"challenges/{CHALLENGE}/submissions/{PHASE}/alice/v1.yml"
    pull = github.open_pull("alice", {path: f"phase: {PHASE}\nimage: {baseline_image}\ntitle: Baseline\n"})
    code = dry_run(github, origin, tmp_path, data_root, base_image)
    assert code == 0, capsys.readouterr().out
    assert "scores withheld" in pull.comments[-1]["body"]
    record = f"challenges/{CHALLENGE}/results/{PHASE}/alice/v1"
    sealed = git(origin, "show", f"main:{record}.sealed.age").encode()
    whole = json.loads(unseal(sealed, identities([organizer[0]]), where=record))
    score = repr(whole["metrics"]["aggregates"]["dice"]["mean"])
    assert json.loads(git(origin, "show", f"main:{record}.json"))["metrics"] is None
    assert score not in git(origin, "log", "-p", "--all")
    site = tmp_path / "dry-run" / "main" / "build" / "site"
    assert not [p for p in site.rglob("*") if p.is_file() and score in p.read_text(errors="replace")]


def test_a_pull_requests_own_workflow_never_reaches_the_runner_host(github, origin, tmp_path, data_root, base_image,
                                                                    baseline_image, capsys):
    """GitHub runs a pull request's own workflow files for `pull_request`: this one wants the GPU runner. The
    public repository has no runner for it, `check` names it, the rules refuse the pull request, nothing is
    dispatched, and the runner host's checkout of main never holds it."""
    take = ".github/workflows/take.yml"
    pull = github.open_pull("mallory", {
        f"challenges/{CHALLENGE}/submissions/{PHASE}/mallory/v1.yml": f"phase: {PHASE}\nimage: {baseline_image}\n",
        take: "on: pull_request\njobs:\n  take:\n    runs-on: [self-hosted, gpu]\n    steps:\n"
              "      - run: cat /srv/challenge-data/*/*/ground-truth/*\n"})
    code = dry_run(github, origin, tmp_path, data_root, base_image)
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"{take}: this pull request adds it, but a submission pull request adds one file" in printed
    assert not pull.merged and github.dispatches == [] and "nothing pending: no evaluation asked for" in printed
    assert not (tmp_path / "dry-run" / "runner-host").exists()
    merged_view = tmp_path / "dry-run" / "validate"  # the pull request merged into main, as validate sees it
    assert main(["--root", str(merged_view), "check"]) == 1
    assert f"{merged_view / take}:4: jobs.take.runs-on: 'self-hosted' is not a GitHub-hosted runner" in (
        capsys.readouterr().out)
