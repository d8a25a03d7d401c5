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
import re
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


class ImageFiles:
    """Small files read from images (their /etc/passwd and /etc/group, for `users.run_as`), kept by image ID.

    An image ID is the digest of the image's config, which names its layers by their digests: the files of
    an ID never change, so what was read once is what a container of it would read again. Kept one JSON file
    per ID in a folder of the runner's state (written by rename: a reader finds a whole file or none), so a
    cold runner process skips the container and the two archive requests each image's first run costs
    (about 0.1 s each); in memory only where no folder is given. Anything but an ID (`sha256:` and 64 hex
    digits) is never kept, and a damaged file is read again from the image."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder
        self._known: dict[tuple[str, tuple[str, ...]], list[str | None]] = {}

    def get(self, image: str, paths: tuple[str, ...]) -> list[str | None] | None:
        if (image, paths) in self._known:
            return self._known[(image, paths)]
        file = self._file(image)
        if file is None:
            return None
        try:
            found = json.loads(file.read_text())
        except (OSError, ValueError):  # none yet, or damaged: read from the image
            return None
        if not (isinstance(found, dict) and all(isinstance(found.get(p), str | None) for p in paths)
                and all(p in found for p in paths)):
            return None
        self._known[(image, paths)] = [found[p] for p in paths]
        return self._known[(image, paths)]

    def put(self, image: str, paths: tuple[str, ...], files: list[str | None]) -> None:
        if not _IMAGE_ID.fullmatch(image):
            return
        self._known[(image, paths)] = list(files)
        file = self._file(image)
        if file is None:
            return
        with contextlib.suppress(OSError):  # a cache: one that cannot be written is read from the image next time
            file.parent.mkdir(parents=True, exist_ok=True)
            part = file.with_name(f".{file.name}.{os.getpid()}")
            part.write_text(json.dumps(dict(zip(paths, files, strict=True))))
            os.replace(part, file)

    def _file(self, image: str) -> Path | None:
        if self.folder is None or not _IMAGE_ID.fullmatch(image):
            return None
        return self.folder / f"{image.removeprefix('sha256:')}.json"


_IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")
