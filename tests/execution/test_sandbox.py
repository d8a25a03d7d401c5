"""The Docker executor's limits hold on the real Docker engine."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import pytest

from runner.execution.docker_engine import CHECKOUT, LABEL, OWNER
from runner.execution.sandbox import Mount, RunSpec

pytestmark = pytest.mark.docker


def run(engine, image, tmp_path: Path, **limits):
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    spec = RunSpec(image=image, mounts=(Mount(inputs, "/input"),), **limits)
    with engine.output_area(64 * 1024**2) as area:
        return engine.run(spec, area)


def test_unprivileged_user_without_capabilities(engine, behave, tmp_path):
    outcome = run(engine, behave("whoami"), tmp_path)
    assert outcome.ok, outcome.stderr_tail
    assert outcome.stdout_tail[-1] == "uid=65534 caps=0000000000000000 nnp=1 tmp_writable=True"


def test_network_is_unreachable(engine, behave, tmp_path):
    outcome = run(engine, behave("network"), tmp_path)
    assert outcome.exit_code == 1
    assert "Network is unreachable" in outcome.error_line(300)


def test_root_filesystem_is_read_only(engine, behave, tmp_path):
    outcome = run(engine, behave("write-root"), tmp_path)
    assert outcome.error_line(300) == "OSError: [Errno 30] Read-only file system: '/opt/owned'"


def test_time_limit_kills_the_container(engine, behave, tmp_path):
    outcome = run(engine, behave("sleep"), tmp_path, time_limit=2)
    assert outcome.timed_out and not outcome.ok
    assert 2 <= outcome.wall_time_s < 15
    assert outcome.error_line(2) == "The container exceeded its time limit of 2 s and was stopped"


def test_memory_limit_without_swap(engine, behave, tmp_path):
    outcome = run(engine, behave("memory"), tmp_path, memory=256 * 1024**2)
    assert outcome.oom_killed and outcome.exit_code == 137
    assert outcome.error_line(300) == "The container was killed as it exceeded its memory limit"


def test_error_line_is_last_nonempty_stderr_line(engine, behave, tmp_path):
    outcome = run(engine, behave("crash"), tmp_path)
    assert outcome.error_line(300) == "RuntimeError: model weights not found at /opt/model.pt"
    assert outcome.stdout_tail == ["starting"]


def test_only_a_dead_runners_containers_are_removed_by_job(engine, docker_client, base_image):
    """Two runners (two checkouts, two challenge repositories) may run same-named submissions on one
    engine: the one that starts a job removes what a dead runner left, never a live one's run."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    job = f"c/p/team-{uuid.uuid4().hex[:8]}/v1"
    owners = {"dead": f"{host}:{dead.pid}", "live": f"{host}:{os.getppid()}"}
    made = {who: docker_client.containers.create(base_image, ["true"], labels={OWNER: owner, LABEL: job})
            for who, owner in owners.items()}
    try:
        assert engine.remove_labelled(job) == 1
        left = {c.id for c in docker_client.containers.list(all=True, filters={"label": f"{LABEL}={job}"})}
        assert left == {made["live"].id}
    finally:
        for container in made.values():
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)


def test_runs_say_which_runner_and_checkout_started_them(engine, behave, tmp_path, docker_client):
    seen: list[dict[str, str]] = []
    with engine.output_area(64 * 1024**2) as area:
        spec = RunSpec(image=behave("sleep"), job=f"c/p/label-{uuid.uuid4().hex[:8]}/v1", time_limit=1)
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(engine.run, spec, area)
            while not seen and not running.done():
                seen = [c.labels for c in docker_client.containers.list(filters={"label": f"{LABEL}={spec.job}"})]
            running.result()
    assert seen and seen[0][OWNER] == f"{socket.gethostname()}:{os.getpid()}"
    assert seen[0][CHECKOUT] == os.getcwd()
