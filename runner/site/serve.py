"""Serve the site locally: a built folder as static files, or live while organizers edit.

Live serving watches `challenges/` and the site's templates and assets with the OS's file events
(inotify, through watchfiles) rather than by polling: its idle cost does not grow with the number
of result files, and a burst of writes (a `git pull` landing 1,000 results) is one regeneration.
"""

from __future__ import annotations

import errno
import functools
import http.server
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import watchfiles

from runner.errors import ChallengeError
from runner.site.build import GENERATED_CONFIG, builder_env

HOST = "127.0.0.1"

QUIET_MS = 200  # regenerate once the watched folders have been quiet this long...
MAX_WAIT_MS = 5_000  # ...or after this long of continuous writes, so a long pull still shows progress
READY_MS = 500  # how soon after the watcher is set up `ready` is called, when nothing changes
ANSWER_POLL_S = 0.2  # how often `serve_live` asks whether `mkdocs serve` answers yet
NEARBY_PORTS = 100  # how far past a busy port to look for a free one to suggest
# Asking our own server on 127.0.0.1 never goes through a proxy named in the environment.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
Changes = set[tuple[watchfiles.Change, str]]  # a batch of file events: (what happened, the file's path)


class PortUnavailable(ChallengeError):
    """The port to serve on cannot be had; the message names it and what to do."""


def check_port(port: int) -> None:
    """Fail with one line, before anything starts, when `port` cannot be bound on 127.0.0.1 (another
    server holds it); the message suggests a free port nearby for `--port`, which both commands
    that serve take."""
    failure = _bind_error(port)
    if failure is None:
        return
    free = next((p for p in range(port + 1, min(port + NEARBY_PORTS, 65535) + 1) if _bind_error(p) is None), None)
    fix = f"--port {free}" if free else "--port N"
    if failure.errno == errno.EADDRINUSE:
        raise PortUnavailable(f"port {port} is in use: stop what holds it, or serve on another port with {fix}")
    raise PortUnavailable(f"cannot serve on port {port} ({failure.strerror}): serve on another port with {fix}")


def _bind_error(port: int) -> OSError | None:
    """Why binding `port` fails, or None. SO_REUSEADDR as http.server and mkdocs bind: a stopped
    server's connections still closing do not hold the port, a listening server does."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            return exc
    return None


def _answers(url: str) -> bool:
    """Whether a server answers at `url`: any HTTP status counts, a 404 too."""
    try:
        with _DIRECT.open(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def serve_static(folder: Path, port: int, log: Callable[[str], None] = print) -> None:
    """Serve `folder` on 127.0.0.1:`port` until interrupted."""
    check_port(port)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    with http.server.ThreadingHTTPServer((HOST, port), handler) as server:  # listening: connections wait for it
        log(f"serving {folder} on http://{HOST}:{port}/ (Ctrl+C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


def tree_signature(folders: list[Path]) -> tuple[tuple[str, int, int], ...]:
    """Names, sizes and times of every file: changes when anything is edited, added or removed.
    The polling approach `serve_live` used before file events; kept as the benchmark's baseline."""
    return tuple(sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns)
                        for folder in folders if folder.is_dir() for p in folder.rglob("*") if p.is_file()))


class EditFilter(watchfiles.DefaultFilter):
    """Changes that may change a page. DefaultFilter already drops editors' swap, backup and lock
    files (`.swp`, `~`, `.#*`) and VCS folders; the `.tmp` files `Store.write_result` writes before
    renaming them into place are dropped too, so a result written is one change (its rename)."""

    ignore_entity_patterns = (*watchfiles.DefaultFilter.ignore_entity_patterns, r"\.tmp$")


def watch_edits(folders: list[Path], stop: threading.Event, *, quiet_ms: int = QUIET_MS,
                max_wait_ms: int = MAX_WAIT_MS, ready: Callable[[], None] = lambda: None) -> Iterator[Changes]:
    """Batches of changes under `folders` until `stop` is set: a batch ends once no new change came
    for `quiet_ms`, so a burst of writes is one batch. `ready` is called once the watcher is set up
    (its first pass walks the folders, which takes a while with many results)."""
    existing = [folder for folder in folders if folder.is_dir()]
    if not existing:  # nothing to watch: wait to be stopped, as watchfiles refuses no paths
        ready()
        stop.wait()
        return
    batches = watchfiles.watch(*existing, watch_filter=EditFilter(), step=quiet_ms, debounce=max_wait_ms,
                               stop_event=stop, rust_timeout=READY_MS, yield_on_timeout=True)
    for count, changes in enumerate(batches):
        if count == 0:
            ready()
        if changes:
            yield changes


