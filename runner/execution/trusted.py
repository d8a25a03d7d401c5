"""The images a runner trusts, known by the ID each had when the runner made or chose it.

A tag is a name: whoever can load or tag an image on the engine can move it, and a participant's
archive once could. An image ID is the digest of the image's config: nothing can move it. So the
runner records the ID of every image it builds (evaluation images, example algorithms), imports (the
offline base) or takes as its base and keeper, under the tag that names it for people, and runs,
builds FROM and keeps `/output` with those IDs only. A tag found on the engine is never trusted for
what it names, except once: a base this runner has no record of is recorded as it is found (the
first use of an existing engine), and the runner says so.

The record is a small JSON file in the runner's state folder (shared by the runner processes of one
host, written under a lock), or kept in memory where no folder is given (tests, a laptop's `try`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path


class TrustedImages:
    """tag -> the image ID recorded for it by this runner."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self._known: dict[str, str] = {}

    def get(self, tag: str) -> str | None:
        if tag not in self._known and self.path is not None:
            self._known.update(self._read())
        return self._known.get(tag)

    def put(self, tag: str, image_id: str) -> None:
        self._known[tag] = image_id
        if self.path is None:
            return
        with self._locked():
            recorded = {**self._read(), tag: image_id}
            part = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            part.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
            os.replace(part, self.path)

    def _read(self) -> dict[str, str]:
        assert self.path is not None
        try:
            found = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except ValueError:  # a torn file cannot happen (written by rename); a damaged one trusts nothing
            return {}
        return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(
            found, dict) else {}

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released by the kernel if this runner dies
            yield
