"""Image archives (`docker save` tarballs) from participants, parsed and rebuilt before the engine sees them.

`docker load` applies what an archive says while it loads: the tags in `manifest.json` (and in a second
`manifest.json` reached as `x/../manifest.json` or through a link), the legacy `repositories` file, OCI
name annotations, and a manifest's `Parent`, which makes the loaded image a child the build cache may
pick. Any of them could re-point an image the runner trusts. So an archive is never handed over as sent:

1. It is read once, as a stream, with every read bounded: a header's own data (a PAX or GNU long-name
   record, which Python's tarfile reads whole before any check) at most `HEADER_MAX` bytes, the whole at
   most `max_bytes` unpacked and at most `EXPANSION_MAX` times what was downloaded. Only regular files
   and folders under the names `docker save` writes are accepted, each name once and written as it is
   meant (no `./`, `..`, `//`); links, devices, sparse files and anything else are refused.
2. It is rebuilt from what was parsed: the config and the layers the participant's manifest names, and a
   manifest the runner writes, naming no tag and no parent. Nothing else of the archive reaches the engine.

Engine-neutral: the Docker and fake executors both load what `sanitize` writes.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import re
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from runner.errors import ChallengeError, printable

if TYPE_CHECKING:
    from _typeshed import SupportsRead

MANIFEST = "manifest.json"
BLOCK = tarfile.BLOCKSIZE
CHUNK = 1024 * 1024
HEADER_MAX = 64 * 1024  # a PAX record set or a GNU long name: a path is at most 4 KiB
METADATA_MAX_BYTES = 1024**2  # manifest.json
CONFIG_MAX_BYTES = 8 * 1024**2  # an image's config (its history can be long, never megabytes)
MAX_MEMBERS = 10_000  # Docker refuses images of more than 127 layers; a layer is at most 3 files
EXPANSION_MAX = 50  # bytes unpacked per byte downloaded, past EXPANSION_FREE: a compression bomb
EXPANSION_FREE = 256 * 1024**2
# What `docker save` writes: Docker's layout (<v1 id>/layer.tar, <id>.json), OCI's (blobs/sha256/<digest>),
# both with manifest.json; and the files this runner ignores (index.json, oci-layout, repositories).
NAMES = re.compile(r"manifest\.json|index\.json|oci-layout|repositories"
                   r"|[0-9a-f]{64}(\.json|\.tar|/layer\.tar|/json|/VERSION)?|blobs(/sha256(/[0-9a-f]{64})?)?")
SIZE = re.compile(r"[0-9]{1,19}")  # ASCII digits only (str.isdigit takes '²'), and a size a file can have
IGNORED = frozenset({"index.json", "oci-layout", "repositories"})  # names and indexes: the runner writes its own
COMPRESSIONS: tuple[tuple[bytes, Callable[[IO[bytes]], SupportsRead[bytes]]], ...] = (
    (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"BZh", lambda raw: bz2.BZ2File(raw, mode="rb")), (b"\xfd7zXZ\x00", lambda raw: lzma.LZMAFile(raw, mode="rb")))
FILES = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE)
# Entries no data follows in any reader (Go's archive/tar, which the engine uses, and Python's agree).
HEADER_ONLY = (tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE)
INODE = 4096  # what the smallest entry of an image costs the engine's disk
EXTENDED = (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE)


class BadArchive(ChallengeError):
    """An image archive that is not one loadable image; the message is shown to the participant
    (never transient: the same archive is refused again)."""


@dataclass(frozen=True)
class ArchiveImage:
    """The one image an archive holds: its config's sha256 (the image ID Docker gives it) and its layer count."""

    config_sha256: str
    layers: int

    @property
    def image_id(self) -> str:
        return f"sha256:{self.config_sha256}"


@dataclass(frozen=True)
class _Stored:
    """A regular file of the archive, unpacked into the scratch folder, with its sha256."""

    path: Path
    size: int
    sha256: str


def sanitize(source: Path, target: Path, *, max_bytes: int) -> ArchiveImage:
    """Rebuild the archive at `source` (a tar, optionally gzip, bzip2 or xz compressed) as a plain tar at
    `target` holding its one image and nothing else (see the module's docstring); raises BadArchive for
    anything that is not that."""
    try:
        with tempfile.TemporaryDirectory(prefix="challenge-unpack-", dir=target.parent) as scratch:
            return _rebuild(_unpack(source, Path(scratch), max_bytes), target, max_bytes)
    except BaseException:
        target.unlink(missing_ok=True)
        raise


