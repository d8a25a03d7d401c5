"""The hidden data named by keyed hashes: equal data, equal manifest; changed data, another; no key, one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.evaluation.failures import RunnerError
from runner.evaluation.provenance import DATA_KEY, data_hashes, data_key, manifest


def write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


def test_data_hashes_follow_the_content_and_the_key(tmp_path):
    root = tmp_path / "data-root"
    write(root / "c" / "p" / "ground-truth", "labels.csv", "case,label\n1,0\n2,1\n")
    truth = root / "c" / "p" / "ground-truth"
    key = data_key(root)
    assert (root / DATA_KEY).stat().st_mode & 0o777 == 0o600 and data_key(root) == key
    first = data_hashes({"ground-truth": truth}, key=key)
    assert data_hashes({"ground-truth": truth}, key=key) == first
    assert data_hashes({"ground-truth": truth}, key=b"another key, another runner") != first
    # One label changed, at the same size and even the same time: the inode or time differs, so it is hashed again.
    (truth / "labels.csv").write_text("case,label\n1,1\n2,1\n")
    os.utime(truth / "labels.csv", ns=(0, 0))
    changed = data_hashes({"ground-truth": truth}, key=key)
    assert changed != first and manifest(changed) != manifest(first)
    assert first["ground-truth"].startswith("hmac-sha256:") and manifest(first).startswith("sha256:")


def test_a_data_root_where_no_key_can_be_made_is_one_line_naming_the_file(tmp_path):
    # Where even root may not create a file (a read-only data root is the case on a runner host).
    root = Path("/sys/kernel")
    if not root.is_dir():
        pytest.skip("no /sys/kernel here")
    with pytest.raises(RunnerError, match=f"{root / DATA_KEY}: cannot make the hidden data's hashing key"):
        data_key(root)
    folder = tmp_path / "bad"
    write(folder, DATA_KEY, "not hex\n")
    with pytest.raises(RunnerError, match="not a readable hashing key"):
        data_key(folder)
