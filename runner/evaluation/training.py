"""Type 3: a participant's image trained on hidden training data, within one time budget across restarts.

Each training submission has a folder on the runner (`RunnerConfig.training_dir/<submission key>/`)
that outlives the runner process:

- `state.json`: the image, the seconds of training spent so far, how many times it started, and
  whether it is still training, trained or failed;
- `checkpoints/`: mounted read-write at the phase's `checkpoint_path`. A runner that dies leaves it
  as it was, and the next one starts the train command again with it, charging the time already
  spent, so training resumes instead of starting over. Discarded, it is moved aside (`.discarded-*`)
  and removed (`TrainingFolder.discard_checkpoints`);
- `model/` and `model.sha256`: the model the training wrote into its size-limited model folder,
  mounted read-only into the predict runs, and its hash, kept for the organizers;
- `training.log`: every attempt's full log, for the organizers.

The time spent is written every `WATCH_INTERVAL_S` while training runs. When a runner dies, its
container may go on training until the next runner removes it; what it could still gain from that is
in the checkpoints, so a resume also charges up to the last change there (ctime, which a container
cannot set back).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from runner.errors import printable
from runner.evaluation.failures import ContainerFailed, RunnerError, SubmissionFailure
from runner.execution.images import tree_hash
from runner.execution.sandbox import Log, Mount, Outcome, OutputArea, RunSpec, SandboxError, last_line
from runner.tree.phase_model import Phase
from runner.tree.result_model import RunRecord

STATE = "state.json"
DISCARDED = ".discarded-"  # checkpoints moved aside to be removed, named by when
BLOCK = 4096
MAX_CHECKPOINT_ENTRIES = 100_000
MAX_CHECKPOINT_DEPTH = 32  # folders in folders: a checkpoint needs a few levels, never PATH_MAX
Status = Literal["training", "trained", "failed"]


@dataclass(frozen=True)
class TrainingState:
    """What a runner knows of one submission's training, saved after every change."""

    image_id: str
    used_s: float = 0.0  # seconds of training charged so far, resumes included
    attempts: int = 0  # how many times the train command started
    status: Status = "training"
    heartbeat_at: float = 0.0  # wall clock (epoch seconds) when used_s was last written
    model_sha256: str | None = None
    peak_memory_bytes: int | None = None
    gpu_memory_max_bytes: int | None = None
    last_line: str | None = None
    exit_code: int | None = None


@dataclass(frozen=True)
class Trained:
    """A trained model: the folder the predict runs mount, and the training's record."""

    model: Path
    record: RunRecord


@dataclass(frozen=True)
class Remover:
    """How checkpoints the runner's own user may not remove are removed (a folder the container closed,
    chmod 0500, and what is in it: a runner that is not root may not even enter it): by the executor, as
    the user the training runs as; and who hears of what even that leaves."""

    remove_as: Callable[[Path, str], bool]  # Executor.remove_as
    # uid:gid, as the submission's training runs (RunAs.user). Checkpoints of an earlier image of the same
    # submission (a new image starts over) may be another user's: the log then names what stays.
    user: str
    log: Log

    def remove(self, aside: Path, refused: OSError) -> None:
        """What is left of `aside` (the runner's own removal was `refused`) emptied by the executor, then
        `aside` itself; else one line in the log."""
        try:
            if self.remove_as(aside, self.user):
                aside.rmdir()
                return
            why = "it could not empty it"
        except SandboxError as exc:
            why = str(exc)
        except OSError as exc:
            why = f"{aside.name} itself: {exc.strerror or exc}"
        self.log(printable(f"training checkpoints left on this runner's disk in {aside}: the runner could not remove "
                           f"them ({refused.strerror or refused}), nor could a container running as {self.user} "
                           f"({why}); remove them as root", 1000))


