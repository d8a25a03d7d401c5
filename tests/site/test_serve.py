"""`challenge serve` regenerates pages while an organizer edits, and the browser sees the edit."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

from tests.helpers import CHALLENGE


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode()
    except OSError:
        return None


def wait_for(url: str, text: str, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        page = fetch(url)
        if page and text in page:
            return page
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never appeared at {url}")


def test_serve_regenerates_on_edit(repo):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "runner.cli", "--root", str(repo), "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/{CHALLENGE}/"
        wait_for(url, "Segment every ellipsoid")
        page = repo / "challenges" / CHALLENGE / "index.md"
        page.write_text(page.read_text().replace("Segment every ellipsoid", "Find every ellipsoid"))
        wait_for(url, "Find every ellipsoid")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert fetch(url) is None  # the mkdocs server it started is gone too
