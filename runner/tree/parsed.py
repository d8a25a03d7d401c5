"""Challenge and phase files as parsed, kept in one file between runs (`ParsedFiles`): reading and
validating the YAML of 300 challenges and their 600 phases took 0.67 s of every site build, for files
that rarely change; unpickling them takes 0.05 s.

Knows: runner.tree.located (the files' size limit), runner.tree.records (atomic writes). Must not import
anything above runner.tree.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from runner.tree.located import ORGANIZER
from runner.tree.records import write_atomic

T = TypeVar("T")
MAX_BYTES = ORGANIZER.max_bytes + 1  # a file this long is past the limit its loader keeps: refused, never kept


class ParsedFiles:
    """What `load(path, *args)` made of a file, kept under the file's bytes, its path, the loader, its
    arguments and `code` (what parses: a change of it parses every file again). Only what parsed is
    kept (a broken file is parsed, and reported, every time), and only if the file did not change while
    it was parsed. `path`: where it is kept (None: within this process only)."""

    def __init__(self, path: Path | None, code: str):
        self.path, self.code = path, code
        self.kept = self._read()
        self.used: dict[str, object] = {}  # what this run loaded: what `save` keeps
        self.seen: dict[tuple[str, int, int], str] = {}  # (path and loader, time, size) -> key, in this run

    def load(self, path: Path, load: Callable[..., T], *args: str) -> T:
        how = f"{path}\n{load.__module__}.{load.__qualname__}\n{args!r}\n"
        try:
            info = path.stat()
        except OSError:  # the loader says what is wrong
            return load(path, *args)
        seen = (how, info.st_mtime_ns, info.st_size)  # within this run, a file's time stands for its bytes
        if seen in self.seen:
            return cast(T, self.used[self.seen[seen]])
        data = _head(path)
        if data is None:
            return load(path, *args)
        key = hashlib.sha256(f"{self.code}\n{how}".encode() + data).hexdigest()
        if key in self.used or key in self.kept:
            found = cast(T, self.used.get(key, self.kept.get(key)))
        else:
            found = load(path, *args)
            if _head(path) != data:  # edited while it was parsed: what was parsed may be neither version
                return found
        self.used[key], self.seen[seen] = found, key
        return found

    def save(self) -> None:
        """Keep what this run loaded, and only that (the entries of edited and removed files go)."""
        if self.path is not None and self.used.keys() != self.kept.keys():
            write_atomic(self.path, pickle.dumps(self.used, pickle.HIGHEST_PROTOCOL), durable=False)
            self.kept = dict(self.used)

    def _read(self) -> dict[str, object]:
        try:
            found = pickle.loads(self.path.read_bytes()) if self.path else {}
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
            return {}
        return found if isinstance(found, dict) else {}


def _head(path: Path) -> bytes | None:
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_BYTES)
    except OSError:
        return None