class TrainingFolder:
    """The runner's folder for one submission's training (see the module's docstring). Without a `remover`,
    what the runner's own user may not remove of its checkpoints stays aside."""

    def __init__(self, root: Path, remover: Remover | None = None):
        self.root, self.remover = root, remover
        self.checkpoints, self.model, self.log = root / "checkpoints", root / "model", root / "training.log"

    def load(self) -> TrainingState | None:
        try:
            return TrainingState(**json.loads((self.root / STATE).read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as exc:
            raise RunnerError(f"training state {self.root / STATE} cannot be read ({exc}): remove that folder to "
                              "train this submission from the start") from None

    def save(self, state: TrainingState) -> TrainingState:
        """Written whole to a temporary file, then renamed: a runner killed mid-write leaves the old state."""
        temporary = self.root / f".{STATE}.{os.getpid()}"
        temporary.write_text(json.dumps(asdict(state)))
        os.replace(temporary, self.root / STATE)
        return state

    def reset(self, image_id: str) -> TrainingState:
        """A fresh start: no checkpoints, no model, no time spent. The old checkpoints are moved aside
        first (a runner that is not root may not be able to delete what the container made in them)."""
        self.root.mkdir(parents=True, exist_ok=True)
        # No other user of the host reaches checkpoints/ (which the container writes: a set-user-ID file
        # planted there would run as the container's uid, and a set-group-ID one with the hidden data's group).
        self.root.chmod(0o700)
        self.discard_checkpoints()
        shutil.rmtree(self.model, ignore_errors=True)  # the runner's own copy
        self.checkpoints.mkdir()
        self.checkpoints.chmod(0o777)  # the container's unprivileged user writes here
        (self.root / "model.sha256").unlink(missing_ok=True)
        return self.save(TrainingState(image_id=image_id))

    def discard_checkpoints(self) -> None:
        """checkpoints/ moved aside and removed, with what earlier discards left aside, however the container
        left them (nested past PATH_MAX, folders it closed): by the runner, what it may not remove by the
        remover. A failed training never keeps the runner's disk."""
        if self.checkpoints.exists():
            self.checkpoints.rename(self.root / f"{DISCARDED}{time.time_ns()}")
        for aside in sorted(self.root.glob(f"{DISCARDED}*")):
            try:
                remove_tree(aside)
            except OSError as refused:
                if self.remover is not None:
                    self.remover.remove(aside, refused)

    def scan(self) -> Scan:
        """What checkpoints/ holds now, read while the container may be changing it. Each folder is opened
        relative to its parent (never by a full path, which nesting past PATH_MAX would make unreadable,
        never through a link), one open folder per level; whatever cannot be measured (a folder the runner
        may not read, nesting deeper than MAX_CHECKPOINT_DEPTH, any error) is said in the scan, never raised."""
        total, count, latest = 0, 0, 0.0
        try:
            for where, info in _walk(self.checkpoints):
                latest = max(latest, info.st_ctime)
                if where == ".":
                    continue
                count += 1
                total += max(info.st_size, BLOCK)  # an empty file still takes an inode
                if count > MAX_CHECKPOINT_ENTRIES:
                    break
        except _Unmeasurable as exc:
            return Scan(total, count, latest, unreadable=exc.where, why=exc.why)
        return Scan(total, count, latest)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """This submission's training, by one runner at a time (the training folder may be shared by
        several checkouts through CHALLENGE_STATE_DIR, the evaluation lock is per checkout)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunnerError(f"another runner is training {self.root} now") from None
            yield


@dataclass(frozen=True)
class Scan:
    """checkpoints/ at one moment: its size (each entry at least a block), entries, last change, and
    where the runner could not measure it and why (its size unknown: the training is stopped)."""

    bytes: int
    entries: int
    last_change: float
    unreadable: str | None = None
    why: str = ""

    def refusal(self, phase: Phase) -> str | None:
        """Why training must stop with checkpoints like these; None while they are within bounds."""
        where, stopped = phase.checkpoint_path, "Training was stopped:"
        if self.unreadable is not None:
            return (f"{stopped} {where}/{printable(_shortened(self.unreadable), 240)} {self.why}, so the size of "
                    "its checkpoints is unknown")
        if self.entries > MAX_CHECKPOINT_ENTRIES:
            return f"{stopped} its checkpoints hold more than {MAX_CHECKPOINT_ENTRIES:,} files ({where})"
        if self.bytes > phase.checkpoint_max_size:
            return f"{stopped} its checkpoints exceeded {phase.checkpoint_max_size // 1024**2} MiB ({where})"
        return None


def _shortened(path: str, parts: int = 2) -> str:
    """The first `parts` folders of a path, `...` for the rest: a failure line is one short line."""
    names = path.split("/")
    return path if len(names) <= parts else "/".join(names[:parts]) + "/..."


class _Unmeasurable(Exception):
    def __init__(self, where: str, why: str):
        super().__init__(where, why)
        self.where, self.why = where, why


DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(path under `root`, lstat) of `root` itself (as '.') and of each entry in it, depth first. Folders
    are opened relative to their parent, one per level; an entry removed while it is read is skipped (a
    training rotating its checkpoints). Raises _Unmeasurable where it cannot go on."""
    try:
        top = os.open(root, DIRECTORY)
    except OSError as exc:
        raise _Unmeasurable(".", f"cannot be read ({exc.strerror})") from None
    levels = [(top, os.scandir(top), ".")]
    try:
        yield ".", os.fstat(top)
        while levels:
            fd, entries, where = levels[-1]
            entry = _next(entries, where)
            if entry is None:
                levels.pop()
                entries.close()
                os.close(fd)
                continue
            name = entry.name if where == "." else f"{where}/{entry.name}"
            found = _entered(fd, entry.name, name, depth=len(levels))
            if found is None:
                continue
            info, child = found
            if child is not None:
                levels.append((child, os.scandir(child), name))
            yield name, info
    finally:
        for fd, entries, _ in levels:
            entries.close()
            os.close(fd)


def _next(entries: Iterator[os.DirEntry[str]], where: str) -> os.DirEntry[str] | None:
    try:
        return next(entries, None)
    except OSError as exc:
        raise _Unmeasurable(where, f"cannot be read ({exc.strerror})") from None


def _entered(fd: int, entry: str, name: str, *, depth: int) -> tuple[os.stat_result, int | None] | None:
    """An entry's lstat, and the folder opened when it is one; None when it is gone meanwhile."""
    try:
        info = os.stat(entry, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            return info, None
        if depth > MAX_CHECKPOINT_DEPTH:
            raise _Unmeasurable(name, f"nests folders more than {MAX_CHECKPOINT_DEPTH} deep")
        return info, os.open(entry, DIRECTORY, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _Unmeasurable(name, f"cannot be read ({exc.strerror})") from None


def remove_tree(path: Path) -> None:
    """`path` and everything in it removed, however deep: one folder open at a time, each opened relative
    to its parent and left through `..`, never through a link, so neither PATH_MAX nor the open-file limit
    nor Python's recursion stops it (shutil.rmtree recurses). What it may not remove (a folder it may not
    enter or empty) it passes over, removing all the rest, and then raises the first refusal."""
    refused = _FirstRefusal()
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    todo: list[list[str]] = [[path.name]]  # per level entered: the folders still to remove there
    entered: list[str] = []
    try:
        while todo:
            if not todo[-1]:
                todo.pop()
                if not entered:
                    break
                up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = up
                refused.tried(os.rmdir, entered.pop(), dir_fd=fd)
                continue
            name = todo[-1].pop()
            try:
                child = os.open(name, DIRECTORY, dir_fd=fd)
            except OSError as exc:
                refused.keep(exc)
                continue
            os.close(fd)
            fd = child
            entered.append(name)
            todo.append(_unlink_all_but_folders(fd, refused))
    finally:
        os.close(fd)
    if refused.error is not None:
        raise refused.error


@dataclass
class _FirstRefusal:
    """The first OSError of a removal that goes on past them (the first alone: a million would each take memory)."""

    error: OSError | None = None

    def keep(self, error: OSError) -> None:
        self.error = self.error or error

    def tried(self, remove: Callable[..., None], name: str, *, dir_fd: int) -> None:
        """`remove(name, dir_fd=dir_fd)`; its OSError kept, never raised."""
        try:
            remove(name, dir_fd=dir_fd)
        except OSError as exc:
            self.keep(exc)


def _unlink_all_but_folders(fd: int, refused: _FirstRefusal) -> list[str]:
    """Remove every entry of the open folder `fd` but its folders (links as links); the folders' names.
    What it may not remove it passes over, keeping the refusal."""
    folders = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                refused.tried(os.unlink, entry.name, dir_fd=fd)
    return folders


@dataclass(frozen=True)
class TrainingRun:
    """What one training needs from the job around it."""

    phase: Phase
    image_ref: str
    image_id: str
    data: Path
    folder: TrainingFolder
    spec: Callable[..., RunSpec]  # the job's RunSpec factory (limits, runtime, GPUs, job label)
    run: Callable[[RunSpec, OutputArea], Outcome]  # runs a container into the model area, keeping its logs
    collect: Callable[[OutputArea, Path], None]  # the model area's files into a folder (SubmissionFailure if unsafe)
    gpu: str | None = None


def train(job: TrainingRun, area: OutputArea) -> Trained:
    """The trained model: reused when this image already trained here, resumed when a runner stopped
    it, else trained from the start. ContainerFailed when the training fails."""
    with job.folder.locked():
        return _train(job, area)


def _train(job: TrainingRun, area: OutputArea) -> Trained:
    folder, budget = job.folder, job.phase.training.time_limit
    state = folder.load()
    if state is None or state.image_id != job.image_id or state.status == "failed" or (
            state.status == "trained" and not _model_intact(folder, state)):
        state = folder.reset(job.image_id)  # a failed training asked to run again starts over
    elif state.status == "training" and state.attempts:
        state = folder.save(replace(state, used_s=_charged(state, folder)))
    if state.status == "trained":
        return Trained(folder.model, _record(job, state))
    if state.used_s >= budget:
        raise _failed(job, folder.save(replace(state, status="failed")), _over_budget(budget))
    outcome = _attempt(job, state, area)
    return _finish(job, outcome, area)


def _attempt(job: TrainingRun, state: TrainingState, area: OutputArea) -> Outcome:
    """One start of the train command, with what is left of the budget; the time spent is written as it goes."""
    folder, phase = job.folder, job.phase
    spent = state.used_s
    state = job.folder.save(replace(state, attempts=state.attempts + 1, heartbeat_at=time.time()))

    def watch(ran: float) -> str | None:
        with contextlib.suppress(OSError):  # the runner's disk, not the training: the time is written again at the end
            folder.save(replace(state, used_s=spent + ran, heartbeat_at=time.time()))
        return folder.scan().refusal(phase)  # never raises: what it cannot measure stops the training

    mounts = (Mount(job.data, phase.training_input_path), Mount(folder.checkpoints, phase.checkpoint_path, False))
    spec = replace(job.spec(job.image_id, mounts, phase.training, gpus=phase.training.gpus,
                            command=phase.training_command, output_path=phase.model_path),
                   time_limit=phase.training.time_limit - spent, watch=watch)
    outcome = job.run(spec, area)
    with folder.log.open("a") as log:
        log.write(f"--- attempt {state.attempts} (after {spent:.1f} s of training) ---\n{outcome.logs}\n")
    folder.save(replace(state, used_s=spent + outcome.wall_time_s, heartbeat_at=time.time(),
                        exit_code=outcome.exit_code, last_line=last_line(outcome.stderr_tail),
                        peak_memory_bytes=_peak(state.peak_memory_bytes, outcome.peak_memory_bytes),
                        gpu_memory_max_bytes=_peak(state.gpu_memory_max_bytes,
                                                   outcome.gpu.max_bytes if outcome.gpu else None)))
    return outcome


def _finish(job: TrainingRun, outcome: Outcome, area: OutputArea) -> Trained:
    """The model collected and hashed, or the training failed with the reason a participant sees."""
    folder, phase = job.folder, job.phase
    state = folder.load() or TrainingState(image_id=job.image_id)
    if failure := _failure(outcome, phase, folder):
        reason, by_checkpoints = failure
        raise _failed(job, folder.save(replace(state, status="failed")), reason, discard=by_checkpoints)
    shutil.rmtree(folder.model, ignore_errors=True)
    try:
        job.collect(area, folder.model)
    except SubmissionFailure as exc:
        raise _failed(job, folder.save(replace(state, status="failed")), exc.reason) from None
    if not any(p.is_file() for p in folder.model.rglob("*")):
        raise _failed(job, folder.save(replace(state, status="failed")),
                      f"Training failed: it wrote no model into {phase.model_path}")
    _readable(folder.model)
    digest = tree_hash(folder.model)
    (folder.root / "model.sha256").write_text(f"{digest}\n")
    state = folder.save(replace(state, status="trained", model_sha256=digest))
    return Trained(folder.model, _record(job, state))


def _failure(outcome: Outcome, phase: Phase, folder: TrainingFolder) -> tuple[str, bool] | None:
    """Why this training failed, as its participant reads it, and whether its checkpoints are the reason
    (the watch stops a training for nothing else); None if it did not fail."""
    if outcome.stopped:
        return outcome.stopped, True
    if outcome.timed_out:
        return _over_budget(phase.training.time_limit), False
    if not outcome.ok:
        return f"Training failed: {outcome.error_line(phase.training.time_limit) or ''}", False
    refusal = folder.scan().refusal(phase)  # what it wrote after the last look
    return (refusal, True) if refusal else None


def _charged(state: TrainingState, folder: TrainingFolder) -> float:
    """Time spent before a runner died: what it wrote down, plus what its container may have gained
    since (up to the last change to the checkpoints)."""
    since = min(time.time(), folder.scan().last_change) - state.heartbeat_at
    return state.used_s + max(0.0, since)


def _model_intact(folder: TrainingFolder, state: TrainingState) -> bool:
    return folder.model.is_dir() and tree_hash(folder.model) == state.model_sha256


def _record(job: TrainingRun, state: TrainingState) -> RunRecord:
    return RunRecord(image=job.image_ref, image_id=job.image_id, exit_code=state.exit_code,
                     wall_time_s=round(state.used_s, 3), timed_out=state.used_s >= job.phase.training.time_limit,
                     peak_memory_bytes=state.peak_memory_bytes, gpu_memory_max_bytes=state.gpu_memory_max_bytes,
                     last_line=state.last_line, resumes=max(0, state.attempts - 1), model_sha256=state.model_sha256,
                     gpu=job.gpu)


def _failed(job: TrainingRun, state: TrainingState, reason: str, *, discard: bool = False) -> ContainerFailed:
    """The failed training's result. Checkpoints that are the reason (past their cap, nested too deep,
    unreadable) are removed at once: they could fill the runner's disk, and, asked to run again, a
    failed training starts over anyway."""
    if discard:
        job.folder.discard_checkpoints()
    return ContainerFailed(reason, "training", _record(job, state))


def _over_budget(budget: int) -> str:
    return f"Training exceeded its time budget of {budget} s (resumes included) and was stopped"


def _peak(first: int | None, second: int | None) -> int | None:
    values = [v for v in (first, second) if v is not None]
    return max(values) if values else None


def _readable(folder: Path) -> None:
    """The predict runs' unprivileged user reads the model (mounted read-only)."""
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
