"""Copy untrusted container outputs and prediction archives onto the host without trusting them.

Only regular files and folders are accepted: a link (which could point at a host path), a device
or a name that climbs out of the target is refused, never followed. Counts and sizes are bounded
before anything is written, so an archive bomb is refused whole.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO

from runner.errors import ChallengeError, printable


class UnsafeOutput(ChallengeError, ValueError):
    """Outputs that were refused; the message is shown to the participant (never transient: the
    same outputs are refused again)."""


MAX_NAME_LENGTH = 1024
NAME_MAX = 255  # bytes of one part of a path, on Linux's file systems


@dataclass(frozen=True)
class OutputLimits:
    max_files: int = 100_000
    max_bytes: int = 8 * 1024**3

    def within(self, area_size: int) -> OutputLimits:
        """These limits for an output area of `area_size` bytes: files count by their apparent size, so
        a sparse file (12 GB that take no room in a 1 GiB tmpfs) is refused before the host writes it out."""
        return replace(self, max_bytes=min(self.max_bytes, area_size))


def safe_name(target: Path, name: str) -> Path:
    """The host path for an archive member, refusing absolute names and any '..', and names no file system
    holds (a part past NAME_MAX, the whole past MAX_NAME_LENGTH): writing those failed as the runner's trouble."""
    pure = PurePosixPath(name)
    parts = [p for p in pure.parts if p not in ("", ".")]
    if pure.is_absolute() or ".." in parts:
        raise UnsafeOutput(f"{name!r} points outside the output folder")
    if len(name) > MAX_NAME_LENGTH or any(len(os.fsencode(part)) > NAME_MAX for part in parts):
        raise UnsafeOutput(f"{printable(name, 60)!r} is a name longer than a file system holds")
    return target.joinpath(*parts) if parts else target


def safe_file(target: Path, name: str) -> Path:
    """`safe_name` of a file: one named as the folder itself ('.') is refused, never opened for writing there."""
    dest = safe_name(target, name)
    if dest == target:
        raise UnsafeOutput(f"{printable(name, 200)!r} names the folder itself, not a file in it")
    return dest


def extract_tar(stream: IO[bytes], target: Path, *, strip: str, limits: OutputLimits = OutputLimits()) -> int:
    """Extract a tar stream of a container folder (as the keeper agent sends it) into
    `target`, dropping the leading folder name `strip`. Returns the number of files written."""
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        members = _checked(_strip(archive, strip), limits)
        return _write_tar(archive, members, target)


def _strip(archive: tarfile.TarFile, prefix: str) -> Iterable[tuple[tarfile.TarInfo, str]]:
    for member in archive:
        name = member.name
        if name == prefix or name == f"{prefix}/":
            continue
        yield member, name[len(prefix) + 1:] if name.startswith(prefix + "/") else name


def _checked(members: Iterable[tuple[tarfile.TarInfo, str]],
             limits: OutputLimits) -> Iterator[tuple[tarfile.TarInfo, str]]:
    count = total = 0
    for member, name in members:
        if member.issym() or member.islnk():
            raise UnsafeOutput(f"/output/{printable(name, 200)} is a link; only regular files are accepted")
        if not (member.isfile() or member.isdir()):
            raise UnsafeOutput(f"/output/{printable(name, 200)} is not a regular file or folder")
        if len(name) > MAX_NAME_LENGTH:  # the host's own paths must stay under PATH_MAX
            raise UnsafeOutput(f"/output/{printable(name, 60)} is a path longer than {MAX_NAME_LENGTH} characters")
        count += 1
        total += member.size
        if count > limits.max_files:
            raise UnsafeOutput(f"more than {limits.max_files} files in /output")
        if total > limits.max_bytes:
            raise UnsafeOutput(f"/output holds more than {limits.max_bytes} bytes (each file counted by its "
                               "apparent size, sparse ones too)")
        yield member, name


def _write_tar(archive: tarfile.TarFile, members: Iterable[tuple[tarfile.TarInfo, str]], target: Path) -> int:
    written = 0
    for member, name in members:
        if member.isdir():
            safe_name(target, name).mkdir(parents=True, exist_ok=True)
            continue
        dest = safe_file(target, name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        source = archive.extractfile(member)
        if source is None:  # not a regular file: _checked refused those already
            raise UnsafeOutput(f"/output/{printable(name, 200)} is not a regular file or folder")
        with open(dest, "wb") as out:
            shutil.copyfileobj(source, out)
        written += 1
    return written


def extract_zip(path: Path, target: Path, *, limits: OutputLimits = OutputLimits()) -> int:
    """Unpack a predictions zip: sizes and count checked from the directory before writing,
    and bytes counted again while writing (a lying header cannot overrun the limit)."""
    with zipfile.ZipFile(path) as archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > limits.max_files:
            raise UnsafeOutput(f"the archive holds {len(members)} files; at most {limits.max_files} allowed")
        if sum(m.file_size for m in members) > limits.max_bytes:
            raise UnsafeOutput(f"the archive unpacks to more than {limits.max_bytes} bytes")
        _no_clashes([m.filename for m in members])
        budget = limits.max_bytes
        for member in members:
            if (member.external_attr >> 16) & 0o170000 == 0o120000:
                raise UnsafeOutput(f"{member.filename!r} is a link; only regular files are accepted")
            dest = safe_file(target, member.filename)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(dest, "wb") as out:
                budget -= _copy_bounded(src, out, budget)
        return len(members)


def _no_clashes(names: list[str]) -> None:
    """Refuse a name that is a file and also a folder of another name (`a` and `a/b`): one would break
    writing the other on the host."""
    files = {PurePosixPath(name).as_posix().strip("/") for name in names}
    for name in files:
        for parent in PurePosixPath(name).parents:
            if str(parent) in files:
                raise UnsafeOutput(f"{printable(str(parent), 200)!r} is a file and also a folder in the archive")


def _copy_bounded(src: IO[bytes], out: IO[bytes], budget: int) -> int:
    copied = 0
    while chunk := src.read(1024 * 1024):
        copied += len(chunk)
        if copied > budget:
            raise UnsafeOutput("the archive unpacks to more than its declared size allows")
        out.write(chunk)
    return copied