# --- reading: every member checked, every read bounded -------------------------------------------


def _unpack(source: Path, scratch: Path, max_bytes: int) -> dict[str, _Stored]:
    """Each regular file the archive holds, by name, unpacked into `scratch`."""
    stored: dict[str, _Stored] = {}
    with open(source, "rb") as raw:
        stream = _Counted(_decompressed(raw), raw, max_bytes)
        for count, (name, size, folder) in enumerate(_members(stream), 1):
            if count > MAX_MEMBERS:
                raise BadArchive(f"the archive holds more than {MAX_MEMBERS} entries")
            if name in stored:
                raise BadArchive(f"the archive holds {name!r} twice")
            if folder or name in IGNORED:
                _skip(stream, size)
                continue
            stored[name] = _store(stream, size, scratch / str(count))
            if name.startswith("blobs/sha256/") and stored[name].sha256 != name.rpartition("/")[2]:
                raise BadArchive(f"{name} does not hold what its name says (its sha256 is {stored[name].sha256})")
    return stored


def _decompressed(raw: IO[bytes]) -> SupportsRead[bytes]:
    magic = raw.read(6)
    raw.seek(0)
    for prefix, opener in COMPRESSIONS:
        if magic.startswith(prefix):
            return opener(raw)
    return raw


class _Counted:
    """The unpacked tar stream, counting what it gives: at most `max_bytes` in all, and at most
    EXPANSION_MAX times what was read from the file (past EXPANSION_FREE)."""

    def __init__(self, stream: SupportsRead[bytes], raw: IO[bytes], max_bytes: int, what: str = "the archive"):
        self.stream, self.raw, self.max_bytes, self.given, self.what = stream, raw, max_bytes, 0, what

    def read(self, size: int) -> bytes:
        try:
            data = self.stream.read(size)
        except (EOFError, OSError, lzma.LZMAError, zlib.error) as exc:  # the compression is broken, not the disk
            raise BadArchive(f"not a docker save archive (it cannot be decompressed: {exc})") from None
        self.given += len(data)
        if self.given > self.max_bytes:
            raise BadArchive(f"{self.what} unpacks to more than {self.max_bytes // 1024**2} MiB")
        if self.given > EXPANSION_FREE + EXPANSION_MAX * self.raw.tell():
            raise BadArchive(f"{self.what} unpacks to more than {EXPANSION_MAX} times its size; upload the "
                             "archive docker save writes, uncompressed (docker save -o algorithm.tar IMAGE)")
        return data

    def exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.read(min(CHUNK, size - len(data)))
            if not chunk:
                raise BadArchive("the archive ends in the middle of an entry")
            data += chunk
        return data


@dataclass(frozen=True)
class _Entry:
    """One entry of a tar stream as its headers describe it (a PAX or GNU header before it applied)."""

    name: str
    size: int
    type: bytes
    sparse: bool  # a GNU sparse file, in either of its forms: its size is not what it unpacks to


def _entries(stream: _Counted, errors: str = "strict") -> Iterator[_Entry]:
    """Each entry of a tar stream, every header read bounded; its data is read (or skipped) before the next.
    `errors` says how names that are not UTF-8 are read (an image's layers may hold such files)."""
    extended: dict[str, str] = {}  # a PAX header's path and size, for the entry after it
    long_name: str | None = None  # a GNU long name, likewise
    while True:
        block = stream.exactly(BLOCK)
        if block == bytes(BLOCK):
            return  # the end of the archive
        info = _header(block, errors)
        if info.type in EXTENDED:
            extended = _pax(_extended(stream, info), errors)
            continue
        if info.type == tarfile.GNUTYPE_LONGNAME:
            long_name = _utf8(_extended(stream, info).rstrip(b"\0"), "a long name", errors)
            continue
        name = extended.get("path", long_name or info.name)
        size = int(extended["size"]) if "size" in extended else info.size
        sparse = "sparse" in extended or info.type == tarfile.GNUTYPE_SPARSE
        extended, long_name = {}, None
        if size < 0:  # a base-256 size field can say -1: "read everything"
            raise BadArchive(f"{name[:120]!r} has a negative size: not a docker save archive")
        if info.type in HEADER_ONLY and size:  # readers disagree on whether data follows: never guess
            raise BadArchive(f"{printable(name, 120)} is {_kind(info.type)} that carries data: not a docker save "
                             "archive")
        if info.type not in (*FILES, *HEADER_ONLY, tarfile.GNUTYPE_SPARSE):
            raise BadArchive(f"{printable(name, 120)} is {_kind(info.type)}: not a docker save archive")
        yield _Entry(name, size, info.type, sparse)


