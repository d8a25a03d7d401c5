"""Build trusted images (organizers' evaluation containers, example algorithms) from a folder.

Images are tagged by a hash of their build context and base, so an unchanged folder is built once
per machine and a changed one gets a new tag (and a new image ID recorded in results).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import docker
import docker.errors

from runner.execution.sandbox import SandboxError


def context_hash(folder: Path, *extra: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    for item in extra:
        digest.update(item.encode() + b"\0")
    return digest.hexdigest()[:16]


def build(client: docker.DockerClient, folder: Path, *, name: str, base: str | None) -> str:
    """Build `folder` (a Dockerfile with `ARG BASE`) and return the image ID."""
    tag = f"{name}:{context_hash(folder, base or '')}"
    try:
        return client.images.get(tag).id
    except docker.errors.ImageNotFound:
        pass
    args = {"BASE": base} if base else {}
    try:
        image, _ = client.images.build(path=str(folder), tag=tag, buildargs=args, rm=True, forcerm=True)
    except docker.errors.BuildError as exc:
        lines = [c.get("stream", c.get("error", "")).strip() for c in exc.build_log]
        tail = next((ln for ln in reversed(lines) if ln), str(exc))
        raise SandboxError(f"building {folder} failed: {tail}") from None
    except docker.errors.APIError as exc:
        raise SandboxError(f"building {folder} failed: {exc.explanation or exc}") from None
    return image.id
