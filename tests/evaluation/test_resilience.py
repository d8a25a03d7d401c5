"""Never lose a submission: a runner killed with SIGKILL at any point leaves no half-written result
and the next run completes every submission exactly once; four runners over one queue produce each
result exactly once."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.evaluation.examples import prepare_workspace
from runner.execution.docker_engine import LABEL, OWNER
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, write_submission

pytestmark = pytest.mark.docker
PARTICIPANTS = ("alice", "bob", "carol")


def start_runner(repo: Path, data_root: Path, base_image: str, cache: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "runner.cli", "--root", str(repo), "evaluate", "--pending", "--data-root",
           str(data_root), "--allow-local-images", "--base-image", base_image, "--cache-dir", str(cache)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def results(repo: Path) -> dict[str, dict]:
    folder = repo / "challenges" / CHALLENGE / "results" / PHASE
    return {str(p.relative_to(folder)): json.loads(p.read_text()) for p in folder.glob("*/*.json")}


def labelled(docker_client, runner: subprocess.Popen, image_id: str | None = None) -> list:
    """The runs of `runner` (not of other processes using the engine at the same time)."""
    found = docker_client.containers.list(filters={"label": [LABEL, f"{OWNER}={socket.gethostname()}:{runner.pid}"],
                                                   "status": "running"})
    return [c for c in found if image_id is None or c.image.id == image_id]


def wait_until(condition, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("the runner never reached the point where it was to be killed")


@pytest.fixture
def queue(repo, behave) -> Path:
    for participant in PARTICIPANTS:
        write_submission(repo, participant, "v1", behave("slow-threshold"))
    return repo


@pytest.mark.parametrize("point", ["algorithm", "evaluation", "after-first-result"])
def test_killed_runner_resumes_without_loss_or_duplicates(queue, data_root, base_image, docker_client, behave,
                                                          tmp_path, point):
    slow = behave("slow-threshold")
    runner = start_runner(queue, data_root, base_image, tmp_path / "cache1")
    try:
        if point == "algorithm":
            wait_until(lambda: labelled(docker_client, runner, slow))
        elif point == "evaluation":
            wait_until(lambda: any(c.image.id != slow and c.attrs["Config"]["Cmd"] != ["sleep", "infinity"]
                                   for c in labelled(docker_client, runner)))
        else:
            wait_until(lambda: results(queue))
        os.kill(runner.pid, signal.SIGKILL)
    finally:
        runner.wait()
    before = results(queue)
    assert all(r["status"] == "succeeded" for r in before.values())  # whole results only, never partial

    resumed = start_runner(queue, data_root, base_image, tmp_path / "cache2")
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    after = results(queue)
    assert sorted(after) == [f"{p}/v1.json" for p in PARTICIPANTS]
    assert all(r["status"] == "succeeded" for r in after.values())
    for name, result in before.items():  # what the killed runner finished was not evaluated again
        assert after[name]["started_at"] == result["started_at"]
    evaluated_again = re.findall(r"succeeded (\S+)", err)
    assert sorted(evaluated_again) == sorted(f"{CHALLENGE}/{PHASE}/{n.removesuffix('.json')}"
                                             for n in after if n not in before)
    # Nothing of either runner is left: not the killed one's runs, output areas and volumes, nor the resumed
    # one's. (Only these two are looked at: other processes may be using the engine at the same time.)
    runners = {str(runner.pid), str(resumed.pid)}
    containers = docker_client.containers.list(all=True, filters={"label": OWNER})
    assert [c for c in containers if c.labels[OWNER].split(":")[1] in runners] == []
    volumes = docker_client.volumes.list(filters={"label": OWNER})
    assert [v for v in volumes if (v.attrs.get("Labels") or {})[OWNER].split(":")[1] in runners] == []
    assert Store(queue).pending() == []


def test_four_runners_produce_each_result_exactly_once(repo, data_root, base_image, behave, tmp_path):
    image = behave("slow-threshold")
    keys = [f"{CHALLENGE}/{PHASE}/p{i}/v1" for i in range(8)]
    for i in range(8):
        write_submission(repo, f"p{i}", "v1", image)
    runners = [start_runner(repo, data_root, base_image, tmp_path / f"cache{i}") for i in range(4)]
    outputs = [r.communicate(timeout=600) for r in runners]
    assert [r.returncode for r in runners] == [0, 0, 0, 0], [
        [line for line in err.splitlines() if not line.startswith("busy")] for _, err in outputs]
    evaluated = [key for _, err in outputs for key in re.findall(r"succeeded (\S+)", err)]
    assert sorted(evaluated) == sorted(keys)  # each exactly once across all four runners
    assert len(results(repo)) == 8


def test_two_checkouts_runners_on_one_engine_leave_each_other_alone(data_root, base_image, behave, tmp_path):
    """Two runners in two checkouts (one GPU host serving two repositories, or one runner per GPU)
    evaluate submissions of the same names at the same time: neither removes the other's runs."""
    image = behave("slow-threshold")
    repos = [prepare_workspace(REPO, tmp_path / f"checkout{i}") for i in range(2)]
    for repo in repos:
        for participant in PARTICIPANTS:
            write_submission(repo, participant, "v1", image)
    runners = [start_runner(repo, data_root, base_image, tmp_path / f"cache{i}") for i, repo in enumerate(repos)]
    outputs = [r.communicate(timeout=600) for r in runners]
    assert [r.returncode for r in runners] == [0, 0], [err for _, err in outputs]
    for repo in repos:
        assert sorted(r["status"] for r in results(repo).values()) == ["succeeded"] * len(PARTICIPANTS)
