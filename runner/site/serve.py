"""Serve the site locally: a built folder as static files, or live while organizers edit.

Live serving watches `challenges/` and the site's templates and assets with the OS's file events
(inotify, through watchfiles) rather than by polling: its idle cost does not grow with the number
of result files, and a burst of writes (a `git pull` landing 1,000 results) is one regeneration.
"""

from __future__ import annotations

import errno
import functools
import http.server
import io
import os
import queue
import signal
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import watchfiles

from runner.errors import ChallengeError
from runner.tree.paths import CHALLENGES

HOST = "127.0.0.1"

QUIET_MS = 200  # regenerate once the watched folders have been quiet this long...
MAX_WAIT_MS = 5_000  # ...or after this long of continuous writes, so a long pull still shows progress
READY_MS = 500  # how soon after the watcher is set up `ready` is called, when nothing changes
RELOAD_PATH = "/.live-reload"  # what a served page asks to learn of the next build
RELOAD_WAIT_S = 25  # a long poll's longest wait: below browsers' and proxies' idle timeouts
# Reloads the page once a build newer than BUILD (the page's) is done; retries after a second when the
# server is gone (stopped, restarting).
RELOAD_SCRIPT = (
    "<script>(function(){var b=BUILD;function w(){fetch('" + RELOAD_PATH + "?after='+b,{cache:'no-store'})"
    ".then(function(r){return r.text()}).then(function(t){if(+t>b){location.reload()}else{w()}})"
    ".catch(function(){setTimeout(w,1000)})}w()})();</script>"
)
NEARBY_PORTS = 100  # how far past a busy port to look for a free one to suggest
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
    renaming them into place are dropped too, so a result written is one change (its rename). Of a
    git folder (watched where results are watched through git) only what a commit or a pull moves
    counts: HEAD, packed-refs and the branches."""

    ignore_dirs = tuple(d for d in watchfiles.DefaultFilter.ignore_dirs if d != ".git")
    ignore_entity_patterns = (*watchfiles.DefaultFilter.ignore_entity_patterns, r"\.tmp$")

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        _, git, inside = path.partition(f"{os.sep}.git{os.sep}")
        if not git:
            return super().__call__(change, path)
        return (inside in ("HEAD", "packed-refs") or inside.startswith(f"refs{os.sep}heads{os.sep}")) \
            and not inside.endswith(".lock")


@dataclass(frozen=True)
class WatchPlan:
    """What `watch_edits` watches: folders with all below them (`deep`), folders' own entries alone
    (`flat`), and why results and submissions are watched through git instead, if they are."""

    deep: list[Path]
    flat: list[Path]
    note: str = ""


def watch_plan(folders: list[Path], *, budget: int | None = None) -> WatchPlan:
    """Everything below `folders`, unless the challenges' results and submissions hold more folders than
    `budget` (half the system's inotify watches: each folder takes one, and at a million results they
    are 400,000): then the challenges' own files and their other folders, and git's branches, so a
    commit or a pull that brings results regenerates."""
    existing = [folder for folder in folders if folder.is_dir()]
    budget = _watch_budget() if budget is None else budget
    for folder in existing:
        if folder.name != CHALLENGES:
            continue
        bulky = [sub for challenge in _folders(folder) for sub in _folders(challenge) if sub.name in BULKY]
        count = sum(_count_folders(sub) for sub in bulky)
        if count <= budget:
            continue
        challenges = _folders(folder)
        deep = [f for f in existing if f != folder] + [sub for c in challenges for sub in _folders(c)
                                                        if sub.name not in BULKY]
        git = folder.parent / ".git"
        refs = [git / "refs" / "heads"] if (git / "refs" / "heads").is_dir() else []
        note = (f"results and submissions: {count:,} folders, more than the {budget:,} file watches this server "
                "takes: a commit or a pull regenerates" + ("" if refs else " (no .git folder here: restart)")
                + "; a new challenge or folder is watched after a restart")
        return WatchPlan(deep + refs, [folder, *challenges] + ([git] if refs else []), note)
    return WatchPlan(existing, [])


BULKY = ("results", "submissions")  # the folders of a challenge that grow with its results


def _folders(folder: Path) -> list[Path]:
    with os.scandir(folder) as found:
        return sorted(Path(e.path) for e in found if e.is_dir(follow_symlinks=False))


def _count_folders(folder: Path) -> int:
    """`folder` and the folders below it (their entries' types come with the listing: nothing is stat'ed)."""
    with os.scandir(folder) as found:
        return 1 + sum(_count_folders(Path(e.path)) for e in found if e.is_dir(follow_symlinks=False))


def _watch_budget() -> int:
    try:
        return int(Path("/proc/sys/fs/inotify/max_user_watches").read_text()) // 2
    except (OSError, ValueError):
        return 4096  # half of Linux's oldest default


def watch_edits(folders: list[Path], stop: threading.Event, *, quiet_ms: int = QUIET_MS,
                max_wait_ms: int = MAX_WAIT_MS, ready: Callable[[], None] = lambda: None,
                plan: WatchPlan | None = None) -> Iterator[Changes]:
    """Batches of changes under `folders` (as `watch_plan` watches them) until `stop` is set: a batch
    ends once no new change came for `quiet_ms`, so a burst of writes is one batch. `ready` is called
    once the watchers are set up (their first pass walks the folders, which takes a while with many
    results)."""
    plan = plan or watch_plan(folders)
    watches = [(paths, deep) for paths, deep in ((plan.deep, True), (plan.flat, False)) if paths]
    if not watches:  # nothing to watch: wait to be stopped, as watchfiles refuses no paths
        ready()
        stop.wait()
        return
    found: queue.Queue[Changes | BaseException | None] = queue.Queue()  # None: a watcher is set up

    def run(paths: list[Path], deep: bool) -> None:
        try:
            for count, changes in enumerate(watchfiles.watch(
                    *paths, watch_filter=EditFilter(), step=quiet_ms, debounce=max_wait_ms, stop_event=stop,
                    rust_timeout=READY_MS, yield_on_timeout=True, recursive=deep)):
                if count == 0:
                    found.put(None)
                if changes:
                    found.put(changes)
        except BaseException as exc:  # the watcher's failure (the system's watch limit) is the caller's
            found.put(exc)
    threads = [threading.Thread(target=run, args=watch, daemon=True) for watch in watches]
    for thread in threads:
        thread.start()
    try:
        yield from _batches(found, stop, set_up=len(threads), quiet_ms=quiet_ms, ready=ready)
    finally:  # also where `ready` or the caller failed: the watchers end with the caller's stop
        stop.set()
        for thread in threads:
            thread.join(timeout=10)


def _batches(found: queue.Queue[Changes | BaseException | None], stop: threading.Event, *, set_up: int,
             quiet_ms: int, ready: Callable[[], None]) -> Iterator[Changes]:
    """The watchers' batches as one stream: one batch while they go on reporting within `quiet_ms`."""
    waiting, batch = set_up, Changes()
    while not stop.is_set():
        try:
            item = found.get(timeout=quiet_ms / 1000 if batch else 0.5)
        except queue.Empty:
            if batch:
                yield batch
                batch = Changes()
            continue
        if isinstance(item, BaseException):
            raise item
        if item is None:
            waiting -= 1
            if waiting == 0:
                ready()
        else:
            batch |= item


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
                        ready: Callable[[], None] = lambda: None, budget: int | None = None) -> int:
    """Regenerate once per batch of edits under `folders` (as `watch_plan` watches them within `budget`)
    until `stop` is set; returns how many batches were seen. Edits made while regenerating make the next
    batch."""
    batches, plan = 0, watch_plan(folders, budget=budget)
    if plan.note:
        log(plan.note)
    for changes in watch_edits(folders, stop, quiet_ms=quiet_ms, ready=ready, plan=plan):
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
    """SIGTERM (a service manager, a test) stops like Ctrl+C."""
    raise KeyboardInterrupt