def _members(stream: _Counted) -> Iterator[tuple[str, int, bool]]:
    """(name, size, whether a folder) of each entry of a docker save archive: only files and folders under
    the names docker save writes."""
    for entry in _entries(stream):
        if entry.type not in (*FILES, tarfile.DIRTYPE) or entry.sparse:
            kind = "a sparse file" if entry.sparse else _kind(entry.type)
            raise BadArchive(f"{entry.name[:120]!r} is {kind}; a docker save archive holds only files and folders")
        _check_name(entry.name)
        yield entry.name, entry.size, entry.type == tarfile.DIRTYPE


def _layer_bytes(layer: Path, budget: int) -> int:
    """What a layer unpacks to, each file by its size, refused past `budget` or holding a sparse file (a
    20 KB layer of one sparse file once made the engine write 2 GiB)."""
    total = 0
    with open(layer, "rb") as raw:
        stream = _Counted(_decompressed(raw), raw, budget, what="the image")
        for entry in _entries(stream, errors="surrogateescape"):
            if entry.sparse:
                raise BadArchive(f"a layer holds a sparse file ({printable(entry.name, 120)}); an image's files are "
                                 "unpacked whole")
            total += max(entry.size, INODE)  # an empty file, a folder or a link still takes a block on disk
            if total > budget:
                raise BadArchive(f"the image unpacks to more than {budget // 1024**2} MiB")
            _skip(stream, entry.size)
    return total


def _header(block: bytes, errors: str = "strict") -> tarfile.TarInfo:
    try:
        return tarfile.TarInfo.frombuf(block, "utf-8", errors)
    except UnicodeDecodeError:
        raise BadArchive("an entry's name is not UTF-8") from None
    except tarfile.HeaderError as exc:
        raise BadArchive(f"not a docker save archive (a broken tar header: {exc})") from None


def _extended(stream: _Counted, info: tarfile.TarInfo) -> bytes:
    """A PAX or GNU header's own data, refused before it is read when it is larger than any name needs."""
    if not 0 <= info.size <= HEADER_MAX:
        raise BadArchive(f"an extended tar header of {info.size} bytes; at most {HEADER_MAX} are accepted")
    data = stream.exactly(info.size)
    _skip_padding(stream, info.size)
    return data


def _pax(data: bytes, errors: str = "strict") -> dict[str, str]:
    """The path and size a PAX header sets (`<length> <key>=<value>\\n` records), and `sparse` when it
    describes a GNU sparse file; other keys are ignored."""
    found, at = {}, 0
    while at < len(data):
        length, space, _ = data[at:at + 20].partition(b" ")
        if not space or not length.isdigit() or int(length) < 5 or at + int(length) > len(data):
            raise BadArchive("not a docker save archive (a broken PAX header)")
        record, at = data[at + len(length) + 1:at + int(length)], at + int(length)
        key, equals, value = record.partition(b"=")
        if not equals or not record.endswith(b"\n"):
            raise BadArchive("not a docker save archive (a broken PAX header)")
        if key in (b"path", b"size"):
            found[key.decode()] = _utf8(value[:-1], "a PAX path", errors)
        elif key.startswith(b"GNU.sparse."):
            found["sparse"] = "1"
    if "size" in found and not SIZE.fullmatch(found["size"]):
        raise BadArchive("not a docker save archive (a PAX size that is not a number of bytes)")
    return found


def _utf8(data: bytes, what: str, errors: str = "strict") -> str:
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError:
        raise BadArchive(f"{what} in the archive is not UTF-8") from None


def _check_name(name: str) -> None:
    """Only the names docker save writes, each written as it is meant: no `./`, `..`, `//` or `/` first."""
    if not NAMES.fullmatch(name.removesuffix("/")):
        raise BadArchive(f"the archive holds {name[:120]!r}, which no docker save archive holds")