def regenerate_safely(regenerate: Callable[[], object], log: Callable[[str], None]) -> bool:
    """Regenerate; an organizer's half-written edit (invalid YAML) must not stop the server, so
    a failure is one line in the log, the pages staged before stay, and the next save retries."""
    try:
        regenerate()
    except Exception as exc:
        log(f"not regenerated: {one_line(exc)}")
        return False
    return True


def one_line(exc: Exception) -> str:
    """The error's lines joined by '; ': several problems (a ModelError lists each) in one log line."""
    return "; ".join(" ".join(line.split()) for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


def regenerate_on_edits(folders: list[Path], regenerate: Callable[[], object], log: Callable[[str], None],
                        stop: threading.Event, *, quiet_ms: int = QUIET_MS,
                        ready: Callable[[], None] = lambda: None) -> int:
    """Regenerate once per batch of edits under `folders` until `stop` is set; returns how many
    batches were seen. Edits made while regenerating make the next batch."""
    batches = 0
    for changes in watch_edits(folders, stop, quiet_ms=quiet_ms, ready=ready):
        batches += 1
        start = time.monotonic()
        if regenerate_safely(regenerate, log):
            log(f"regenerated pages after {describe(changes)} in {time.monotonic() - start:.1f} s")
    return batches


def describe(changes: Changes) -> str:
    """'a change to <path>' or 'N changes': one short phrase for the log."""
    if len(changes) == 1:
        (_, path), = changes
        return f"a change to {path}"
    return f"{len(changes):,} changes"


def _interrupt(*_: object) -> None:
    """SIGTERM (a service manager, a test) stops like Ctrl+C, so the mkdocs child is stopped too."""
    raise KeyboardInterrupt


def _stop_when_exits(server: subprocess.Popen[bytes], stop: threading.Event) -> None:
    """Stop watching when `mkdocs serve` exits on its own: there is nothing left to serve."""
    def wait_then_stop() -> None:
        server.wait()
        stop.set()

    threading.Thread(target=wait_then_stop, daemon=True).start()


def serve_live(root: Path, port: int, regenerate: Callable[[], object], watched: list[Path],
               log: Callable[[str], None] = print, *, quiet_ms: int = QUIET_MS) -> int:
    """Regenerate the staging folder whenever a watched file changes; `mkdocs serve` watches the
    staging folder and reloads the browser. "serving on" is logged once it answers. Returns 0 when
    stopped (Ctrl+C, SIGTERM), else the exit code of `mkdocs serve` that ended on its own."""
    check_port(port)
    regenerate()
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    server: subprocess.Popen[bytes] | None = None
    interrupted = False
    try:
        server = subprocess.Popen([sys.executable, "-m", "mkdocs", "serve", "-a", f"{HOST}:{port}",
                                   "-f", str(root / GENERATED_CONFIG)], cwd=root, env=builder_env())
        _stop_when_exits(server, stop)
        url = f"http://{HOST}:{port}/"
        regenerate_on_edits(watched, regenerate, log, stop, quiet_ms=quiet_ms, ready=lambda: _when_answering(
            url, server, lambda: log(f"serving on {url}, regenerating on edits under {', '.join(map(str, watched))}")))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        stop.set()
        code = _stop(server) if server else None
        signal.signal(signal.SIGTERM, previous)
    return 0 if interrupted or code is None else code


def _when_answering(url: str, server: subprocess.Popen[bytes], then: Callable[[], None]) -> None:
    """`then()` once `server` answers at `url` (its first build done); nothing if it exits first. The
    watcher's events wait meanwhile, so no edit is missed."""
    while server.poll() is None:
        if _answers(url):
            then()
            return
        time.sleep(ANSWER_POLL_S)


def _stop(server: subprocess.Popen[bytes]) -> int | None:
    """Stop `mkdocs serve`; returns its exit code if it had already ended on its own."""
    code = server.poll()
    if code is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return code
