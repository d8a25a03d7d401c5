"""Content hashes of folders: the one hash behind image tags and the output cache's keys.

Trusted images (organizers' evaluation containers, example algorithms) are tagged by a hash of
their build context, base and build arguments, so an unchanged folder is built once per machine
and a changed one gets a new tag (and a new image ID recorded in results). The output cache keys
algorithm outputs by the same hash of the input folder.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from pathlib import Path

from runner.codekey import file_sha256

# Byte-code caches differ from machine to machine: never part of a build context or its tag.
NOT_CONTEXT = ("__pycache__", "*.pyc")


def tree_hash(folder: Path, *extra: str, skip: tuple[str, ...] = ()) -> str:
    """sha256 over every file under `folder` (sorted, streamed, so a large input is never read whole),
    then each of `extra`. Paths with a part named in `skip` (or ending in a skipped `*.suffix`) are left out.

    Every record is framed, so no two different trees share a hash: a file is `f`, its path's length
    and path, whether it is executable, and its content's own sha256; an extra is `x`, its length and
    text. (Unframed, a file `a` holding `x\0b\0y` read like files `a` and `b`: two models, one hash.)"""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not _skipped(p.relative_to(folder), skip)):
        name = str(path.relative_to(folder)).encode("utf-8", "surrogateescape")
        executable = path.stat().st_mode & 0o111 != 0
        content = bytes.fromhex(file_sha256(path))
        digest.update(b"f" + _framed(name) + (b"x" if executable else b"-") + content)
    for item in extra:
        digest.update(b"x" + _framed(item.encode("utf-8", "surrogateescape")))
    return digest.hexdigest()


def _framed(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def _skipped(relative: Path, skip: tuple[str, ...]) -> bool:
    return any(part == pattern or (pattern.startswith("*") and part.endswith(pattern[1:]))
               for part in relative.parts for pattern in skip)


def image_tag(folder: Path, *, name: str, base: str | None, args: Mapping[str, str] | None = None,
              extra_context: Mapping[str, Path] | None = None, certificates: str = "") -> str:
    """`name:<16 hex>` for a build of `folder` on `base` with build `args`, the `extra_context` folders
    joined to it and the CA bundle of that fingerprint added (`certificates`): equal content, equal tag.
    Without extras the tag is what it always was."""
    extra = [base or "", *(f"{key}={value}" for key, value in sorted((args or {}).items()))]
    extra += _extra_lines(folder, extra_context)
    extra += [f"certificates:{certificates}"] if certificates else []
    return f"{name}:{tree_hash(folder, *extra)[:16]}"


def context_digest(folder: Path, extra_context: Mapping[str, Path] | None = None) -> str:
    """`sha256:<hex>` of a build context: `folder` with the `extra_context` folders joined to it. What a
    result names its evaluation by: equal digests, equal Dockerfile and code (on the base the runner gives)."""
    return "sha256:" + tree_hash(folder, *_extra_lines(folder, extra_context), skip=NOT_CONTEXT)


def _extra_lines(folder: Path, extra_context: Mapping[str, Path] | None) -> list[str]:
    return [f"context:{key}={tree_hash(path, skip=NOT_CONTEXT)}"
            for key, path in sorted(context_extras(folder, extra_context).items())]


def context_extras(folder: Path, extra_context: Mapping[str, Path] | None) -> dict[str, Path]:
    """The extra folders that join `folder`'s build context. A name the folder already holds keeps
    the folder's own copy (an organizer who vendored the kit for grand-challenge keeps their version)."""
    return {key: path for key, path in (extra_context or {}).items() if not (folder / key).exists()}


def assemble_context(folder: Path, extra_context: Mapping[str, Path] | None, dest: Path) -> Path:
    """`folder` with each extra folder copied in under its name (byte-code caches left out), at `dest`."""
    shutil.copytree(folder, dest, symlinks=True)
    for key, path in context_extras(folder, extra_context).items():
        shutil.copytree(path, dest / key, ignore=shutil.ignore_patterns(*NOT_CONTEXT))
    return dest


def build(engine: object, folder: Path, *, name: str, base: str | None) -> str:
    """`engine.build(folder, ...)`, kept for callers written before the Executor interface; a raw
    Docker client is wrapped in a DockerEngine. New code calls the executor's `build` directly."""
    from runner.execution.sandbox import Executor

    if isinstance(engine, Executor):
        return engine.build(folder, name=name, base=base)
    from runner.execution.docker_engine import DockerEngine

    return DockerEngine(engine).build(folder, name=name, base=base)
