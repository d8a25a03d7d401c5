"""The executor boundary: what the evaluation stage may ask of whatever runs containers.

The evaluation code sees only `Executor` and the plain values here (`RunSpec`, `Outcome`,
`OutputArea`), in the spirit of grand-challenge's components backends: provision an output area,
execute a container into it, get its outputs, deprovision. Docker (`docker_engine.DockerEngine`)
is one implementation, the in-process fake (`fake.FakeExecutor`) another; a Kubernetes Jobs
executor would be a third class, with no change to the evaluation code. Nothing here imports an
engine, and an engine's own exceptions never leave its module: they become `SandboxError`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from runner.errors import ChallengeError
from runner.execution.measure import GpuUsage
from runner.execution.outputs import OutputLimits

NOBODY = "65534:65534"
NOBODY_GID = NOBODY.partition(":")[2]  # the hidden data's group (the organizers' guide): every run keeps it
# The last stderr line is shown to the participant, so it is a channel out of the sandbox for anything
# the container can read: kept short, and stripped of control characters (terminal escapes).
ERROR_LINE_MAX = 300
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

Log = Callable[[str], None]
# Called while a container runs with the seconds it has run; a reason returned stops it (training:
# its checkpoints grew past their cap). Also where a long run records how far it got.
Watch = Callable[[float], str | None]
WATCH_INTERVAL_S = 5.0


class SandboxError(ChallengeError):
    """The executor itself failed (engine down, image missing, build broken), not the container
    inside it. `transient` marks failures worth retrying (engine errors, timeouts talking to it)."""


@dataclass(frozen=True)
class Mount:
    host: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class RunAs:
    """Who a container runs as: `uid:gid` (numbers, never names the engine would resolve), the groups it
    keeps besides, and its HOME (None: as the image and the engine set it, from the image's /etc/passwd)."""

    user: str = NOBODY
    groups: tuple[str, ...] = ()
    home: str | None = "/tmp"


@dataclass(frozen=True)
class RunSpec:
    """Everything an executor needs for one run. Limits default to a small, safe box.
    `job` names the submission the run belongs to, so a later runner can remove what a dead one
    left; each executor records it its own way (a Docker label, a Kubernetes label). `checkout`, the
    challenge repository's checkout the job was evaluated from, is recorded alike for organizers."""

    image: str
    mounts: tuple[Mount, ...] = ()
    time_limit: float = 300.0
    memory: int = 2 * 1024**3
    cpus: float = 1.0
    pids: int = 256
    open_files: int = 1024
    tmp_size: int = 256 * 1024**2
    shm_size: int = 64 * 1024**2
    user: RunAs = RunAs()
    command: tuple[str, ...] | None = None
    log_bytes: int = 1024**2
    runtime: str | None = None
    gpus: tuple[str, ...] = ()
    job: str | None = None
    checkout: Path | None = None
    output_path: str = "/output"  # where the output area is mounted in this run (FLARE: /workspace/outputs)
    watch: Watch | None = None  # called about every WATCH_INTERVAL_S while it runs


@dataclass
class Outcome:
    """What happened: exit code, time, memory, why it was stopped, and the end of its logs."""

    exit_code: int | None
    wall_time_s: float
    timed_out: bool = False
    oom_killed: bool = False
    stderr_tail: list[str] = field(default_factory=list)
    stdout_tail: list[str] = field(default_factory=list)
    peak_memory_bytes: int | None = None
    gpu: GpuUsage | None = None
    logs: str = ""
    stopped: str | None = None  # why the runner's watch stopped it
    start_error: str | None = None  # why the image's command could not be started (it is not there)

    @property
    def ok(self) -> bool:
        return (self.exit_code == 0 and not self.timed_out and not self.oom_killed and not self.stopped
                and not self.start_error)

    def error_line(self, time_limit: float) -> str | None:
        """The one line a participant sees, as grand-challenge shows it."""
        if self.start_error:
            return f"The container could not start: {self.start_error}"
        if self.stopped:
            return self.stopped
        if self.timed_out:
            return f"The container exceeded its time limit of {time_limit:g} s and was stopped"
        if self.oom_killed or (self.exit_code == 137 and not self.stderr_tail):
            return "The container was killed as it exceeded its memory limit"
        if self.exit_code == 0:
            return None
        return last_line(self.stderr_tail) or f"The container exited with code {self.exit_code}"


def last_line(lines: list[str]) -> str | None:
    """The last non-empty line, timestamps and control characters removed, cut to ERROR_LINE_MAX characters."""
    for line in reversed(lines):
        text = _CONTROL.sub("", _TIMESTAMP.sub("", line)).strip()
        if text:
            return text[:ERROR_LINE_MAX]
    return None


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host: what runners check before removing what another
    runner left (its containers, volumes, scratch folders)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return pid > 0


@dataclass(frozen=True)
class EngineInfo:
    """What an executor says of itself (`challenge doctor` prints it): its engine and version, and the
    container runtimes it offers (runc; nvidia where the NVIDIA Container Toolkit registered one; runsc)."""

    engine: str
    runtimes: tuple[str, ...] = ()


@runtime_checkable
class OutputArea(Protocol):
    """A size-limited /output that containers write into and the host reads back safely."""

    def collect(self, target: Path, limits: OutputLimits = ...) -> int:
        """Copy /output into `target`; raises UnsafeOutput for links, devices or excess. Never more than
        the area's size is written out (`OutputLimits.within`)."""
        ...

    def clear(self) -> None:
        """Have /output emptied before the next run, whatever the last run left there (a read-only folder,
        a FIFO): now, or lazily before that run. An area that cannot be emptied then is replaced; a
        replacement that fails is that run's SandboxError."""
        ...


@runtime_checkable
class Executor(Protocol):
    """Runs untrusted containers with limits, and the trusted chores around them.

    Every method raises `SandboxError` (never an engine's own exception) when the executor, not
    the container, fails; `transient=True` when trying again may help.
    """

    def image_id(self, ref: str) -> str:
        """The local image ID for `ref`, pulling a digest-pinned one if needed and checking that it
        arrived with that digest, so runs use an ID no tag can swap."""
        ...

    def build(self, folder: Path, *, name: str, base: str | None, args: Mapping[str, str] | None = None,
              extra_context: Mapping[str, Path] | None = None) -> str:
        """Build a trusted folder (a Dockerfile with `ARG BASE`) once per content; its image ID.
        Each `extra_context` folder joins the build context under its name (the tag covers it too),
        unless the folder holds that name itself."""
        ...

    def load_archive(self, path: Path, *, max_bytes: int = ...) -> str:
        """Load a `docker save` archive holding exactly one image, with every tag it carries removed
        (so it can never stand in for a trusted image); its image ID. Raises `archives.BadArchive`
        for an archive that is not that, SandboxError when the executor fails."""
        ...

    def save_archive(self, image: str, path: Path) -> None:
        """Write `image` to `path` as an archive `load_archive` reads."""
        ...

    def run_as(self, image: str) -> RunAs:
        """Who containers of `image` run as (`users.run_as`): the user it declares unless that is root,
        else NOBODY. SandboxError when the declared user cannot be found in the image."""
        ...

    def ensure_base(self, preferred: str | None = None, *, log: Log = print) -> str:
        """A Python base image present on this executor: the one asked for, else a default."""
        ...

    def output_area(self, size: int, *, user: str = NOBODY) -> contextlib.AbstractContextManager[OutputArea]:
        """Provision an empty /output of `size` bytes for the runs inside the `with` block."""
        ...

    def run(self, spec: RunSpec, output: OutputArea | None = None) -> Outcome:
        """Execute one container to its end (or its time limit) and say how it went."""
        ...

    def remove_as(self, folder: Path, user: str) -> bool:
        """Empty the host folder `folder` (left in place) as `user` (`uid:gid`, as in `RunAs`), with the
        executor's own trusted tools: what a container made there and the runner's user may not remove
        (a folder it closed, chmod 0500, and what is in it). Whether `folder` is empty now."""
        ...

    def remove_labelled(self, job: str) -> int:
        """Remove the runs a dead runner left for `job`; how many there were."""
        ...

    def describe(self) -> EngineInfo:
        """The engine's name, version and runtimes; SandboxError when it cannot be reached."""
        ...

    def has_credentials(self, registry: str) -> bool | None:
        """Whether this executor pulls from `registry` with credentials (`docker login`), so private images
        there can run; None when it cannot tell (a credential store that does not answer)."""
        ...

    def remove_orphans(self) -> int:
        """Remove the runs and output areas whose runner process on this host has died (a runner
        calls it when it starts, so a killed runner's container does not run on past its limit);
        how many there were. Several runners may call it at once."""
        ...

    def close(self) -> None:
        """Wait for pending clean-up and release pooled resources."""
        ...