class Builds:
    """How many times the site was built since serving began; a browser's long poll waits for the next."""

    def __init__(self) -> None:
        self.count = 0
        self.closed = False
        self._changed = threading.Condition()

    def built(self) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def after(self, seen: int, timeout: float) -> int:
        """The count once it passes `seen`, or as it is after `timeout` seconds (or once closed)."""
        with self._changed:
            self._changed.wait_for(lambda: self.count > seen or self.closed, timeout)
            return self.count

    def close(self) -> None:
        with self._changed:
            self.closed = True
            self._changed.notify_all()


class LiveHandler(http.server.SimpleHTTPRequestHandler):
    """The built site as static files; each HTML page gets a script that reloads it after the next build.
    The script asks RELOAD_PATH, which answers once a build newer than the page's is done (a long poll:
    an idle browser costs a waiting thread, no work)."""

    builds: Builds

    def send_head(self) -> Any:
        if urllib.parse.urlsplit(self.path).path == RELOAD_PATH:
            seen = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("after", ["0"])[0]
            count = self.builds.after(int(seen) if seen.isdigit() and len(seen) < 19 else 0, RELOAD_WAIT_S)
            return self._fresh(str(count).encode(), "text/plain")
        path = Path(self.translate_path(self.path))
        if path.is_dir() and urllib.parse.urlsplit(self.path).path.endswith("/"):
            path = path / "index.html"
        if path.suffix != ".html" or not path.is_file():
            return super().send_head()  # assets, data files, folders without a slash (redirected), 404s
        return self._fresh(_with_reload(path.read_bytes(), self.builds.count), "text/html; charset=utf-8")

    def _fresh(self, body: bytes, content_type: str) -> io.BytesIO:
        """Headers for `body`, which a browser must not keep (the next build changes it); the body to send."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        return io.BytesIO(body)

    def end_headers(self) -> None:
        # Every answer as its declared type: a participant's "PDF" that is HTML inside is never read as a page.
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a request per page and asset would bury the regeneration lines."""


