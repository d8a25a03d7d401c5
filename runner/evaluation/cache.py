"""Algorithm outputs kept on the runner, keyed by image ID and input content.

Re-evaluating a submission (a new evaluation container, a re-run) then re-scores stored outputs
instead of spending GPU time running the same image on the same case again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from runner.execution.images import tree_hash


class OutputCache:
    """Stored outputs and their run records under `root`, one entry per (image ID, input content)."""

    def __init__(self, root: Path):
        self.root = root

    @staticmethod
    def key(image_id: str, inputs: Path) -> str:
        """Equal for the same image on the same input bytes, whatever the folder is called."""
        return hashlib.sha256(f"{image_id}\0{tree_hash(inputs)}".encode()).hexdigest()

    def get(self, key: str, dest: Path) -> dict[str, Any] | None:
        """Copy the stored outputs into `dest` and return their run record, or None if absent."""
        entry = self.root / key[:2] / key
        if not (entry / "record.json").is_file():
            return None
        shutil.copytree(entry / "outputs", dest, dirs_exist_ok=True)
        return json.loads((entry / "record.json").read_text())

    def put(self, key: str, outputs: Path, *, record: dict[str, Any]) -> None:
        """Store atomically: a half-written entry is never visible under its key."""
        entry = self.root / key[:2] / key
        if entry.exists():
            return
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".tmp-"))
        shutil.copytree(outputs, staging / "outputs")
        (staging / "record.json").write_text(json.dumps(record))
        try:
            os.rename(staging, entry)
        except OSError:  # another runner stored the same entry first
            shutil.rmtree(staging, ignore_errors=True)
