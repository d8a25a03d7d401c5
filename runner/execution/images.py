"""Content hashes of folders: the one hash behind image tags and the output cache's keys.

Trusted images (organizers' evaluation containers, example algorithms) are tagged by a hash of
their build context, base and build arguments, so an unchanged folder is built once per machine
and a changed one gets a new tag (and a new image ID recorded in results). The output cache keys
algorithm outputs by the same hash of the input folder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CHUNK = 1024 * 1024


def tree_hash(folder: Path, *extra: str) -> str:
    """sha256 over every file's relative path and content under `folder` (sorted, streamed, so a
    large input is never read whole), then each of `extra`."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
        digest.update(b"\0")
    for item in extra:
        digest.update(item.encode() + b"\0")
    return digest.hexdigest()


def image_tag(folder: Path, *, name: str, base: str | None, args: Mapping[str, str] | None = None) -> str:
    """`name:<16 hex>` for a build of `folder` on `base` with build `args`: equal content, equal tag."""
    extra = [base or "", *(f"{key}={value}" for key, value in sorted((args or {}).items()))]
    return f"{name}:{tree_hash(folder, *extra)[:16]}"


def build(engine: Any, folder: Path, *, name: str, base: str | None) -> str:
    """`engine.build(folder, ...)`, kept for callers written before the Executor interface; a raw
    Docker client is wrapped in a DockerEngine. New code calls the executor's `build` directly."""
    from runner.execution.sandbox import Executor

    if not isinstance(engine, Executor):
        from runner.execution.docker_engine import DockerEngine

        engine = DockerEngine(engine)
    return engine.build(folder, name=name, base=base)
