"""Serve the site locally: a built folder as static files, or live while organizers edit."""

from __future__ import annotations

import functools
import http.server
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def serve_static(folder: Path, port: int, log: Callable[[str], None] = print) -> None:
    """Serve `folder` on 127.0.0.1:`port` until interrupted."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        log(f"serving {folder} on http://127.0.0.1:{port}/ (Ctrl+C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


def tree_signature(folders: list[Path]) -> tuple:
    """Names, sizes and times of every file: changes when anything is edited, added or removed."""
    return tuple(sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns)
                        for folder in folders if folder.is_dir() for p in folder.rglob("*") if p.is_file()))


def serve_live(root: Path, port: int, regenerate: Callable[[], None], watched: list[Path],
               log: Callable[[str], None] = print, interval: float = 1.0) -> None:
    """Regenerate the staging folder whenever a watched file changes; `mkdocs serve` watches the
    staging folder and reloads the browser."""
    regenerate()
    # SIGTERM (a service manager, a test) must also stop the mkdocs child, so turn it into an exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = subprocess.Popen([sys.executable, "-m", "mkdocs", "serve", "-a", f"127.0.0.1:{port}",
                               "-f", str(root / "mkdocs.yml")], cwd=root)
    log(f"serving on http://127.0.0.1:{port}/, regenerating on edits under {', '.join(map(str, watched))}")
    seen = tree_signature(watched)
    try:
        while server.poll() is None:
            time.sleep(interval)
            now = tree_signature(watched)
            if now != seen:
                seen = now
                try:
                    regenerate()
                except Exception as exc:  # an organizer's half-written edit must not stop the server
                    log(f"not regenerated: {exc}")
    except KeyboardInterrupt:
        pass
    finally:
        server.terminate()
        server.wait()
