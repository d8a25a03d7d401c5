"""The GitHub workflows: actionlint and zizmor pass, and the security properties hold structurally."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


def test_the_four_workflows_exist():
    assert [p.name for p in FILES] == ["evaluate.yml", "publish.yml", "review.yml", "validate.yml"]


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
    for name in ("review.yml", "evaluate.yml", "publish.yml"):
        workflow = load(WORKFLOWS / name)
        assert not {"pull_request", "pull_request_target"} & set(workflow["on"]), name
        for step in steps(workflow):
            assert "head" not in str(step.get("with", {}).get("ref", "")), f"{name} checks out a PR head"


def test_review_follows_validate_and_merges_through_the_api():
    workflow = load(WORKFLOWS / "review.yml")
    assert workflow["on"]["workflow_run"]["workflows"] == ["validate"]
    runs = [s["run"] for s in steps(workflow) if "run" in s]
    assert any(r.startswith("challenge pr review ") and "--merge" in r for r in runs)


def test_evaluate_runs_on_gpu_runners_without_cancelling_queued_work():
    workflow = load(WORKFLOWS / "evaluate.yml")
    assert workflow["concurrency"]["cancel-in-progress"] is False
    assert workflow["on"]["push"]["paths"] == ["challenges/*/submissions/**"]
    assert "workflow_dispatch" in workflow["on"]
    job = workflow["jobs"]["evaluate"]
    assert job["runs-on"] == ["self-hosted", "gpu"]
    assert "fromJSON(needs.plan.outputs.shards)" in job["strategy"]["matrix"]["shard"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert [r.split()[1] for r in runs if r.startswith("challenge ")] == ["evaluate", "commit-results", "pr"]


def test_every_logic_step_is_one_challenge_call():
    for path in FILES:
        for step in steps(load(path)):
            run = step.get("run")
            if run is not None:
                assert "\n" not in run.strip() and (run.startswith("challenge ") or "pip install" in run), run


def test_publish_deploys_to_pages():
    uses = [s.get("uses", "").split("@")[0] for s in steps(load(WORKFLOWS / "publish.yml"))]
    assert {"actions/upload-pages-artifact", "actions/deploy-pages", "actions/configure-pages"} <= set(uses)
