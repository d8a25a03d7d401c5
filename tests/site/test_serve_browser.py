"""`challenge serve` in headless Chromium: a page left open shows an organizer's edit by itself."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.evaluation.examples import prepare_workspace
from tests.helpers import CHALLENGE, REPO
from tests.site.test_serve import free_port, wait_for

pytest.importorskip("selenium")
from selenium.webdriver.support.ui import WebDriverWait

OLD, NEW = "Segment every ellipsoid", "Find every ellipsoid"


@pytest.fixture(scope="module")
def served_repo(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("serve") / "repo")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "runner.cli", "--root", str(repo), "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(f"{url}{CHALLENGE}/", OLD, seconds=120)
        yield repo, url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def site_url(served_repo) -> str:
    return served_repo[1]


def test_an_open_page_reloads_after_an_edit(page, served_repo):
    repo, url = served_repo
    page.get(f"{url}{CHALLENGE}/")
    assert OLD in page.page_source
    intro = repo / "challenges" / CHALLENGE / "index.md"
    intro.write_text(intro.read_text().replace(OLD, NEW))
    WebDriverWait(page, 60).until(lambda browser: NEW in browser.page_source)  # no navigation of ours
