"""The registry policy: which image references may run, read the way Docker reads them.

The one home of these rules: the submission schema, the pull-request rules and the runner all ask
`image_refusal`, so a reference the review accepts is one the runner runs.
"""

from __future__ import annotations

import re

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
PINNED = re.compile(r"(?P<name>[a-z0-9][a-z0-9._/:-]*[a-z0-9])@(?P<digest>sha256:[0-9a-f]{64})")
SHA256 = re.compile(r"[0-9a-f]{64}")


def check_image_ref(ref: str, *, allow_local: bool) -> str | None:
    """None if `ref` may run, else why not. A tag alone can be moved, so only digests are accepted."""
    if PINNED.fullmatch(ref):
        return None
    if DIGEST.fullmatch(ref):
        return None if allow_local else (
            "a local image ID is accepted only for local runs (--allow-local-images); "
            "push the image and write name@sha256:<digest>")
    return "must be pinned by digest: registry/name@sha256:<64 hex digits> (a tag alone can change)"


def registry_of(image: str) -> str | None:
    """The registry host of a reference as Docker reads it; None for a local image ID."""
    name = image.split("@")[0]
    if DIGEST.fullmatch(image) or name.startswith("sha256:"):
        return None
    first, _, rest = name.partition("/")
    return first if rest and ("." in first or ":" in first or first == "localhost") else "docker.io"


def image_refusal(ref: str, *, allowed: tuple[str, ...], allow_local: bool) -> str | None:
    """Why `ref` may not run in a phase that accepts the registries `allowed` (empty: any), or None."""
    if why := check_image_ref(ref, allow_local=allow_local):
        return why
    registry = registry_of(ref)
    if not allowed or registry is None or registry in allowed:
        return None
    return f"registry {registry} is not accepted in this phase; push to {' or '.join(allowed)}"
