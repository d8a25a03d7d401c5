"""`challenge serve` and `challenge demo` on a port another server holds: one line naming the port and
the fix, before anything starts; and "serving on" only once the server answers."""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.cli import main
from tests.site.test_serve import fetch, free_port


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port a real server socket listens on, as another program's would."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def challenge(repo: Path, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.Popen([sys.executable, "-m", "runner.cli", "--root", str(repo), *args], text=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def test_serve_on_a_busy_port_is_one_line(repo, held_port):
    server = challenge(repo, "serve", "--port", str(held_port))
    out, err = server.communicate(timeout=120)
    assert server.returncode == 1
    fix = re.fullmatch(rf"error: port {held_port} is in use: stop what holds it, or serve on another port with "
                       r"--port (\d+)\n", err)
    assert fix and int(fix[1]) != held_port, err  # a free port, found nearby
    assert "serving on" not in out + err
    assert not (repo / "build" / "stage").exists()  # it failed before generating anything


def test_demo_on_a_busy_port_fails_before_any_work(repo, held_port, monkeypatch, capsys, tmp_path):
    def no_engine(*args, **kwargs):
        raise AssertionError("the demo started its work on a port it cannot serve on")

    monkeypatch.setattr("runner.cli.demo.runner_executor", no_engine)
    code = main(["--root", str(repo), "demo", "--port", str(held_port), "--workspace", str(tmp_path / "demo")])
    assert code == 1
    assert capsys.readouterr().err.startswith(f"error: port {held_port} is in use: stop what holds it")
    assert not (tmp_path / "demo").exists()


def test_a_port_that_is_no_port_is_a_usage_error(repo, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--root", str(repo), "serve", "--port", "70000"])
    assert exit.value.code == 2
    assert "argument --port: expected a port from 1 to 65535, not '70000'" in capsys.readouterr().err


def test_serving_on_is_printed_once_the_server_answers(repo):
    port = free_port()
    server = challenge(repo, "serve", "--port", str(port))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stderr], daemon=True).start()
    try:
        deadline = time.monotonic() + 120
        while not (line := lines.get(timeout=max(deadline - time.monotonic(), 0.1))).startswith("serving on"):
            pass
        assert fetch(f"http://127.0.0.1:{port}/") is not None, "announced before the server answered"
        assert line.startswith(f"serving on http://127.0.0.1:{port}/, regenerating on edits under")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert server.returncode == 0
