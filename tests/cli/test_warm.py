"""A warm runner (`challenge runner`) does what `challenge evaluate` does, for clients that hand it the
work; killed mid-job, it loses nothing (the submission stays pending and is evaluated once later);
a client that goes away does not stop its job."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.cli import warm_client
from tests.evaluation.test_resilience import labelled, wait_until
from tests.helpers import CHALLENGE, PHASE, nvml_readable, write_submission

pytestmark = pytest.mark.docker


@pytest.fixture
def socket_path(tmp_path) -> Path:
    return tmp_path / "runner.sock"


def start_runner(socket_path: Path) -> subprocess.Popen:
    runner = subprocess.Popen([sys.executable, "-m", "runner.cli", "runner", "--socket", str(socket_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: answers(socket_path) or runner.poll() is not None, seconds=30)
    assert runner.poll() is None, runner.stderr.read() if runner.stderr else ""
    return runner


def answers(path: Path) -> bool:
    """Whether a runner listens there (a dead one's socket file may still be there)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


@pytest.fixture
def warm(socket_path) -> Iterator[subprocess.Popen]:
    runner = start_runner(socket_path)
    yield runner
    runner.send_signal(signal.SIGTERM)
    runner.wait(timeout=60)


def client(repo: Path, data_root: Path, base_image: str, socket_path: Path, *extra: str,
           env: dict[str, str] | None = None) -> subprocess.Popen:
    """`challenge evaluate --pending` run from inside the repository, its data root given by variable."""
    cmd = [sys.executable, "-m", "runner.cli", "evaluate", "--pending", "--allow-local-images", "--base-image",
           base_image, "--runner", str(socket_path), *extra]
    return subprocess.Popen(cmd, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CHALLENGE_DATA_ROOT": str(data_root), **(env or {})})


def result(repo: Path, participant: str = "alice") -> dict | None:
    path = repo / "challenges" / CHALLENGE / "results" / PHASE / participant / "v1.json"
    return json.loads(path.read_text()) if path.is_file() else None


def test_a_warm_runner_evaluates_for_its_clients(repo, data_root, base_image, behave, socket_path, warm):
    write_submission(repo, "alice", "v1", behave("slow-threshold"))
    done = client(repo, data_root, base_image, socket_path)
    stdout, stderr = done.communicate(timeout=300)
    assert done.returncode == 0, stderr
    assert "succeeded" in stdout + stderr and (result(repo) or {}).get("status") == "succeeded"
    again = client(repo, data_root, base_image, socket_path)  # nothing pending: said here, as evaluate says it
    assert again.communicate(timeout=120)[0].strip() == "nothing to evaluate" and again.returncode == 0
    wrong = client(repo, data_root, base_image, socket_path, "--shard", "3/2")
    assert wrong.communicate(timeout=120)[1].strip().endswith("'3/2' is not I/N with 1 <= I <= N")
    assert wrong.returncode == 2


def test_no_warm_runner_is_one_line_and_status_1(repo, data_root, base_image, socket_path):
    done = client(repo, data_root, base_image, socket_path)
    _, stderr = done.communicate(timeout=60)
    assert done.returncode == 1
    assert stderr == (f"error: no warm runner answers at {socket_path}: start one with `challenge runner --socket "
                      f"{socket_path}`, or evaluate without {warm_client.OPTION}\n")


def test_a_job_given_gpus_nvml_cannot_read_is_one_line_at_its_start(repo, data_root, base_image, socket_path, warm):
    if nvml_readable():
        pytest.skip("this host has NVML")
    write_submission(repo, "alice", "v1", "ghcr.io/alice/algo@sha256:" + "a" * 64)
    job = client(repo, data_root, base_image, socket_path, env={"CHALLENGE_GPUS": "0"})
    _, stderr = job.communicate(timeout=60)
    assert job.returncode == 1 and stderr == "error: NVML cannot be read: NVML Shared Library Not Found\n"
    assert result(repo) is None and warm.poll() is None  # nothing was touched, and the runner serves on


def test_a_warm_runner_killed_mid_job_loses_nothing(repo, data_root, base_image, behave, socket_path, docker_client):
    slow = behave("slow-threshold")
    write_submission(repo, "alice", "v1", slow)
    runner = start_runner(socket_path)
    job = client(repo, data_root, base_image, socket_path)
    try:
        wait_until(lambda: labelled(docker_client, runner, slow), seconds=120)
        os.kill(runner.pid, signal.SIGKILL)
    finally:
        runner.wait()
    _, stderr = job.communicate(timeout=60)
    assert job.returncode == 1 and "the warm runner stopped before it finished" in stderr
    assert result(repo) is None  # nothing half-written: still pending
    restarted = start_runner(socket_path)
    try:
        done = client(repo, data_root, base_image, socket_path)
        _, stderr = done.communicate(timeout=300)
        assert done.returncode == 0 and "succeeded" in stderr, stderr
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(timeout=60)
    assert (result(repo) or {}).get("status") == "succeeded"
    assert not labelled(docker_client, runner)  # the dead runner's containers were swept


def test_a_client_that_goes_away_does_not_stop_its_job(repo, data_root, base_image, behave, socket_path, warm,
                                                       docker_client):
    slow = behave("slow-threshold")
    write_submission(repo, "alice", "v1", slow)
    job = client(repo, data_root, base_image, socket_path)
    wait_until(lambda: labelled(docker_client, warm, slow), seconds=120)
    job.kill()
    job.wait()
    wait_until(lambda: result(repo) is not None, seconds=120)
    time.sleep(0.5)
    assert (result(repo) or {}).get("status") == "succeeded"


def test_a_job_that_cannot_run_does_not_stop_the_runner(socket_path, warm, tmp_path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:  # a folder gone before the runner got to it
        connection.connect(str(socket_path))
        request = {"argv": ["evaluate", "--pending"], "cwd": str(tmp_path / "gone"), "env": {}}
        connection.sendall(json.dumps(request).encode() + b"\n")
        replies = [json.loads(line) for line in connection.makefile("r")]
    assert replies[-1] == {"exit": 1}
    assert replies[0]["err"].startswith("error: the warm runner could not run this job: FileNotFoundError")
    assert answers(socket_path) and warm.poll() is None
    second = subprocess.run([sys.executable, "-m", "runner.cli", "runner", "--socket", str(socket_path)],
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 1 and second.stderr.strip() == (
        f"error: --socket {socket_path}: a warm runner already listens there")
