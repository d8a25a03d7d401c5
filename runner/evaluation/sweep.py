"""What runners that died left behind, removed when a runner starts; and the output cache kept in bounds.

A runner killed at any point can leave its containers running (past their time limit, until
removed), its output volumes, and its scratch folder (`challenge-eval-<pid>-*`). Each is marked
with the process that made it, so any runner on the host removes what belongs to a process that
no longer exists, and several runners sweeping at once do not trip over each other.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from runner.evaluation.job import WORK_PREFIX, RunnerConfig
from runner.execution.sandbox import Executor, Log, SandboxError, process_alive

UNMARKED_MAX_AGE_S = 86400  # scratch folders from before they carried their runner's pid
_OWNER = re.compile(rf"{re.escape(WORK_PREFIX)}(\d+)-")


@dataclass(frozen=True)
class Swept:
    runs_and_areas: int
    folders: int
    cache_bytes: int


def sweep(executor: Executor, config: RunnerConfig, *, log: Log) -> Swept:
    """Remove dead runners' containers, volumes and scratch folders; evict stale cached outputs."""
    try:
        orphans = executor.remove_orphans()
    except SandboxError as exc:  # the engine is down: each submission will say so, left pending
        log(f"could not remove what dead runners left: {exc}")
        orphans = 0
    folders = sweep_work_dirs(config.work_dir or Path(tempfile.gettempdir()))
    cache = config.output_cache()
    freed = cache.evict() if cache else 0
    if orphans or folders or freed:
        log(f"removed {orphans} container(s) or volume(s) and {folders} scratch folder(s) of dead runners; "
            f"{freed // 1024**2} MiB of cached outputs evicted")
    return Swept(orphans, folders, freed)


def sweep_work_dirs(root: Path, *, now: float | None = None) -> int:
    """Remove scratch folders whose runner process is gone; how many."""
    now = time.time() if now is None else now
    removed = 0
    for folder in root.glob(f"{WORK_PREFIX}*"):
        try:
            dead = _dead(folder, now)
        except FileNotFoundError:  # another runner removed it first
            continue
        if dead and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def _dead(folder: Path, now: float) -> bool:
    match = _OWNER.match(folder.name)
    if match:
        return not process_alive(int(match.group(1)))
    return now - folder.stat().st_mtime > UNMARKED_MAX_AGE_S
