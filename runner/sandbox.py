"""Run one untrusted container with limits and mounts. Knows Docker, nothing of challenges.

The backend interface is one call, `run(spec) -> Outcome`, so another backend (Kubernetes Jobs,
gVisor-only hosts) is a new class rather than a branch in the evaluation code.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import docker
import docker.errors
import docker.types
import requests

NOBODY = "65534:65534"
ERROR_LINE_MAX = 1024
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


@dataclass
class Outcome:
    """What happened: exit code, time, why it was stopped, and the end of its stderr."""

    exit_code: int | None
    wall_time_s: float
    timed_out: bool = False
    oom_killed: bool = False
    stderr_tail: list[str] = field(default_factory=list)
    stdout_tail: list[str] = field(default_factory=list)

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


def last_line(lines: list[str]) -> str | None:
    """The last non-empty line, timestamps removed, cut to 1024 characters."""
    for line in reversed(lines):
        text = _TIMESTAMP.sub("", line).strip()
        if text:
            return text[:ERROR_LINE_MAX]
    return None


class SandboxError(RuntimeError):
    """The sandbox itself failed (engine down, image missing), not the container inside it."""


class Backend(Protocol):
    def run(self, spec: RunSpec) -> Outcome: ...

    def image_id(self, ref: str) -> str: ...


class DockerSandbox:
    """Runs containers on a Docker engine: no network, read-only root, no capabilities, limits."""

    TAIL_LINES = 50

    def __init__(self, client: docker.DockerClient | None = None):
        self._client = client

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            try:
                self._client = docker.from_env()
                self._client.ping()
            except (docker.errors.DockerException, requests.RequestException) as exc:
                raise SandboxError(f"cannot reach the Docker engine: {exc}") from exc
        return self._client

    def image_id(self, ref: str) -> str:
        """The local image ID for a reference, pulling a digest-pinned one if needed, so runs
        use an ID that no tag can swap."""
        try:
            return self.client.images.get(ref).id
        except docker.errors.ImageNotFound:
            if "@sha256:" not in ref:
                raise SandboxError(f"image {ref} is not on this runner") from None
        try:
            image = self.client.images.pull(ref)
        except docker.errors.APIError as exc:
            raise SandboxError(f"could not pull {ref}: {exc.explanation or exc}") from None
        if ref not in image.attrs.get("RepoDigests", []):
            raise SandboxError(f"pulled image does not carry the digest {ref}")
        return image.id

    def run(self, spec: RunSpec) -> Outcome:
        container = self._create(spec)
        try:
            return self._start_and_wait(container, spec)
        finally:
            container.remove(force=True)

    def _create(self, spec: RunSpec):  # -> docker Container
        try:
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
                tmpfs={"/tmp": f"rw,noexec,nosuid,size={spec.tmp_size}"},
                volumes={str(m.host): {"bind": m.target, "mode": "ro" if m.read_only else "rw"}
                         for m in spec.mounts},
                log_config=docker.types.LogConfig(
                    type="json-file", config={"max-size": str(spec.log_bytes), "max-file": "1"}),
                runtime=spec.runtime,
                environment={"HOME": "/tmp"},
                working_dir="/",
                detach=True,
            )
        except docker.errors.ImageNotFound:
            raise SandboxError(f"image {spec.image} is not on this runner") from None
        except docker.errors.APIError as exc:
            raise SandboxError(f"the engine refused to create the container: {exc.explanation or exc}") from exc

    def _start_and_wait(self, container, spec: RunSpec) -> Outcome:
        started = time.monotonic()
        container.start()
        timed_out = False
        try:
            status = container.wait(timeout=spec.time_limit)
            exit_code = status.get("StatusCode")
        except requests.exceptions.RequestException:
            timed_out = True
            container.kill()
            exit_code = container.wait(timeout=30).get("StatusCode")
        wall = time.monotonic() - started
        container.reload()
        oom = bool(container.attrs["State"].get("OOMKilled"))
        return Outcome(
            exit_code=exit_code,
            wall_time_s=round(wall, 3),
            timed_out=timed_out,
            oom_killed=oom and not timed_out,
            stderr_tail=self._tail(container, stderr=True),
            stdout_tail=self._tail(container, stderr=False),
        )

    def _tail(self, container, *, stderr: bool) -> list[str]:
        raw = container.logs(stdout=not stderr, stderr=stderr, tail=self.TAIL_LINES)
        return raw.decode("utf-8", errors="replace").splitlines()