def _kind(type: bytes) -> str:
    kinds = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link", tarfile.CHRTYPE: "a device",
             tarfile.BLKTYPE: "a device", tarfile.FIFOTYPE: "a FIFO", tarfile.DIRTYPE: "a folder"}
    return kinds.get(type, f"an entry of type {type!r}")


def _store(stream: _Counted, size: int, path: Path) -> _Stored:
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        for chunk in _data(stream, size):
            digest.update(chunk)
            out.write(chunk)
    return _Stored(path, size, digest.hexdigest())


def _skip(stream: _Counted, size: int) -> None:
    for _ in _data(stream, size):
        pass


def _data(stream: _Counted, size: int) -> Iterator[bytes]:
    left = size
    while left:
        chunk = stream.read(min(CHUNK, left))
        if not chunk:
            raise BadArchive("the archive ends in the middle of an entry")
        left -= len(chunk)
        yield chunk
    _skip_padding(stream, size)


def _skip_padding(stream: _Counted, size: int) -> None:
    if size % BLOCK:
        stream.exactly(BLOCK - size % BLOCK)


# --- rebuilding: the image's config and layers under a manifest the runner writes -------------------


def _rebuild(stored: dict[str, _Stored], target: Path, max_bytes: int) -> ArchiveImage:
    config_name, layer_names = _manifest_entry(stored)
    config = _named(stored, config_name, "its config")
    layers = [_named(stored, name, "a layer") for name in layer_names]
    _check_config(config, len(layers))
    budget = max_bytes
    for layer in dict.fromkeys(layers):  # what the engine will write to its disk, each layer once
        budget -= _layer_bytes(layer.path, budget)
    manifest = [{"Config": _blob(config), "RepoTags": [], "Layers": [_blob(layer) for layer in layers]}]
    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as out:
        _add(out, MANIFEST, json.dumps(manifest).encode())
        for blob in {_blob(item): item for item in (config, *layers)}.items():
            _add_file(out, *blob)
    return ArchiveImage(config_sha256=config.sha256, layers=len(layers))


def _manifest_entry(stored: dict[str, _Stored]) -> tuple[str, list[str]]:
    """What the manifest's one image names: its config and its layers."""
    found = stored.get(MANIFEST)
    if found is None:
        raise BadArchive(f"holds no {MANIFEST}: not a docker save archive (docker save -o algorithm.tar IMAGE)")
    document = _json(found, METADATA_MAX_BYTES, MANIFEST)
    if not isinstance(document, list) or not all(isinstance(entry, dict) for entry in document):
        raise BadArchive(f"{MANIFEST} is not a list of images")
    if len(document) != 1:
        raise BadArchive(f"the archive holds {len(document)} images; submit exactly one (docker save IMAGE)")
    entry = document[0]
    config, layers = entry.get("Config"), entry.get("Layers")
    if not isinstance(config, str) or not isinstance(layers, list) or not all(isinstance(n, str) for n in layers):
        raise BadArchive(f"{MANIFEST} names no Config and Layers")
    return config, layers


def _named(stored: dict[str, _Stored], name: str, what: str) -> _Stored:
    if name not in stored:
        raise BadArchive(f"{MANIFEST} names {name[:120]!r} as {what}, which the archive does not hold")
    return stored[name]


def _check_config(config: _Stored, layers: int) -> None:
    document = _json(config, CONFIG_MAX_BYTES, "the image's config")
    rootfs = document.get("rootfs") if isinstance(document, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list):
        raise BadArchive("the image's config lists no layers (rootfs.diff_ids): not a docker save archive")
    if len(diff_ids) != layers:
        raise BadArchive(f"the image's config lists {len(diff_ids)} layers and {MANIFEST} {layers}")


def _json(found: _Stored, limit: int, what: str) -> object:
    if found.size > limit:
        raise BadArchive(f"{what} is larger than {limit} bytes")
    try:
        return json.loads(found.path.read_bytes())
    except (ValueError, RecursionError):
        raise BadArchive(f"{what} is not valid JSON") from None


def _blob(item: _Stored) -> str:
    return f"blobs/sha256/{item.sha256}"


def _add(out: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    out.addfile(info, io.BytesIO(data))


def _add_file(out: tarfile.TarFile, name: str, item: _Stored) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = item.size, 0o644
    with open(item.path, "rb") as data:
        out.addfile(info, data)

