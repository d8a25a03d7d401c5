"""What produced a result: the files, images and hidden data an evaluation used, named by their hashes.

The hidden data is named by a keyed hash (HMAC-SHA256 under a key kept in the data root, never
committed): a reader can tell two results were scored on the same data, but cannot test guesses
of a small ground truth (ten binary labels) against a plain hash. Copy `DATA_KEY` with the data to
every runner that serves a phase, and their manifests agree.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from functools import cache
from pathlib import Path

from runner.evaluation.failures import RunnerError
from runner.execution.images import tree_hash
from runner.tree.gitfiles import blob_id, head_commit
from runner.tree.result_model import Provenance
from runner.tree.submission_model import Submission

DATA_KEY = ".manifest-key"  # in the data root: the key of every data hash of this runner


def provenance(submission: Submission, *, phase_file: Path, root: Path, data: dict[str, Path], data_root: Path,
               evaluation_image: str, evaluation_context: str | None) -> Provenance:
    """The provenance of one evaluation (`signed_at` is filled in when the record is signed)."""
    hashes = data_hashes(data, key=data_key(data_root))
    return Provenance(
        submission_blob=blob_id(submission.path.read_bytes()),
        phase_blob=blob_id(phase_file.read_bytes()),
        algorithm=pinned_digest(submission),
        evaluation_image=evaluation_image, evaluation_context=evaluation_context,
        data=hashes, data_manifest=manifest(hashes),
        runner_commit=head_commit(root), signed_at="")


def pinned_digest(submission: Submission) -> str | None:
    """What the participant pinned, as provenance records it: the image's digest, the archive's or the
    predictions' sha256 (tree.sharing.algorithm_identity names an algorithm for comparing participants)."""
    if submission.image:
        return submission.image
    if submission.image_archive:
        return f"sha256:{submission.image_archive.sha256}"
    return f"sha256:{submission.predictions_sha256}" if submission.predictions_sha256 else None


def data_hashes(folders: dict[str, Path], *, key: bytes) -> dict[str, str]:
    """Each hidden data folder's keyed content hash, by its name (inputs, ground-truth, training)."""
    return {name: "hmac-sha256:" + hmac.new(key, _content_hash(folder).encode(), hashlib.sha256).hexdigest()
            for name, folder in sorted(folders.items())}


def manifest(hashes: dict[str, str]) -> str:
    """One name for all of a result's data: rows with equal manifests were scored on equal data."""
    text = "\n".join(f"{name} {value}" for name, value in sorted(hashes.items()))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def data_key(data_root: Path) -> bytes:
    """The data root's hashing key, made (mode 0600) the first time it is needed. RunnerError, naming the
    file and its fix, when it cannot be read or made: every submission waits rather than go unhashed."""
    path = data_root / DATA_KEY
    try:
        return read_data_key(path)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another runner process made it first
        return read_data_key(path)
    except OSError as exc:
        raise RunnerError(f"{path}: cannot make the hidden data's hashing key ({exc.strerror}); make it once as the "
                          f"data's owner, readable by the runner: {make_key_command(path)}") from None
    key = secrets.token_bytes(32)
    with os.fdopen(fd, "w") as handle:
        handle.write(key.hex() + "\n")
    return key


def make_key_command(path: Path) -> str:
    """The shell command that makes a hashing key at `path` by hand, as `data_key` makes it."""
    return f"python3 -c 'import secrets; print(secrets.token_hex(32))' > {path} && chmod 600 {path}"


def read_data_key(path: Path) -> bytes:
    """The hashing key at `path`: FileNotFoundError when there is none, RunnerError when it is unusable."""
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise RunnerError(f"{path}: not a readable hashing key of 64 hex digits ({exc})") from None
    if len(key) < 16:
        raise RunnerError(f"{path}: the hashing key is {len(key)} bytes; it must hold at least 16 (32 are made)")
    return key


def _content_hash(folder: Path) -> str:
    """tree_hash of `folder`, computed again in this process only when a file's size, time or inode
    changed: a warm runner scores many submissions of one phase on data that is large and read-only (a
    new `challenge evaluate` process hashes it again)."""
    return _hashed(folder, _stat_key(folder))


@cache
def _hashed(folder: Path, _stat: str) -> str:
    return tree_hash(folder)


def _stat_key(folder: Path) -> str:
    lines = []
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        lines.append(f"{path.relative_to(folder)} {info.st_size} {info.st_mtime_ns} {info.st_ino} {info.st_mode}")
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()
