"""Image archives (`docker save` tarballs) from participants, checked and made safe to load.

An archive names its images and their tags in `manifest.json` (Docker's layout) and, from Docker 25,
`index.json` (OCI's). Loading one as it is would apply its tags: an archive tagged
`challenge-base:<hash>` or `challenge-eval/<challenge>:<hash>` would replace the runner's own
trusted images. So an archive is copied into a plain (uncompressed) tar with every tag removed
(`RepoTags`, the legacy `repositories` file, OCI name annotations), and refused unless it holds
exactly one image. Docker loads it untagged and runs it by its ID. Engine-neutral: the Docker and
fake executors both load what `sanitize` writes.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import ChallengeError

MANIFEST = "manifest.json"
OCI_INDEX = "index.json"
LEGACY_TAGS = "repositories"
NAME_ANNOTATIONS = ("io.containerd.image.name", "org.opencontainers.image.ref.name")
METADATA_MAX_BYTES = 1024**2


class BadArchive(ChallengeError):
    """An image archive that is not one loadable image; the message is shown to the participant
    (never transient: the same archive is refused again)."""


@dataclass(frozen=True)
class ArchiveImage:
    """What an archive's manifest says of its one image: its config file (named by the config's
    digest, which is the image ID Docker gives it) and its layer count."""

    config: str
    layers: int

    @property
    def image_id(self) -> str:
        digest = Path(self.config).name.removesuffix(".json")
        return f"sha256:{digest}"


def sanitize(source: Path, target: Path, *, max_bytes: int) -> ArchiveImage:
    """Copy the archive at `source` (a tar, optionally gzip, bzip2 or xz compressed) to `target`
    as a plain tar without tags; raises BadArchive unless it holds exactly one image and unpacks
    to at most `max_bytes`."""
    try:
        with tarfile.open(source, mode="r|*") as archive, tarfile.open(target, mode="w") as out:
            return _copy(archive, out, max_bytes)
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
        target.unlink(missing_ok=True)
        raise BadArchive(f"not a docker save archive ({_reason(exc)})") from None
    except BadArchive:
        target.unlink(missing_ok=True)
        raise


def _copy(archive: tarfile.TarFile, out: tarfile.TarFile, max_bytes: int) -> ArchiveImage:
    image: ArchiveImage | None = None
    total = 0
    for member in archive:
        total += member.size
        if total > max_bytes:
            raise BadArchive(f"the archive unpacks to more than {max_bytes // 1024**2} MiB")
        if member.name.lstrip("./") == LEGACY_TAGS:
            continue
        if member.name.lstrip("./") in (MANIFEST, OCI_INDEX) and member.isfile():
            data, found = _untagged(member, archive)
            image = found or image
            member.size = len(data)
            out.addfile(member, _Bytes(data))
        else:
            out.addfile(member, archive.extractfile(member) if member.isfile() else None)
    if image is None:
        raise BadArchive(f"holds no {MANIFEST}: not a docker save archive")
    return image


def _untagged(member: tarfile.TarInfo, archive: tarfile.TarFile) -> tuple[bytes, ArchiveImage | None]:
    """The manifest or index without tags, and (from manifest.json) the one image it lists."""
    if member.size > METADATA_MAX_BYTES:
        raise BadArchive(f"{member.name} is larger than {METADATA_MAX_BYTES} bytes")
    handle = archive.extractfile(member)
    try:
        document = json.loads(handle.read() if handle else b"")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise BadArchive(f"{member.name} is not valid JSON") from None
    if member.name.lstrip("./") == OCI_INDEX:
        return json.dumps(_index_untagged(document)).encode(), None
    return _manifest_untagged(document)


def _manifest_untagged(document: Any) -> tuple[bytes, ArchiveImage]:
    if not isinstance(document, list) or not all(isinstance(entry, dict) for entry in document):
        raise BadArchive(f"{MANIFEST} is not a list of images")
    if len(document) != 1:
        raise BadArchive(f"the archive holds {len(document)} images; submit exactly one (docker save IMAGE)")
    entry = document[0]
    config, layers = entry.get("Config"), entry.get("Layers")
    if not isinstance(config, str) or not isinstance(layers, list):
        raise BadArchive(f"{MANIFEST} names no Config and Layers")
    entry["RepoTags"] = None
    return json.dumps(document).encode(), ArchiveImage(config=config, layers=len(layers))


def _index_untagged(document: Any) -> Any:
    manifests = document.get("manifests") if isinstance(document, dict) else None
    if not isinstance(manifests, list):
        raise BadArchive(f"{OCI_INDEX} lists no manifests")
    if len(manifests) > 1:
        raise BadArchive(f"the archive holds {len(manifests)} images; submit exactly one (docker save IMAGE)")
    for manifest in manifests:
        annotations = manifest.get("annotations") if isinstance(manifest, dict) else None
        if isinstance(annotations, dict):
            for name in NAME_ANNOTATIONS:
                annotations.pop(name, None)
    return document


class _Bytes:
    """A readable view of bytes for tarfile.addfile."""

    def __init__(self, data: bytes):
        self._data, self._at = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size < 0 else self._at + size
        chunk, self._at = self._data[self._at:end], min(end, len(self._data))
        return chunk


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