def _with_reload(page: bytes, build: int) -> bytes:
    script = RELOAD_SCRIPT.replace("BUILD", str(build)).encode()
    end = page.rfind(b"</body>")
    return page[:end] + script + page[end:] if end >= 0 else page + script


def _serve(server: http.server.ThreadingHTTPServer) -> None:
    """`server.serve_forever()`, quiet where its socket was closed before it began: Ctrl+C landing inside the
    thread's start() leaves it not yet alive, so `serve_live` closes the socket without a shutdown, and the
    thread, once it runs, would print a traceback over the command's one line."""
    try:
        server.serve_forever()
    except (OSError, ValueError):  # ValueError: the selector's answer to a closed socket (fileno -1)
        if server.socket.fileno() != -1:
            raise


def serve_live(site: Path, port: int, rebuild: Callable[[], object], watched: list[Path],
               log: Callable[[str], None] = print, *, quiet_ms: int = QUIET_MS) -> int:
    """Build the site into `site` and serve it on 127.0.0.1:`port`, building it again after each batch
    of edits under `watched`; open pages reload after each build. "serving on" is logged once the
    watcher is set up. Returns 0 when stopped (Ctrl+C, SIGTERM).

    Our own server rather than `mkdocs serve`: the latter polls every file of the site's sources twice
    a second, a cost that grows with the results (29 % of a core at 60,000); file events and a long
    poll cost nothing while nobody edits."""
    check_port(port)
    builds = Builds()
    handler = type("Handler", (LiveHandler,), {"builds": builds})
    stop = threading.Event()
    server = http.server.ThreadingHTTPServer((HOST, port), functools.partial(handler, directory=str(site)))
    serving = threading.Thread(target=_serve, args=(server,), daemon=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)

    def first() -> None:
        """Once the watcher is set up, so that an edit made while the site is first built makes the next batch
        (before, it was made before anything watched, and never built)."""
        rebuild()
        serving.start()
        log(f"serving on http://{HOST}:{port}/, regenerating on edits under {', '.join(map(str, watched))}")

    def built() -> None:
        rebuild()
        builds.built()

    try:
        regenerate_on_edits(watched, built, log, stop, quiet_ms=quiet_ms, ready=first)
    except KeyboardInterrupt:
        if not serving.is_alive():
            raise  # stopped before anything was served: "interrupted", as the command says of any other
    finally:
        stop.set()
        builds.close()
        if serving.is_alive():  # else shutdown() would wait for a loop that never ran
            server.shutdown()
        server.server_close()
        signal.signal(signal.SIGTERM, previous)
    return 0
