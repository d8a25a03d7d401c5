"""The Docker executor's limits hold on the real Docker engine."""

from __future__ import annotations

from pathlib import Path

import pytest

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
