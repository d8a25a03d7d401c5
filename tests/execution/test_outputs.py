"""Untrusted archives and output streams are unpacked without leaving their folder."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from runner.execution.outputs import (
    OutputLimits,
    UnsafeOutput,
    extract_tar,
    extract_zip,
)


def make_zip(path, entries: dict[str, bytes], *, link: str | None = None):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        if link:
            info = zipfile.ZipInfo("link")
            info.external_attr = (0o120777 << 16)
            archive.writestr(info, link)
    return path


def test_zip_is_unpacked(tmp_path):
    archive = make_zip(tmp_path / "p.zip", {"a.csv": b"1", "sub/b.csv": b"2"})
    target = tmp_path / "out"
    target.mkdir()
    assert extract_zip(archive, target) == 2
    assert (target / "sub" / "b.csv").read_bytes() == b"2"


@pytest.mark.parametrize("name", ["../evil.csv", "/etc/evil.csv", "a/../../evil.csv"])
def test_zip_path_traversal_is_refused(tmp_path, name):
    archive = make_zip(tmp_path / "p.zip", {name: b"x"})
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeOutput, match="points outside"):
        extract_zip(archive, tmp_path / "out")
    assert not (tmp_path / "evil.csv").exists()


def test_zip_link_is_refused(tmp_path):
    archive = make_zip(tmp_path / "p.zip", {}, link="/etc/passwd")
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeOutput, match="is a link"):
        extract_zip(archive, tmp_path / "out")


def test_zip_bomb_is_refused_before_writing(tmp_path):
    archive = make_zip(tmp_path / "bomb.zip", {"zeros.bin": b"\0" * (20 * 1024**2)})
    assert archive.stat().st_size < 100_000  # compresses about a thousandfold
    target = tmp_path / "out"
    target.mkdir()
    with pytest.raises(UnsafeOutput, match="unpacks to more than"):
        extract_zip(archive, target, limits=OutputLimits(max_bytes=10 * 1024**2))
    assert list(target.iterdir()) == []


def test_zip_with_too_many_files_is_refused(tmp_path):
    archive = make_zip(tmp_path / "many.zip", {f"f{i}.csv": b"1" for i in range(20)})
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeOutput, match="holds 20 files; at most 10"):
        extract_zip(archive, tmp_path / "out", limits=OutputLimits(max_files=10))


def tar_stream(members: list[tarfile.TarInfo], data: dict[str, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for member in members:
            archive.addfile(member, io.BytesIO(data[member.name]) if member.name in data else None)
    buffer.seek(0)
    return buffer


def test_tar_of_output_folder_is_stripped_and_written(tmp_path):
    folder = tarfile.TarInfo("output")
    folder.type = tarfile.DIRTYPE
    file = tarfile.TarInfo("output/case-000.npy")
    file.size = 3
    stream = tar_stream([folder, file], {"output/case-000.npy": b"abc"})
    assert extract_tar(stream, tmp_path, strip="output") == 1
    assert (tmp_path / "case-000.npy").read_bytes() == b"abc"


@pytest.mark.parametrize("kind, message", [(tarfile.SYMTYPE, "is a link"), (tarfile.LNKTYPE, "is a link"),
                                           (tarfile.FIFOTYPE, "not a regular file")])
def test_tar_links_and_devices_are_refused(tmp_path, kind, message):
    member = tarfile.TarInfo("output/x")
    member.type = kind
    member.linkname = "/etc/shadow"
    with pytest.raises(UnsafeOutput, match=message):
        extract_tar(tar_stream([member], {}), tmp_path, strip="output")


def test_tar_over_the_byte_limit_is_refused(tmp_path):
    member = tarfile.TarInfo("output/big")
    member.size = 2048
    with pytest.raises(UnsafeOutput, match="more than 1024 bytes"):
        extract_tar(tar_stream([member], {"output/big": b"x" * 2048}), tmp_path, strip="output",
                    limits=OutputLimits(max_bytes=1024))


def test_a_zip_file_named_as_the_folder_itself_is_refused(tmp_path):
    """Written at the folder's own path, it raised IsADirectoryError: the runner's trouble, pending for ever."""
    archive = make_zip(tmp_path / "p.zip", {".": b"x"})
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeOutput, match="names the folder itself"):
        extract_zip(archive, tmp_path / "out")


def test_a_tar_file_named_as_the_folder_itself_is_refused(tmp_path):
    member = tarfile.TarInfo("output/.")
    member.size = 1
    with pytest.raises(UnsafeOutput, match="names the folder itself"):
        extract_tar(tar_stream([member], {"output/.": b"x"}), tmp_path, strip="output")


@pytest.mark.parametrize("name", ["x" * 256 + ".csv", "a/" + "é" * 128])
def test_a_zip_name_no_file_system_holds_is_refused(tmp_path, name):
    """Written, it failed with ENAMETOOLONG: the runner's trouble, and the submission pending for ever."""
    archive = make_zip(tmp_path / "p.zip", {name: b"x"})
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeOutput, match="longer than a file system holds"):
        extract_zip(archive, tmp_path / "out")
