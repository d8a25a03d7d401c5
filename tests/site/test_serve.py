"""`challenge serve` regenerates pages while an organizer edits, and the browser sees the edit.

The watcher tests run the real watcher (watchfiles over inotify) on a real folder, in a thread
that each test stops; every wait is bounded."""

from __future__ import annotations

import _thread
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runner.cli.site import generate_pages
from runner.settings import Settings
from runner.site import serve
from tests.helpers import CHALLENGE, PHASE, add_result, phase_file, write_result

QUIET_S = serve.QUIET_MS / 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, timeout: float = 2) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
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


def wait_until(check: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {seconds} s")
        time.sleep(0.05)


def test_serve_rebuilds_on_edit_and_tells_open_pages_to_reload(repo):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "runner.cli", "--root", str(repo), "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/{CHALLENGE}/"
        first = wait_for(url, "Segment every ellipsoid")
        assert serve.RELOAD_PATH in first and first.index(serve.RELOAD_PATH) > first.index("Segment every ellipsoid")
        waiting: list[str | None] = []  # an open page's long poll, asked before the edit
        poll = threading.Thread(target=lambda: waiting.append(fetch(f"http://127.0.0.1:{port}"
                                                                    f"{serve.RELOAD_PATH}?after=0", timeout=60)))
        poll.start()
        page = repo / "challenges" / CHALLENGE / "index.md"
        page.write_text(page.read_text().replace("Segment every ellipsoid", "Find every ellipsoid"))
        wait_for(url, "Find every ellipsoid")
        poll.join(timeout=60)
        assert waiting == ["1"]  # answered once the build was done: the page reloads
        index = fetch(f"http://127.0.0.1:{port}/search/search_index.json")
        assert index and json.loads(index)["docs"]  # files other than pages are served as they are
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/search/search_index.json", timeout=10) as answer:
            assert answer.headers["X-Content-Type-Options"] == "nosniff"  # a "PDF" holding HTML is never a page
    finally:
        server.terminate()  # SIGTERM
        server.wait(timeout=30)
    assert server.returncode == 0
    assert fetch(url) is None  # the server is gone with it


@dataclass
class Watcher:
    """`serve.regenerate_on_edits` running in a thread: what it regenerated and logged."""

    regenerations: int = 0
    log: list[str] = field(default_factory=list)

    def settle(self, seconds: float = 1.5) -> int:
        """Wait until no regeneration happened for `seconds` (bounded); returns the count."""
        deadline = time.monotonic() + 30
        seen, since = self.regenerations, time.monotonic()
        while time.monotonic() - since < seconds and time.monotonic() < deadline:
            time.sleep(0.05)
            if self.regenerations != seen:
                seen, since = self.regenerations, time.monotonic()
        return self.regenerations


@pytest.fixture
def watch(repo) -> Iterator[Callable[..., Watcher]]:
    """start(regenerate) -> Watcher: the watcher on the repo's challenges/ and site/, set up and
    counting regenerations; stopped, and its thread joined, when the test ends."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(regenerate: Callable[[], None] = lambda: None, budget: int | None = None) -> Watcher:
        watcher = Watcher()

        def counted() -> None:
            watcher.regenerations += 1
            regenerate()

        ready = threading.Event()
        folders = [repo / "challenges", repo / "site" / "templates", repo / "site" / "assets"]
        thread = threading.Thread(target=serve.regenerate_on_edits, args=(folders, counted, watcher.log.append, stop),
                                  kwargs={"ready": ready.set, "budget": budget}, daemon=True)
        thread.start()
        threads.append(thread)
        assert ready.wait(20), "the watcher was never set up"
        return watcher

    yield start
    stop.set()
    for thread in threads:
        thread.join(timeout=15)
        assert not thread.is_alive(), "the watcher did not stop"


def staged(repo: Path) -> str:
    return (repo / "build" / "stage" / CHALLENGE / "index.md").read_text()


def edit_intro(repo: Path, old: str, new: str) -> None:
    page = repo / "challenges" / CHALLENGE / "index.md"
    page.write_text(page.read_text().replace(old, new))


def test_edit_regenerates_staged_page(repo, watch):
    generate_pages(repo, Settings())
    watcher = watch(lambda: generate_pages(repo, Settings()))
    edit_intro(repo, "Segment every ellipsoid", "Find every ellipsoid")
    wait_until(lambda: "Find every ellipsoid" in staged(repo))
    assert watcher.settle() == 1
    assert any("regenerated pages after a change to" in line for line in watcher.log)


def test_asset_edit_regenerates_staged_asset(repo, watch):
    generate_pages(repo, Settings())
    watch(lambda: generate_pages(repo, Settings()))
    css = repo / "site" / "assets" / "challenge.css"
    css.write_text(css.read_text() + "\n/* edited */\n")
    wait_until(lambda: "/* edited */" in (repo / "build" / "stage" / "assets" / "challenge.css").read_text())


def test_burst_of_results_is_few_regenerations(repo, watch):
    watcher = watch()
    for i in range(1000):  # what a git pull landing 1,000 results writes, new folders included
        write_result(repo, f"team-{i // 10:03d}", f"s{i % 10}")
    assert 1 <= watcher.settle() <= 3  # one, unless the machine stalls the writer longer than QUIET_MS


def test_broken_yaml_logs_one_line_and_keeps_serving(repo, watch):
    generate_pages(repo, Settings())
    watcher = watch(lambda: generate_pages(repo, Settings()))
    phase = phase_file(repo)
    good = phase.read_text()
    phase.write_text("title: [Final test\n")  # half-written: the list never closes
    wait_until(lambda: any(line.startswith("not regenerated") for line in watcher.log))
    watcher.settle()
    failures = [line for line in watcher.log if line.startswith("not regenerated")]
    assert len(failures) == 1 and "\n" not in failures[0]
    assert f"{PHASE}.yml" in failures[0]
    phase.write_text(good)
    edit_intro(repo, "Segment every ellipsoid", "Find every ellipsoid")
    wait_until(lambda: "Find every ellipsoid" in staged(repo))


def test_past_the_watch_budget_results_are_watched_through_git(repo, watch):
    """A million results are 400,000 folders, past the system's inotify watches: the server then watches the
    challenges' own files and other folders, and git's branches, so a commit that brings results regenerates."""
    git = ["git", "-c", "user.name=R", "-c", "user.email=r@example.org"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    write_result(repo, "alice", "v1")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tree"], cwd=repo, check=True)
    plan = serve.watch_plan([repo / "challenges"], budget=0)
    results = repo / "challenges" / CHALLENGE / "results"
    assert results not in plan.deep and results.parent in plan.flat and results.parent / "phases" in plan.deep
    assert repo / ".git" / "refs" / "heads" in plan.deep and "a commit or a pull regenerates" in plan.note
    watcher = watch(budget=0)
    assert plan.note in watcher.log
    write_result(repo, "bob", "v1")  # not seen until committed
    assert watcher.settle(max(1.0, 4 * QUIET_S)) == 0
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bob"], cwd=repo, check=True)
    assert watcher.settle() == 1
    edit_intro(repo, "Segment every ellipsoid", "Find every ellipsoid")  # a page: seen at once
    assert watcher.settle() == 2
    phase = phase_file(repo)
    phase.write_text(phase.read_text() + "\n")  # a phase file, in a folder watched with all below it
    assert watcher.settle() == 3


def test_within_the_watch_budget_everything_is_watched(repo):
    folders = [repo / "challenges", repo / "site" / "templates"]
    assert serve.watch_plan(folders, budget=10_000) == serve.WatchPlan(folders, [])


def test_result_written_through_tmp_is_one_regeneration(repo, watch):
    folder = repo / "challenges" / CHALLENGE / "results" / PHASE / "alice"
    folder.mkdir(parents=True)
    watcher = watch()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".v1.json.", suffix=".tmp")  # as Store.write_result names it
    with os.fdopen(fd, "w") as handle:
        handle.write("{}")
    assert watcher.settle(max(1.0, 4 * QUIET_S)) == 0  # the .tmp file alone is no change
    os.replace(tmp, folder / "v1.json")
    assert watcher.settle() == 1


def test_runner_writing_a_result_is_one_regeneration(repo, watch):
    watcher = watch()
    add_result(repo, "bob", "v1", 0.8)  # a submission file, then Store.write_result: .tmp, then rename
    assert watcher.settle() == 1


@pytest.mark.parametrize("name", [".index.md.swp", "index.md~", ".#index.md", ".index.md.abc123.tmp"])
def test_editor_temp_files_are_ignored(repo, watch, name):
    watcher = watch()
    (repo / "challenges" / CHALLENGE / name).write_text("scratch")
    assert watcher.settle(max(1.0, 4 * QUIET_S)) == 0


def test_ctrl_c_stops_serving(repo):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "runner.cli", "--root", str(repo), "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/{CHALLENGE}/"
        wait_for(url, "Segment every ellipsoid")
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
    assert server.returncode == 0
    assert fetch(url) is None


def test_an_edit_made_while_the_site_is_first_built_is_built_again(repo, tmp_path):
    """The watcher is set up before the first build: what an organizer saves meanwhile is not lost."""
    page, builds, said = repo / "challenges" / CHALLENGE / "index.md", [], []

    def rebuild() -> None:
        builds.append(page.read_text())
        if len(builds) == 1:  # saved during the first build
            page.write_text(page.read_text() + "\nSaved while the site was first built.\n")
        else:
            raise KeyboardInterrupt  # the edit was built: stop serving, as Ctrl+C does

    guard = threading.Timer(15, _thread.interrupt_main)  # a lost edit: no second build ever comes
    guard.start()
    try:
        assert serve.serve_live(tmp_path, free_port(), rebuild, [repo / "challenges"], log=said.append) == 0
    finally:
        guard.cancel()
    assert len(builds) == 2 and "Saved while" in builds[1] and said[0].startswith("serving on ")


def test_ctrl_c_during_the_first_build_is_an_interruption_not_a_stop(repo, tmp_path):
    """Nothing was served yet: the command says "interrupted" and exits 130, as any other would."""
    def rebuild() -> None:
        raise KeyboardInterrupt
    before = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        serve.serve_live(tmp_path, free_port(), rebuild, [repo / "challenges"], log=lambda line: None)
    assert threading.active_count() == before  # the watcher's threads ended with it


def test_a_server_closed_before_its_thread_began_ends_the_thread_quietly():
    """Ctrl+C inside the serving thread's start(): serve_live closed the socket before serve_forever ran."""
    server = http.server.ThreadingHTTPServer((serve.HOST, free_port()), http.server.SimpleHTTPRequestHandler)
    server.server_close()
    serve._serve(server)  # serve_forever itself raises ValueError here
