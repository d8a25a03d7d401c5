"""The sandbox's limits hold on the real Docker engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.execution.sandbox import Mount, RunSpec

pytestmark = pytest.mark.docker


def run(sandbox, image, tmp_path: Path, **limits):
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    spec = RunSpec(image=image, mounts=(Mount(inputs, "/input"),), **limits)
    with sandbox.output_area(64 * 1024**2) as area:
        return sandbox.run(spec, area)


def test_unprivileged_user_without_capabilities(sandbox, behave, tmp_path):
    outcome = run(sandbox, behave("whoami"), tmp_path)
    assert outcome.ok, outcome.stderr_tail
    assert outcome.stdout_tail[-1] == "uid=65534 caps=0000000000000000 nnp=1 tmp_writable=True"


def test_network_is_unreachable(sandbox, behave, tmp_path):
    outcome = run(sandbox, behave("network"), tmp_path)
    assert outcome.exit_code == 1
    assert "Network is unreachable" in outcome.error_line(300)


def test_root_filesystem_is_read_only(sandbox, behave, tmp_path):
    outcome = run(sandbox, behave("write-root"), tmp_path)
    assert outcome.error_line(300) == "OSError: [Errno 30] Read-only file system: '/opt/owned'"


def test_time_limit_kills_the_container(sandbox, behave, tmp_path):
    outcome = run(sandbox, behave("sleep"), tmp_path, time_limit=2)
    assert outcome.timed_out and not outcome.ok
    assert 2 <= outcome.wall_time_s < 15
    assert outcome.error_line(2) == "The container exceeded its time limit of 2 s and was stopped"


def test_memory_limit_without_swap(sandbox, behave, tmp_path):
    outcome = run(sandbox, behave("memory"), tmp_path, memory=256 * 1024**2)
    assert outcome.oom_killed and outcome.exit_code == 137
    assert outcome.error_line(300) == "The container was killed as it exceeded its memory limit"


def test_error_line_is_last_nonempty_stderr_line(sandbox, behave, tmp_path):
    outcome = run(sandbox, behave("crash"), tmp_path)
    assert outcome.error_line(300) == "RuntimeError: model weights not found at /opt/model.pt"
    assert outcome.stdout_tail == ["starting"]
