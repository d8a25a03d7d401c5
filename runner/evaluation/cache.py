"""Algorithm outputs kept on the runner, keyed by image ID and input content.

Re-evaluating a submission (a new evaluation container, a re-run) then re-scores stored outputs
instead of spending GPU time running the same image on the same case again. Outputs are the
participant's, so the cache is bounded: an entry larger than a quarter of the budget is not kept,
entries unused for `max_age_s` go, and then the least recently used ones until the whole fits in
`max_bytes` (`evict`, called when a runner starts and after each submission).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, cast

from runner.execution.images import tree_hash
from runner.execution.sandbox import RunSpec
from runner.settings import CACHE_MAX_BYTES, CACHE_MAX_DAYS

DEFAULT_MAX_BYTES = CACHE_MAX_BYTES
DEFAULT_MAX_AGE_S = CACHE_MAX_DAYS * 86400
# What a RunSpec holds that is not a condition of the run's outputs: the image (keyed as given, with its model),
# which job and checkout it was for, the watch that stops a training run; mounts and GPUs count by where and
# how many, never by which host folder or which GPU.
ELSEWHERE = ("image", "job", "checkout", "watch", "mounts", "gpus")
STAGING_MAX_AGE_S = 3600  # a staging folder this old belongs to a runner killed while storing


@dataclass(frozen=True)
class Entry:
    path: Path
    size: int
    used: float  # when it was stored or last reused (the record's mtime)


class OutputCache:
    """Stored outputs and their run records under `root`, one entry per (image ID, input content)."""

    def __init__(self, root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_age_s: float = DEFAULT_MAX_AGE_S):
        self.root, self.max_bytes, self.max_age_s = root, max_bytes, max_age_s

    @staticmethod
    def key(image_id: str, inputs: Path, spec: RunSpec) -> str:
        """Equal for the same image on the same input bytes in the same run (`spec`: its command, where it reads
        and writes, its limits, user, runtime and number of GPUs), whatever the folders are called: outputs and
        times of a run with a longer time limit or another command are never reused for this one."""
        conditions = {f.name: getattr(spec, f.name) for f in fields(spec) if f.name not in ELSEWHERE}
        conditions.update(mounts=[(m.target, m.read_only) for m in spec.mounts], gpus=len(spec.gpus))
        text = json.dumps(conditions, sort_keys=True, default=repr)
        return hashlib.sha256(f"{image_id}\0{tree_hash(inputs)}\0{text}".encode()).hexdigest()

    def get(self, key: str, dest: Path) -> dict[str, Any] | None:
        """Copy the stored outputs into `dest` and return their run record, or None if absent."""
        entry = self.root / key[:2] / key
        record = entry / "record.json"
        if not record.is_file():
            return None
        shutil.copytree(entry / "outputs", dest, dirs_exist_ok=True)
        os.utime(record)  # recently used: evicted last
        return cast(dict[str, Any], json.loads(record.read_text()))  # the run record put() wrote

    def put(self, key: str, outputs: Path, *, record: dict[str, Any]) -> bool:
        """Store atomically (a half-written entry is never visible under its key); False if the
        outputs are too large to be worth keeping."""
        entry = self.root / key[:2] / key
        if entry.exists():
            return True
        size = folder_size(outputs)
        if size > self.max_bytes // 4:
            return False
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".tmp-"))
        shutil.copytree(outputs, staging / "outputs")
        (staging / "size").write_text(str(size))
        (staging / "record.json").write_text(json.dumps(record))
        try:
            os.rename(staging, entry)
        except OSError:  # another runner stored the same entry first
            shutil.rmtree(staging, ignore_errors=True)
        return True

    def entries(self) -> list[Entry]:
        found = []
        for entry in self.root.glob("??/*"):
            record = entry / "record.json"
            if entry.name.startswith(".tmp-") or not record.is_file():
                continue
            try:
                size = int((entry / "size").read_text())
            except (OSError, ValueError):  # stored before sizes were recorded
                size = folder_size(entry / "outputs")
            found.append(Entry(entry, size, record.stat().st_mtime))
        return found

    def evict(self, *, now: float | None = None) -> int:
        """Remove expired entries, then the least recently used until the cache fits; bytes freed.
        Several runners may evict at once: an entry another one removed first is simply gone."""
        now = time.time() if now is None else now
        self._sweep_staging(now)
        entries = sorted(self.entries(), key=lambda e: e.used)
        total, freed = sum(e.size for e in entries), 0
        for entry in entries:
            if now - entry.used <= self.max_age_s and total <= self.max_bytes:
                break
            shutil.rmtree(entry.path, ignore_errors=True)
            total -= entry.size
            freed += entry.size
        return freed

    def _sweep_staging(self, now: float) -> None:
        for staging in self.root.glob("??/.tmp-*"):
            try:
                if now - staging.stat().st_mtime > STAGING_MAX_AGE_S:
                    shutil.rmtree(staging, ignore_errors=True)
            except FileNotFoundError:
                continue


BLOCK = 4096  # what the smallest entry takes of a disk: a block, and its inode besides


def folder_size(folder: Path) -> int:
    """What `folder` takes of a disk: each entry under it (files, folders and all) by its size rounded up to a
    whole block. Outputs are the participant's: 100,000 empty folders take 390 MiB and as many inodes, and
    counted by their files' bytes alone they were 0 and never evicted."""
    return sum(-(-max(p.lstat().st_size, 1) // BLOCK) * BLOCK for p in folder.rglob("*"))
