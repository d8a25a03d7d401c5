"""ImageFiles: what was read of an image, kept by its ID (never by a name), whole or not at all."""

from __future__ import annotations

from runner.execution.trusted import ImageFiles

ID = "sha256:" + "ab" * 32
PATHS = ("/etc/passwd", "/etc/group")


def test_files_are_kept_by_image_id_across_processes(tmp_path):
    ImageFiles(tmp_path).put(ID, PATHS, ["root:x:0:0::/root:/bin/sh\n", None])
    assert ImageFiles(tmp_path).get(ID, PATHS) == ["root:x:0:0::/root:/bin/sh\n", None]
    assert [p.name for p in tmp_path.iterdir()] == [f"{'ab' * 32}.json"]  # no part file left


def test_a_name_is_never_kept(tmp_path):
    for ref in ("python:3.11-slim", "sha256:" + "ab" * 31, f"{ID}/../x", "registry/x@" + ID):
        files = ImageFiles(tmp_path)
        files.put(ref, PATHS, ["", ""])
        assert files.get(ref, PATHS) is None
    assert not any(tmp_path.iterdir())


def test_a_damaged_or_partial_record_is_read_again(tmp_path):
    record = tmp_path / f"{'ab' * 32}.json"
    for text in ("{", "[]", '{"/etc/passwd": ""}', '{"/etc/passwd": "", "/etc/group": 1}'):
        record.write_text(text)
        assert ImageFiles(tmp_path).get(ID, PATHS) is None


def test_without_a_folder_they_are_kept_in_memory_only():
    files = ImageFiles()
    files.put(ID, PATHS, ["a", "b"])
    assert files.get(ID, PATHS) == ["a", "b"]
    assert ImageFiles().get(ID, PATHS) is None
