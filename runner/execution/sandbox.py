"""Run one untrusted container with limits and mounts. Knows Docker, nothing of challenges.

The backend interface is small (`image_id`, `output_area`, `run`), so another backend (Kubernetes
Jobs, gVisor-only hosts) is a new class rather than a branch in the evaluation code.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import docker
import docker.errors
import docker.types
import requests

from runner.execution.measure import (
    GPU_INTERVAL_S,
    GpuUsage,
    Sampler,
    flare_gpu_summary,
    memory_reader,
)
from runner.execution.outputs import OutputLimits, extract_tar

NOBODY = "65534:65534"
ERROR_LINE_MAX = 1024
LABEL = "challenge-runner.job"  # on each run's container: which submission it belongs to
OWNER = "challenge-runner.owner"  # on pooled output areas: host:pid of the runner holding them
MEMORY_INTERVAL_S = 0.05
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?\s+")


@dataclass(frozen=True)
class Mount:
    host: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class RunSpec:
    """Everything the sandbox needs for one run. Limits default to a small, safe box."""

    image: str
    mounts: tuple[Mount, ...] = ()
    time_limit: float = 300.0
    memory: int = 2 * 1024**3
    cpus: float = 1.0
    pids: int = 256
    open_files: int = 1024
    tmp_size: int = 256 * 1024**2
    shm_size: int = 64 * 1024**2
    user: str = NOBODY
    command: tuple[str, ...] | None = None
    log_bytes: int = 1024**2
    runtime: str | None = None
    gpus: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


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

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed

    def error_line(self, time_limit: float) -> str | None:
        """The one line a participant sees, as grand-challenge shows it."""
        if self.timed_out:
            return f"The container exceeded its time limit of {time_limit:g} s and was stopped"
        if self.oom_killed or (self.exit_code == 137 and not self.stderr_tail):
            return "The container was killed as it exceeded its memory limit"
        if self.exit_code == 0:
            return None
        return last_line(self.stderr_tail) or f"The container exited with code {self.exit_code}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return pid > 0


def last_line(lines: list[str]) -> str | None:
    """The last non-empty line, timestamps removed, cut to 1024 characters."""
    for line in reversed(lines):
        text = _TIMESTAMP.sub("", line).strip()
        if text:
            return text[:ERROR_LINE_MAX]
    return None


class SandboxError(RuntimeError):
    """The sandbox itself failed (engine down, image missing), not the container inside it.
    `transient` marks failures worth retrying (engine errors, timeouts talking to it)."""

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


class OutputArea(Protocol):
    def collect(self, target: Path, limits: OutputLimits = ...) -> int: ...

    def clear(self) -> bool: ...


class Backend(Protocol):
    def image_id(self, ref: str) -> str: ...

    def output_area(self, size: int, *, user: str = NOBODY) -> contextlib.AbstractContextManager[OutputArea]: ...

    def run(self, spec: RunSpec, output: OutputArea | None = None) -> Outcome: ...


@contextlib.contextmanager
def engine_errors(what: str) -> Iterator[None]:
    """Turn the engine's own failures into SandboxError; server-side and connection ones are transient."""
    try:
        yield
    except docker.errors.ImageNotFound as exc:
        raise SandboxError(f"{what}: image not found ({exc.explanation or exc})") from None
    except docker.errors.APIError as exc:
        raise SandboxError(f"{what}: {exc.explanation or exc}", transient=exc.is_server_error()) from None
    except requests.RequestException as exc:
        raise SandboxError(f"{what}: the engine did not answer ({exc})", transient=True) from None


