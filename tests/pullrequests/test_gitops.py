"""Git steps of the workflows on real repositories: validate's diff, results pushed with retries, shards."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from runner.cli import main
from runner.cli.evaluate import in_shard
from runner.pullrequests import gitops
from runner.pullrequests.rules import Change
from tests.github_server import Link, git
from tests.helpers import CHALLENGE, PHASE, sub, text, write_result

pytestmark = pytest.mark.usefixtures("tree")  # every test on the built tree (`origin` clones it)


def clone(origin: Path, dest: Path) -> Path:
    git(dest.parent, "clone", "--quiet", str(origin), str(dest))
    return dest


def test_changes_reads_a_diff_in_githubs_words(tree, origin):
    for name in ("index.md", "submit.md"):
        (tree / "challenges" / CHALLENGE / name).write_text(f"# {name}\n")
    (tree / "mkdocs.yml").write_text("site_name: Challenges\n")
    git(tree, "add", "--all")
    git(tree, "commit", "--quiet", "-m", "pages")
    git(tree, "mv", f"challenges/{CHALLENGE}/submit.md", f"challenges/{CHALLENGE}/how-to-submit.md")
    git(tree, "rm", "--quiet", f"challenges/{CHALLENGE}/index.md")
    (tree / "README.md").write_text("new\n")
    (tree / "mkdocs.yml").write_text((tree / "mkdocs.yml").read_text() + "# edited\n")
    git(tree, "add", "--all")
    git(tree, "commit", "--quiet", "-m", "several")
    assert sorted(gitops.changes(tree, "HEAD^", "HEAD"), key=lambda c: c.path) == [
        Change("README.md", "added"),
        Change(f"challenges/{CHALLENGE}/how-to-submit.md", "renamed", f"challenges/{CHALLENGE}/submit.md"),
        Change(f"challenges/{CHALLENGE}/index.md", "removed"),
        Change("mkdocs.yml", "modified")]


def test_check_submission_judges_validates_merge_checkout(github, origin, tmp_path, capsys):
    github.open_pull("alice", {sub(): text(), "README.md": "hello\n"})
    checkout = clone(origin, tmp_path / "validate")
    gitops.checkout_pull(checkout, 1)
    verdict = tmp_path / "out" / "verdict.json"
    code = main(["--root", str(checkout), "check-submission", "--author", "alice", "--pr", "1",
                 "--output", str(verdict)])
    assert code == 1
    assert capsys.readouterr().out.splitlines() == [
        "README.md: this pull request adds it, but a submission pull request adds one file and changes nothing else",
        f"refused: {sub()} (submission)"]
    assert json.loads(verdict.read_text())["pull_request"] == 1


def test_check_submission_passes_a_clean_pull_request(github, origin, tmp_path, capsys):
    github.open_pull("alice", {sub(): text()})
    checkout = clone(origin, tmp_path / "validate")
    gitops.checkout_pull(checkout, 1)
    assert main(["--root", str(checkout), "check-submission", "--author", "alice"]) == 0
    assert capsys.readouterr().out.strip() == f"ok: {sub()} (submission)"


def test_check_submission_judges_a_listing_on_the_pull_requests_own_checkout(github, origin, tmp_path, capsys):
    from tests.pullrequests.test_rules import LISTING
    github.open_pull("carol", {"challenges/brats-2026/challenge.yml": LISTING})
    checkout = clone(origin, tmp_path / "validate")
    gitops.checkout_pull(checkout, 1)  # the new file is there already: not "listed already"
    assert main(["--root", str(checkout), "check-submission", "--author", "carol"]) == 0
    assert capsys.readouterr().out.strip() == "ok: challenges/brats-2026/challenge.yml (listing)"


def test_check_submission_never_reads_through_a_link(github, origin, tmp_path, capsys):
    github.open_pull("alice", {sub(): Link("/etc/passwd")})
    checkout = clone(origin, tmp_path / "validate")
    gitops.checkout_pull(checkout, 1)
    assert main(["--root", str(checkout), "check-submission", "--author", "alice"]) == 1
    assert f"{sub()}: must be a regular file, not a symbolic link or submodule" in capsys.readouterr().out


def test_a_file_name_that_is_not_utf8_is_refused_by_name(github, origin, tmp_path, capsys):
    """git hands names over as bytes; one that is not UTF-8 is named (its bytes escaped), never a traceback."""
    strange = f"challenges/{CHALLENGE}/submissions/{PHASE}/alice/v\udcff.yml"  # the byte 0xff, as git keeps it
    github.open_pull("alice", {strange: text()})
    checkout = clone(origin, tmp_path / "validate")
    gitops.checkout_pull(checkout, 1)
    verdict = tmp_path / "verdict.json"
    assert main(["--root", str(checkout), "check-submission", "--author", "alice", "--output", str(verdict)]) == 1
    line = (f"challenges/{CHALLENGE}/submissions/{PHASE}/alice/v\\xff.yml: this file name is not UTF-8 text; a pull "
            "request may name its files in UTF-8 only")
    assert capsys.readouterr().out.splitlines() == [line, "refused: no submission (unknown)"]
    assert json.loads(verdict.read_text())["problems"] == [line]


# --- results pushed ------------------------------------------------------------------------------------


def test_nothing_new_commits_nothing(tree, origin):
    assert gitops.commit_results(tree, message="Results") == gitops.Pushed(None)


def test_results_are_committed_and_pushed(tree, origin):
    write_result(tree, "alice", "v1")
    (tree / "stray.txt").write_text("not a result\n")
    pushed = gitops.commit_results(tree, message="Results of shard 1/1")
    assert pushed.tries == 1 and pushed.commit == git(origin, "rev-parse", "main")
    assert git(origin, "show", "--name-only", "--format=%s %an", "main").splitlines() == [
        "Results of shard 1/1 github-actions[bot]", "",
        f"challenges/{CHALLENGE}/results/{PHASE}/alice/v1.json"]


def test_the_submission_files_of_a_rerun_are_committed_with_its_results(tree, origin):
    """`challenge rerun` writes a submission file beside each result; both are committed, nothing else."""
    carried = tree / "challenges" / CHALLENGE / "submissions" / PHASE / "alice" / "v1.yml"
    carried.parent.mkdir(parents=True, exist_ok=True)
    carried.write_text(f"phase: {PHASE}\nimage: ghcr.io/alice/a@sha256:{'1' * 64}\n")
    (carried.parent / "notes.txt").write_text("not a submission\n")
    write_result(tree, "alice", "v1")
    gitops.commit_results(tree, message="Re-runs")
    assert sorted(git(origin, "show", "--name-only", "--format=", "main").split()) == [
        f"challenges/{CHALLENGE}/results/{PHASE}/alice/v1.json",
        f"challenges/{CHALLENGE}/submissions/{PHASE}/alice/v1.yml"]


def test_a_push_race_is_rebased_and_retried(tree, origin, tmp_path):
    other = clone(origin, tmp_path / "other-runner")
    write_result(other, "bob", "v1")
    write_result(tree, "alice", "v1")
    assert gitops.commit_results(other, message="shard 2/2").tries == 1
    waits, lines = [], []
    pushed = gitops.commit_results(tree, message="shard 1/2", sleep=waits.append, log=lines.append)
    assert pushed.tries == 2 and waits == [2.0]
    assert lines[0].startswith("results not pushed: git push failed: ") and lines[0].endswith("(try 2 of 5)")
    files = git(origin, "ls-tree", "-r", "--name-only", "main", f"challenges/{CHALLENGE}/results").splitlines()
    assert {f"challenges/{CHALLENGE}/results/{PHASE}/{who}/v1.json" for who in ("alice", "bob")} <= set(files)


def test_a_push_that_keeps_failing_gives_up_with_one_line(tree, origin):
    git(tree, "remote", "set-url", "origin", str(origin.parent / "gone.git"))
    write_result(tree, "alice", "v1")
    waits = []
    with pytest.raises(gitops.GitError, match=r"^results not pushed: git pull failed: fatal: '.*gone.git' does not "
                                              r"appear.*; gave up after 3 tries$"):
        gitops.commit_results(tree, message="Results", attempts=3, sleep=waits.append)
    assert waits == [2.0, 4.0]


def test_commit_results_step(tree, origin, capsys):
    write_result(tree, "alice", "v1")
    assert main(["--root", str(tree), "commit-results", "--message", "Results"]) == 0
    assert "results committed as" in capsys.readouterr().out
    assert main(["--root", str(tree), "commit-results"]) == 0
    assert capsys.readouterr().out.strip() == "no new results to commit"


def test_the_token_goes_to_git_through_the_environment_only():
    env = gitops.token_env("s3cret", "https://github.com/")
    assert env["GIT_CONFIG_KEY_0"] == "http.https://github.com/.extraheader"
    assert base64.b64decode(env["GIT_CONFIG_VALUE_0"].split()[-1]) == b"x-access-token:s3cret"
    assert gitops.token_env(None) == {}


# --- shards --------------------------------------------------------------------------------------------


def test_pending_plans_shards_for_the_workflow_matrix(tree, capsys):
    for who in ("alice", "bob", "carol"):
        path = tree / sub(who)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text())
    assert main(["--root", str(tree), "pending", "--shards", "2", "--format", "github"]) == 0
    assert capsys.readouterr().out == 'count=3\nshards=["1/2", "2/2"]\n'
    assert main(["--root", str(tree), "pending", "--shards", "5", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"count": 3, "shards": ["1/3", "2/3", "3/3"]}


def test_shards_split_submissions_exactly_once():
    keys = [f"{CHALLENGE}/{PHASE}/p{i}/v1" for i in range(60)]
    owners = [[s for s in range(1, 4) if in_shard(k, (s, 3))] for k in keys]
    assert all(len(o) == 1 for o in owners)
    assert {o[0] for o in owners} == {1, 2, 3}


def test_a_bad_shard_is_refused(tree, capsys):
    with pytest.raises(SystemExit):
        main(["--root", str(tree), "evaluate", "--pending", "--shard", "3/2"])
    assert "'3/2' is not I/N with 1 <= I <= N" in capsys.readouterr().err
