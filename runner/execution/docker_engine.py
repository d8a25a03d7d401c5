"""The Docker executor: untrusted containers with limits, trusted builds, clean-up after dead runners.

The only module of the package that talks to Docker. Every failure of the engine (the Docker SDK's
exceptions, connection errors) is turned into `SandboxError` here, transient when trying again may
help, so nothing above this module needs to know Docker exists.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, cast

import docker
import docker.errors
import docker.types
import requests

from runner.execution import baseimage
from runner.execution.images import image_tag
from runner.execution.measure import (
    GPU_INTERVAL_S,
    Sampler,
    flare_gpu_summary,
    memory_reader,
)
from runner.execution.outputs import OutputLimits, extract_tar
from runner.execution.sandbox import NOBODY, Log, Outcome, OutputArea, RunSpec, SandboxError

LABEL = "challenge-runner.job"  # on each run's container: which submission it belongs to
OWNER = "challenge-runner.owner"  # on pooled output areas: host:pid of the runner holding them
MEMORY_INTERVAL_S = 0.05
TAIL_LINES = 50

GpuReader = Callable[[str], Callable[[], int | None]]


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
    except docker.errors.DockerException as exc:
        raise SandboxError(f"{what}: {exc}") from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return pid > 0


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
            return extract_tar(cast(IO[bytes], _ChunkReader(chunks)), target, strip="output", limits=limits)

    def clear(self) -> bool:
        """Empty /output for the next run; False if it could not be emptied (then discard it)."""
        with engine_errors("clearing /output"):
            done = self.keeper.exec_run(["sh", "-c", "find /output -mindepth 1 -delete && [ -z \"$(ls -A /output)\" ]"],
                                        user=self.user)
        self.dirty = done.exit_code != 0
        return not self.dirty

    def close(self) -> None:
        with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
            self.keeper.remove(force=True)
        with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
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


class DockerEngine:
    """The `Executor` on a Docker engine: no network, read-only root, no capabilities, limits.

    Output areas are pooled (emptied between uses) and finished containers are removed on a
    background thread, so a job pays for neither a keeper start nor a removal; `close()` (or
    leaving the `with` block) waits for both. The keeper image is the base image unless given.
    """

    def __init__(self, client: docker.DockerClient | None = None, *, keeper_image: str | None = None,
                 gpu_reader: GpuReader | None = None):
        self._client = client
        self.keeper_image = keeper_image
        self.gpu_reader = gpu_reader
        self._idle: dict[tuple[int, str], list[DockerOutputArea]] = {}
        self._reaper: ThreadPoolExecutor | None = None
        self._removals: list[Future] = []
        self._owner = f"{socket.gethostname()}:{os.getpid()}"

    def __enter__(self) -> DockerEngine:
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
                raise SandboxError(f"cannot reach the Docker engine: {exc}", transient=True) from None
        return self._client

    # --- images ------------------------------------------------------------------------------

    def image_id(self, ref: str) -> str:
        """The local image ID for a reference, pulling a digest-pinned one if needed and checking
        the digest it arrived with, so runs use an ID that no tag can swap."""
        with engine_errors(f"looking up {ref}"):
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

    def build(self, folder: Path, *, name: str, base: str | None, args: Mapping[str, str] | None = None) -> str:
        """Build `folder` (a Dockerfile with `ARG BASE`), tagged by its content, and return the image ID."""
        tag = image_tag(folder, name=name, base=base, args=args)
        with engine_errors(f"building {folder} failed"):
            with contextlib.suppress(docker.errors.ImageNotFound):
                return self.client.images.get(tag).id
            buildargs = {**(args or {}), **({"BASE": base} if base else {})}
            try:
                image, _ = self.client.images.build(path=str(folder), tag=tag, buildargs=buildargs,
                                                    rm=True, forcerm=True)
            except docker.errors.BuildError as exc:
                lines = [c.get("stream", c.get("error", "")).strip() for c in exc.build_log]
                tail = next((ln for ln in reversed(lines) if ln), str(exc))
                raise SandboxError(f"building {folder} failed: {tail}") from None
        return image.id

    def ensure_base(self, preferred: str | None = None, *, log: Log = print) -> str:
        """The base image (see `baseimage.ensure_base`); also the keeper of /output unless one was set."""
        base = baseimage.ensure_base(preferred, present=self._present, pull=self._pulled,
                                     import_rootfs=self._import_rootfs, log=log)
        self.keeper_image = self.keeper_image or base
        return base

    def _present(self, ref: str) -> bool:
        with engine_errors(f"looking up {ref}"):
            try:
                self.client.images.get(ref)
                return True
            except docker.errors.ImageNotFound:
                return False

    def _pulled(self, ref: str) -> bool:
        try:
            self.client.images.pull(ref)
            return True
        except (docker.errors.DockerException, requests.RequestException):
            return False

    def _import_rootfs(self, archive: Path, tag: str) -> None:
        repository, _, tag_name = tag.partition(":")
        with engine_errors(f"importing {tag}"):
            self.client.api.import_image_from_file(str(archive), repository=repository, tag=tag_name)

    # --- output areas ------------------------------------------------------------------------

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
            raise SandboxError("no keeper image configured for size-limited /output (call ensure_base first)")
        if not any(self._idle.values()):
            self.remove_orphans()
        with engine_errors("preparing /output"):
            return DockerOutputArea(self.client, self.keeper_image, size=size, user=user,
                                    labels={OWNER: self._owner})

    # --- clean-up after dead runners ---------------------------------------------------------

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

    # --- runs --------------------------------------------------------------------------------

    def run(self, spec: RunSpec, output: OutputArea | None = None) -> Outcome:
        if output is not None and not isinstance(output, DockerOutputArea):
            raise TypeError("a DockerEngine runs only into its own output areas")
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
            labels={LABEL: spec.job} if spec.job else {},
            detach=True,
        )

    def _start_and_wait(self, container, spec: RunSpec) -> Outcome:
        gpu = self.gpu_reader(spec.gpus[0]) if spec.gpus and self.gpu_reader else (lambda: None)
        with Sampler(memory_reader(container.id), MEMORY_INTERVAL_S) as memory, Sampler(gpu, GPU_INTERVAL_S) as gpus:
            started = time.monotonic()
            container.start()
            exit_code, timed_out = _wait(container, spec.time_limit)
            wall = time.monotonic() - started
        container.reload()
        return Outcome(
            exit_code=exit_code,
            wall_time_s=round(wall, 3),
            timed_out=timed_out,
            oom_killed=bool(container.attrs["State"].get("OOMKilled")) and not timed_out,
            stderr_tail=_tail(container, stderr=True),
            stdout_tail=_tail(container, stderr=False),
            peak_memory_bytes=max(memory.samples, default=None),
            gpu=flare_gpu_summary(gpus.samples),
            logs=container.logs(stdout=True, stderr=True).decode("utf-8", errors="replace")[-spec.log_bytes:],
        )


def _wait(container, time_limit: float) -> tuple[int | None, bool]:
    """The exit code, and whether the time limit was reached (then the container is killed)."""
    try:
        return container.wait(timeout=time_limit).get("StatusCode"), False
    except requests.exceptions.RequestException:
        with contextlib.suppress(docker.errors.APIError):  # it may have ended meanwhile
            container.kill()
        return container.wait(timeout=30).get("StatusCode"), True


def _tail(container, *, stderr: bool) -> list[str]:
    raw = container.logs(stdout=not stderr, stderr=stderr, tail=TAIL_LINES)
    return raw.decode("utf-8", errors="replace").splitlines()