class DockerOutputArea:
    """A size-limited tmpfs volume that a container sees as /output.

    A bind-mounted host folder could fill the host's disk; a tmpfs volume stops writes at its size
    (ENOSPC inside the container). Docker unmounts such a volume when no container uses it, so a
    small keeper container holds it while the participant's containers come and go; outputs are
    then read through the keeper as a tar stream, so links are seen as links, never followed.
    """

    def __init__(self, client: docker.DockerClient, keeper_image: str, *, size: int, user: str,
                 labels: Mapping[str, str]):
        uid, _, gid = user.partition(":")
        self.volume = client.volumes.create(
            name=f"challenge-output-{uuid.uuid4().hex[:12]}", driver="local", labels=dict(labels),
            driver_opts={"type": "tmpfs", "device": "tmpfs",
                         "o": f"size={size},uid={uid},gid={gid or uid},mode=0700"})
        self.keeper = client.containers.run(
            keeper_image, ["sleep", "infinity"], entrypoint=[], user=user, network_mode="none",
            read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"], mem_limit=64 * 1024**2,
            pids_limit=16, labels=dict(labels), detach=True,
            volumes={self.volume.name: {"bind": "/output", "mode": "rw"}})
        self.user = user
        self.dirty = False  # a container has written since it was last emptied

    def mount(self) -> dict:
        return {self.volume.name: {"bind": "/output", "mode": "rw"}}

    def collect(self, target: Path, limits: OutputLimits = OutputLimits()) -> int:
        """Copy /output into `target`; raises UnsafeOutput for links, devices or excess."""
        with engine_errors("reading /output"):
            chunks, _ = self.keeper.get_archive("/output")
            return extract_tar(_ChunkReader(chunks), target, strip="output", limits=limits)

    def clear(self) -> bool:
        """Empty /output for the next run; False if it could not be emptied (then discard it)."""
        with engine_errors("clearing /output"):
            done = self.keeper.exec_run(["sh", "-c", "find /output -mindepth 1 -delete && [ -z \"$(ls -A /output)\" ]"],
                                        user=self.user)
        self.dirty = done.exit_code != 0
        return not self.dirty

    def close(self) -> None:
        with contextlib.suppress(docker.errors.APIError, requests.RequestException):
            self.keeper.remove(force=True)
        with contextlib.suppress(docker.errors.APIError, requests.RequestException):
            self.volume.remove(force=True)


class _ChunkReader:
    """A file-like view of the chunks Docker's archive API yields, for tarfile's stream mode."""

    def __init__(self, chunks):
        self._chunks, self._buffer = iter(chunks), b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            try:
                self._buffer += next(self._chunks)
            except StopIteration:
                break
        if size < 0:
            size = len(self._buffer)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


