"""The GitHub workflows: actionlint and zizmor pass, and the security properties hold structurally."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from runner.cli import main
from runner.errors import ChallengeError
from runner.pullrequests.workflows import HOSTED, RUNNER_FILES, self_hosted_problems, write_runner_repository
from tests.helpers import REPO

WORKFLOWS = REPO / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
PINNED = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")


def tool(name: str) -> str:
    """The venv's copy first: the test extras install both linters there."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def steps(workflow: dict) -> list[dict]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def test_the_five_workflows_exist():
    assert [p.name for p in FILES] == ["dispatch.yml", "issue-submission.yml", "publish.yml", "review.yml",
                                       "validate.yml"]


def test_actionlint_passes():
    proc = subprocess.run([tool("actionlint"), "-no-color"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_passes():
    proc = subprocess.run([tool("zizmor"), "--offline", "--no-progress", str(WORKFLOWS)], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_permissions_are_declared_and_least(path):
    workflow = load(path)
    assert "permissions" in workflow, "declare top-level permissions"
    for name, job in workflow["jobs"].items():
        granted = job.get("permissions", workflow["permissions"])
        assert isinstance(granted, dict), f"{name}: permissions must be listed, not read-all/write-all"
        assert "write-all" not in str(granted)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_actions_are_pinned_by_full_sha(path):
    for step in steps(load(path)):
        if "uses" in step:
            assert PINNED.fullmatch(step["uses"]), f"{step['uses']} is not pinned by a 40-hex commit SHA"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_expression_inside_run_scripts(path):
    for step in steps(load(path)):
        assert "${{" not in step.get("run", ""), f"pass values through env: {step['run']}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_checkouts_keep_no_credentials(path):
    for step in steps(load(path)):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False


def test_validate_is_read_only():
    workflow = load(WORKFLOWS / "validate.yml")
    assert list(workflow["on"]) == ["pull_request"]
    assert workflow["permissions"] == {"contents": "read"}
    assert not any("permissions" in job for job in workflow["jobs"].values())


def test_privileged_workflows_never_check_out_the_pull_request():
    for name in ("review.yml", "dispatch.yml", "publish.yml", "issue-submission.yml"):
        workflow = load(WORKFLOWS / name)
        assert not {"pull_request", "pull_request_target"} & set(workflow["on"]), name
        for step in steps(workflow):
            assert "head" not in str(step.get("with", {}).get("ref", "")), f"{name} checks out a PR head"


def test_review_follows_validate_and_merges_through_the_api():
    workflow = load(WORKFLOWS / "review.yml")
    assert workflow["on"]["workflow_run"]["workflows"] == ["validate"]
    runs = [s["run"] for s in steps(workflow) if "run" in s]
    assert any(r.startswith("challenge pr review ") and "--merge" in r for r in runs)


def test_dispatch_asks_the_runner_repository_from_the_default_branch_with_its_own_token():
    workflow = load(WORKFLOWS / "dispatch.yml")
    assert set(workflow["on"]) == {"push", "workflow_run", "workflow_dispatch"}
    # The merges of review and of the submission form use the workflow token and start no push workflow.
    assert workflow["on"]["workflow_run"]["workflows"] == ["review", "issue-submission"]
    assert load(WORKFLOWS / "issue-submission.yml")["name"] == "issue-submission"
    [dispatch] = [s for s in steps(workflow) if s.get("run", "").startswith("challenge dispatch")]
    assert dispatch["env"] == {"GITHUB_TOKEN": "${{ secrets.RUNNER_DISPATCH_TOKEN }}",
                               "RUNNER_REPOSITORY": "${{ vars.RUNNER_REPOSITORY }}"}
    assert workflow["jobs"]["dispatch"]["permissions"] == {"contents": "read"}


def test_no_public_workflow_can_reach_a_self_hosted_runner():
    """For a pull_request GitHub runs the pull request's own workflow files: the public repository has
    no runner of its own, and no workflow of it names one."""
    assert self_hosted_problems(REPO) == []
    for path in FILES:
        for job in load(path)["jobs"].values():
            assert HOSTED.fullmatch(job["runs-on"]), job["runs-on"]
    assert not (REPO / ".github" / "actionlint.yaml").exists()  # no self-hosted labels to declare


def test_the_submission_form_hands_trusted_code_the_issues_number_alone():
    """The issue's text is hostile: the workflow passes its number, and the command reads the rest through
    the API. It runs from the default branch (an issue has no code of its own), one run per issue at a time."""
    source = (WORKFLOWS / "issue-submission.yml").read_text()
    workflow = load(WORKFLOWS / "issue-submission.yml")
    assert workflow["on"] == {"issues": {"types": ["opened", "edited"]}}
    assert workflow["permissions"] == {}
    assert workflow["concurrency"] == {"group": "issue-submission-${{ github.event.issue.number }}",
                                       "cancel-in-progress": False}
    job = workflow["jobs"]["submit"]
    assert job["if"] == "contains(github.event.issue.labels.*.name, 'submission-form')"
    assert job["permissions"] == {"contents": "write", "issues": "write", "pull-requests": "write"}
    assert job["timeout-minutes"] <= 10
    [step] = [s for s in job["steps"] if s.get("run", "").startswith("challenge ")]
    assert step["env"] == {"GITHUB_TOKEN": "${{ github.token }}", "ISSUE": "${{ github.event.issue.number }}"}
    assert step["run"] == 'challenge pr from-issue --issue "$ISSUE" --merge'
    assert not re.search(r"github\.event\.issue\.(?!number\b|labels\.\*\.name\b)", source)
    assert "secrets." not in source


def test_every_logic_step_is_one_challenge_call():
    for path in FILES:
        for step in steps(load(path)):
            run = step.get("run")
            if run is not None:
                assert "\n" not in run.strip() and (run.startswith("challenge ") or "pip install" in run), run


def test_publish_follows_every_push_to_main():
    workflow = load(WORKFLOWS / "publish.yml")
    assert workflow["on"] == {"push": {"branches": ["main"]}, "workflow_dispatch": None}


def test_publish_deploys_to_pages():
    uses = [s.get("uses", "").split("@")[0] for s in steps(load(WORKFLOWS / "publish.yml"))]
    assert {"actions/upload-pages-artifact", "actions/deploy-pages", "actions/configure-pages"} <= set(uses)


# --- the runner repository, as `challenge runner-repo` writes it -------------------------------------


@pytest.fixture(scope="module")
def runner_repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runner-repository")
    write_runner_repository(root, "org/challenges")
    subprocess.run(["git", "init", "--quiet", str(root)], check=True)  # actionlint looks for the repository root
    return root


def test_the_runner_repository_passes_actionlint_and_zizmor(runner_repository):
    linted = subprocess.run([tool("actionlint"), "-no-color"], cwd=runner_repository, capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    folder = runner_repository / ".github" / "workflows"
    audited = subprocess.run([tool("zizmor"), "--offline", "--no-progress", str(folder)], capture_output=True,
                             text=True)
    assert audited.returncode == 0, audited.stdout + audited.stderr


def test_the_runner_repository_starts_only_from_what_participants_cannot_write(runner_repository):
    """A dispatch from the public default branch, a schedule, or an organizer's hand: no pull request, no
    push of another repository, ever starts the job that runs on the GPU runner."""
    workflow = load(runner_repository / ".github" / "workflows" / "evaluate.yml")
    assert set(workflow["on"]) == {"repository_dispatch", "schedule", "workflow_dispatch"}
    assert workflow["on"]["repository_dispatch"]["types"] == ["evaluate"]
    assert workflow["permissions"] == {} and workflow["concurrency"]["cancel-in-progress"] is False
    job = workflow["jobs"]["evaluate"]
    assert job["runs-on"] == ["self-hosted", "gpu"] and job["environment"] == "gpu" and job["permissions"] == {}
    assert "fromJSON(needs.plan.outputs.shards)" in job["strategy"]["matrix"]["shard"]
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["repository"] == "org/challenges" and checkout["with"]["ref"] == "main"
    token = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/create-github-app-token@"))
    assert (token["with"]["owner"], token["with"]["repositories"]) == ("org", "challenges")  # the public one alone
    assert {k: v for k, v in token["with"].items() if k.startswith("permission-")} == {
        "permission-contents": "write", "permission-pull-requests": "write"}
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert [r.split()[1] for r in runs if r.startswith("challenge ")] == ["evaluate", "commit-results", "pr"]
    assert 'challenge pr notify --commit HEAD --repo "org/challenges"' in runs


@pytest.mark.parametrize("check", [test_permissions_are_declared_and_least, test_actions_are_pinned_by_full_sha,
                                   test_no_expression_inside_run_scripts, test_checkouts_keep_no_credentials])
def test_the_runner_repository_keeps_the_public_ones_rules(runner_repository, check):
    check(runner_repository / ".github" / "workflows" / "evaluate.yml")


def test_runner_repo_refuses_to_overwrite_and_to_take_a_name_that_is_no_repository(tmp_path):
    write_runner_repository(tmp_path, "org/challenges")
    with pytest.raises(ChallengeError, match="already exists"):
        write_runner_repository(tmp_path, "org/challenges")
    with pytest.raises(ChallengeError, match="is not OWNER/NAME"):
        write_runner_repository(tmp_path / "x", 'org/x"\n  evil: [')


# --- challenge check refuses a public workflow that names a self-hosted runner -------------------------


@pytest.mark.parametrize("runs_on, message", [
    ("[self-hosted, gpu]", "'self-hosted' is not a GitHub-hosted runner"),
    ("gpu", "'gpu' is not a GitHub-hosted runner"),
    ("[ubuntu-latest, gpu]", "'gpu' is not a GitHub-hosted runner"),
    ("ubuntu-gpu", "'ubuntu-gpu' is not a GitHub-hosted runner"),  # a self-hosted label may look like one
    ("windows-selfhosted.gpu", "'windows-selfhosted.gpu' is not a GitHub-hosted runner"),
    ("{group: gpus, labels: [linux]}", "names a runner group or labels, which may hold self-hosted runners"),
    ("${{ github.event.inputs.where }}", "cannot be checked (an expression)"),
])
def test_check_refuses_a_workflow_that_names_a_self_hosted_runner(repo, capsys, runs_on, message):
    (repo / ".github" / "workflows").mkdir(parents=True)
    path = repo / ".github" / "workflows" / "evil.yml"
    path.write_text(f"on: pull_request\njobs:\n  take:\n    runs-on: {runs_on}\n    steps:\n      - run: id\n")
    assert main(["--root", str(repo), "check"]) == 1
    printed = capsys.readouterr().out
    assert f"{path}:4: jobs.take.runs-on: " in printed and message in printed
    assert "evaluations run from the private runner repository (`challenge runner-repo`)" in printed
    assert main(["--root", str(repo), "check", str(path)]) == 1
    for label in ("ubuntu-24.04", "ubuntu-24.04-arm", "windows-2025", "macos-15-xlarge", "ubuntu-latest"):
        path.write_text(f"on: pull_request\njobs:\n  take:\n    runs-on: {label}\n    steps:\n      - run: id\n")
        assert main(["--root", str(repo), "check"]) == 0, label
    path.rename(path.with_suffix(".YML"))
    path.with_suffix(".YML").write_text("on: pull_request\njobs:\n  take:\n    runs-on: gpu\n")
    assert main(["--root", str(repo), "check"]) == 1


def test_an_installed_package_writes_the_runner_repository(tmp_path):
    """Workflows install the package (not a checkout): the templates travel in the wheel as package data."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path), str(REPO)], check=True, capture_output=True)
    [wheel] = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as packed:
        names = set(packed.namelist())
    assert {f"runner/pullrequests/runner_repository/{name}" for name in RUNNER_FILES.values()} <= names


def test_validate_runs_for_every_kind_of_file_the_rules_judge():
    from runner.tree.paths import IN_RESULTS, LISTING_PATH, REGISTRATION_PATH, REPORT_PATH, SUBMISSION_PATH
    globs = load(WORKFLOWS / "validate.yml")["on"]["pull_request"]["paths"]
    examples = ("challenges/c/submissions/p/alice/v1.yml", "challenges/c/reports/p/alice/v1.yml",
                "challenges/c/registrations/alice.yml", "challenges/c/challenge.yml",
                "challenges/c/results/p/alice/v1.json")  # results: to refuse them
    for pattern, example in zip((SUBMISSION_PATH, REPORT_PATH, REGISTRATION_PATH, LISTING_PATH, IN_RESULTS),
                                examples, strict=True):
        assert pattern.match(example)
        assert any(fnmatch.fnmatchcase(example, glob.replace("**", "*")) for glob in globs), example