class DockerSandbox:
    """Runs containers on a Docker engine: no network, read-only root, no capabilities, limits.

    Output areas are pooled (emptied between uses) and finished containers are removed on a
    background thread, so a job pays for neither a keeper start nor a removal; `close()` (or
    leaving the `with` block) waits for both.
    """

    TAIL_LINES = 50

    def __init__(self, client: docker.DockerClient | None = None, *, keeper_image: str | None = None,
                 gpu_reader: Callable[[str], Callable[[], int | None]] | None = None):
        self._client = client
        self.keeper_image = keeper_image
        self.gpu_reader = gpu_reader
        self._idle: dict[tuple[int, str], list[DockerOutputArea]] = {}
        self._reaper: ThreadPoolExecutor | None = None
        self._removals: list[Future] = []
        self._owner = f"{socket.gethostname()}:{os.getpid()}"

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Wait for pending removals and remove the pooled output areas."""
        self.drain()
        for areas in self._idle.values():
            for area in areas:
                area.close()
        self._idle.clear()

    def drain(self) -> None:
        """Wait until every finished container has been removed."""
        for removal in self._removals:
            with contextlib.suppress(Exception):
                removal.result()
        self._removals.clear()

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            try:
                self._client = docker.from_env()
                self._client.ping()
            except (docker.errors.DockerException, requests.RequestException) as exc:
                raise SandboxError(f"cannot reach the Docker engine: {exc}", transient=True) from exc
        return self._client

    def image_id(self, ref: str) -> str:
        """The local image ID for a reference, pulling a digest-pinned one if needed and checking
        the digest it arrived with, so runs use an ID that no tag can swap."""
        try:
            return self.client.images.get(ref).id
        except docker.errors.ImageNotFound:
            if "@sha256:" not in ref:
                raise SandboxError(f"image {ref} is not on this runner") from None
        with engine_errors(f"pulling {ref}"):
            image = self.client.images.pull(ref)
        if ref not in image.attrs.get("RepoDigests", []):
            raise SandboxError(f"the pulled image does not carry the digest {ref}")
        return image.id

    @contextlib.contextmanager
    def output_area(self, size: int, *, user: str = NOBODY) -> Iterator[DockerOutputArea]:
        """An empty /output of `size` bytes, from the pool or new; back to the pool when emptied."""
        idle = self._idle.setdefault((size, user), [])
        area = idle.pop() if idle else self._new_area(size, user)
        try:
            yield area
        except BaseException:
            area.close()
            raise
        if not area.dirty or area.clear():
            idle.append(area)
        else:
            area.close()

    def _new_area(self, size: int, user: str) -> DockerOutputArea:
        if self.keeper_image is None:
            raise SandboxError("no keeper image configured for size-limited /output")
        if not any(self._idle.values()):
            self.remove_orphans()
        with engine_errors("preparing /output"):
            return DockerOutputArea(self.client, self.keeper_image, size=size, user=user,
                                    labels={OWNER: self._owner})

    def remove_orphans(self) -> int:
        """Remove output areas whose runner process on this host has died (killed, crashed)."""
        host = socket.gethostname()
        found = 0
        with engine_errors("cleaning up"):
            for container in self.client.containers.list(all=True, filters={"label": OWNER}):
                owner_host, _, pid = container.labels.get(OWNER, "").partition(":")
                if owner_host == host and not _alive(int(pid or 0)):
                    container.remove(force=True)
                    found += 1
            for volume in self.client.volumes.list(filters={"label": OWNER}):
                owner_host, _, pid = (volume.attrs.get("Labels") or {}).get(OWNER, "").partition(":")
                if owner_host == host and not _alive(int(pid or 0)):
                    with contextlib.suppress(docker.errors.APIError):  # still held by a live keeper
                        volume.remove()
                        found += 1
        return found

    def remove_labelled(self, job: str) -> int:
        """Remove containers left by a runner that died while running `job`."""
        with engine_errors("cleaning up"):
            found = self.client.containers.list(all=True, filters={"label": f"{LABEL}={job}"})
            for container in found:
                container.remove(force=True)
        return len(found)

    def run(self, spec: RunSpec, output: DockerOutputArea | None = None) -> Outcome:
        with engine_errors("starting the container"):
            container = self._create(spec, output)
        try:
            with engine_errors("running the container"):
                return self._start_and_wait(container, spec)
        finally:
            self._remove_later(container)

    def _remove_later(self, container) -> None:
        if self._reaper is None:
            self._reaper = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reaper")
        self._removals.append(self._reaper.submit(container.remove, force=True))

    def _create(self, spec: RunSpec, output: DockerOutputArea | None):
        volumes = {str(m.host): {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in spec.mounts}
        if output is not None:
            volumes.update(output.mount())
            output.dirty = True
        devices = [docker.types.DeviceRequest(device_ids=list(spec.gpus), capabilities=[["gpu"]])] if spec.gpus else []
        return self.client.containers.create(
            spec.image,
            command=list(spec.command) if spec.command else None,
            user=spec.user,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=spec.memory,
            memswap_limit=spec.memory,
            nano_cpus=int(spec.cpus * 1e9),
            pids_limit=spec.pids,
            ulimits=[docker.types.Ulimit(name="nofile", soft=spec.open_files, hard=spec.open_files)],
            shm_size=spec.shm_size,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={spec.tmp_size}"},
            volumes=volumes,
            device_requests=devices,
            log_config=docker.types.LogConfig(
                type="json-file", config={"max-size": str(spec.log_bytes), "max-file": "1"}),
            runtime=spec.runtime,
            environment={"HOME": "/tmp"},
            labels=dict(spec.labels),
            detach=True,
        )

    def _start_and_wait(self, container, spec: RunSpec) -> Outcome:
        gpu = self.gpu_reader(spec.gpus[0]) if spec.gpus and self.gpu_reader else (lambda: None)
        with Sampler(memory_reader(container.id), MEMORY_INTERVAL_S) as memory, Sampler(gpu, GPU_INTERVAL_S) as gpus:
            started = time.monotonic()
            container.start()
            exit_code, timed_out = self._wait(container, spec.time_limit)
            wall = time.monotonic() - started
        container.reload()
        stderr = self._tail(container, stderr=True)
        return Outcome(
            exit_code=exit_code,
            wall_time_s=round(wall, 3),
            timed_out=timed_out,
            oom_killed=bool(container.attrs["State"].get("OOMKilled")) and not timed_out,
            stderr_tail=stderr,
            stdout_tail=self._tail(container, stderr=False),
            peak_memory_bytes=max(memory.samples, default=None),
            gpu=flare_gpu_summary(gpus.samples),
            logs=container.logs(stdout=True, stderr=True).decode("utf-8", errors="replace")[-spec.log_bytes:],
        )

    @staticmethod
    def _wait(container, time_limit: float) -> tuple[int | None, bool]:
        try:
            return container.wait(timeout=time_limit).get("StatusCode"), False
        except requests.exceptions.RequestException:
            with contextlib.suppress(docker.errors.APIError):  # it may have ended meanwhile
                container.kill()
            return container.wait(timeout=30).get("StatusCode"), True

    def _tail(self, container, *, stderr: bool) -> list[str]:
        raw = container.logs(stdout=not stderr, stderr=stderr, tail=self.TAIL_LINES)
        return raw.decode("utf-8", errors="replace").splitlines()
