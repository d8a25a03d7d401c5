"""The Docker executor: untrusted containers with limits, trusted builds, clean-up after dead runners.

The only module of the package that talks to Docker. Every failure of the engine (the Docker SDK's
exceptions, connection errors) is turned into `SandboxError` here, transient when trying again may
help, so nothing above this module needs to know Docker exists.
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import re
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any, cast

import docker
import docker.auth
import docker.errors
import docker.types
import requests
from docker.models.containers import Container, _create_container_args
from docker.models.resource import Model
from docker.models.volumes import Volume

from runner.errors import printable
from runner.execution import archives, baseimage, certificates, users
from runner.execution.archives import BadArchive
from runner.execution.images import assemble_context, image_tag
from runner.execution.keeper import AGENT, KeeperChannel, KeeperGone
from runner.execution.measure import (
    GPU_INTERVAL_S,
    Sampler,
    flare_gpu_summary,
    memory_reader,
)
from runner.execution.outputs import OutputLimits, extract_tar
from runner.execution.sandbox import (
    ERROR_LINE_MAX,
    NOBODY,
    WATCH_INTERVAL_S,
    EngineInfo,
    Log,
    Outcome,
    OutputArea,
    RunAs,
    RunSpec,
    SandboxError,
    process_alive,
)
from runner.execution.trusted import ImageFiles, TrustedImages

LABEL = "challenge-runner.job"  # on each run's container: which submission it belongs to
OWNER = "challenge-runner.owner"  # on runs and pooled output areas: host:pid of the runner holding them
CHECKOUT = "challenge-runner.checkout"  # on runs: the checkout their job was evaluated from (RunSpec.checkout)
# Empties /output as the user that wrote it: folders made read-only (chmod 0500) are made writable again first.
EMPTY_OUTPUT = "chmod -R u+rwX /output 2>/dev/null; find /output -mindepth 1 -delete; [ -z \"$(ls -A /output)\" ]"
ARCHIVE_MAX_BYTES = 32 * 1024**3
MEMORY_INTERVAL_S = 0.05
REMOVAL_TIMEOUT_S = 300  # a helper emptying a host folder (`remove_as`): a tree of millions of entries
MAX_IDLE_AREAS = 4  # output areas kept for reuse (a keeper container and a tmpfs each)
READ_BUFFER = 1024**2  # outputs are read from the keeper in reads this large (tar asks for 10 KiB)
TAIL_LINES = 50
# runc's words when the process it was asked to start cannot be: `exec: "x": executable file not found in
# $PATH`, `exec: "/x": stat /x: no such file or directory`, `exec: "/tmp": permission denied`.
_EXEC_REFUSED = re.compile(r"(?:starting container process caused|unable to start container process):? "
                           r"(?P<reason>exec: .*?)(?:: unknown)?$")

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


class DockerOutputArea:
    """A size-limited tmpfs volume that a container sees as /output.

    A bind-mounted host folder could fill the host's disk; a tmpfs volume stops writes at its size
    (ENOSPC inside the container). Docker unmounts such a volume when no container uses it, so a
    small keeper container holds it while the participant's containers come and go. The keeper runs
    `keeper_agent`, attached: outputs are read through it as a tar stream, so links are seen as links,
    never followed. tmpfs pages are charged to the memory of the container writing them, so a run
    into this area gets `size` more memory (see DockerEngine._create): /output has its own budget.
    """

    def __init__(self, client: docker.DockerClient, keeper_image: str, *, size: int, user: str,
                 labels: Mapping[str, str], drain: Callable[[], None] = lambda: None):
        self.client, self.keeper_image, self.size, self.user = client, keeper_image, size, user
        self.labels, self._drain = dict(labels), drain  # drain: wait until finished runs are removed
        self.volume, self.keeper, self.channel = self._provision()
        self.dirty = False  # a container has written since it was last emptied

    def _provision(self) -> tuple[Volume, Container, KeeperChannel]:
        uid, _, gid = self.user.partition(":")
        volume = self.client.volumes.create(
            name=f"challenge-output-{uuid.uuid4().hex[:12]}", driver="local", labels=self.labels,
            driver_opts={"type": "tmpfs", "device": "tmpfs",
                         "o": f"size={self.size},uid={uid},gid={gid or uid},mode=0700"})
        try:
            return (volume, *self._keeper(volume))
        except BaseException:
            with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
                volume.remove(force=True)
            raise

    def _keeper(self, volume: Volume) -> tuple[Container, KeeperChannel]:
        """The keeper holding `volume`, its agent attached. stdin stays open after a detach (StdinOnce
        is off): the agent waits for requests as long as the keeper lives. Its stdout carries the
        outputs, so it is logged nowhere."""
        keeper = self.client.containers.run(
            self.keeper_image, ["python3", "-I", "-c", AGENT], user=self.user, labels=self.labels, detach=True,
            stdin_open=True, volumes={volume.name: {"bind": "/output", "mode": "rw"}}, **_helper_options())
        attached = None
        try:
            api = self.client.api
            attached = api.attach_socket(keeper.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            return keeper, KeeperChannel(attached, timeout=api.timeout)
        except BaseException:
            if attached is not None:
                attached.close()
            with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
                keeper.remove(force=True)
            raise

    def mount(self, target: str = "/output") -> dict[str, dict[str, str]]:
        return {self.volume.name: {"bind": target, "mode": "rw"}}

    def collect(self, target: Path, limits: OutputLimits = OutputLimits()) -> int:
        """Copy /output into `target`; raises UnsafeOutput for links, devices or excess. An answer
        refused part way is left unread: the area is then replaced before its next run."""
        try:
            answer = self.channel.ask("collect")
            found = extract_tar(io.BufferedReader(answer, READ_BUFFER), target, strip="output",
                                limits=limits.within(self.size))
            # Only the archive's end blocks and the end frame may be left: more would be outputs tar stopped before.
            if answer.finish() or answer.skipped > 2 * tarfile.BLOCKSIZE:
                raise KeeperGone("the keeper's answer went on past its archive")
            return found
        except KeeperGone as exc:
            raise SandboxError(f"reading /output: {exc}", transient=True) from None

    def clear(self) -> None:
        """Nothing now: /output is emptied before the next run into this area (`prepare`), or in the
        background once the area is back in its engine's pool, so no job waits for it."""

    def empty(self) -> bool:
        """Empty it now: what a run may leave (a folder without write permission, a FIFO) is made
        writable first, and /output itself reset (its mode, attributes and times). False if the keeper
        could not, or cannot be asked (then the area must be replaced). The keeper's agent does it; what
        it cannot (paths past the kernel's limit), a shell does, and then the agent is asked again."""
        try:
            refused = self.channel.ask("empty").finish()
            if refused and self._shell_emptied():
                # The shell leaves /output's attributes as they are: only the agent resets and checks them.
                refused = self.channel.ask("empty").finish()
        except KeeperGone:
            return False
        self.dirty = bool(refused)
        return not self.dirty

    def _shell_emptied(self) -> bool:
        """Whether EMPTY_OUTPUT, run in the keeper as the area's user, left /output without entries."""
        with engine_errors("clearing /output"):
            exit_code: int = self.keeper.exec_run(["sh", "-c", EMPTY_OUTPUT], user=self.user).exit_code
        return exit_code == 0

    def prepare(self) -> None:
        """Make it empty for a run: what an earlier run left is removed; an area that cannot be
        emptied, or whose keeper cannot be asked, is replaced by a new one."""
        if not self.channel.usable or (self.dirty and not self.empty()):
            self.close()
            with engine_errors("preparing /output"):
                self.volume, self.keeper, self.channel = self._provision()
            self.dirty = False

    def close(self) -> None:
        """Remove the keeper and the volume, once no finished run still holds the volume."""
        self._drain()
        self.channel.close()
        with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
            self.keeper.remove(force=True)
        with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
            self.volume.remove(force=True)


class DockerEngine:
    """The `Executor` on a Docker engine: no network, read-only root, no capabilities, limits.

    Output areas are pooled (emptied between uses) and finished containers are removed on a
    background thread, so a job pays for neither a keeper start nor a removal; `close()` (or
    leaving the `with` block) waits for both. The keeper image is the base image unless given.
    """

    def __init__(self, client: docker.DockerClient | None = None, *, keeper_image: str | None = None,
                 gpu_reader: GpuReader | None = None, trusted: TrustedImages | None = None,
                 build_certificates: bytes | None = None, image_files: ImageFiles | None = None):
        self._client = client
        self.build_certificates = build_certificates  # a CA bundle every build trusts (see `certificates`)
        self.keeper_image = keeper_image
        self.trusted = trusted or TrustedImages()  # the IDs of the images this runner made or chose
        self.image_files = image_files or ImageFiles()  # what `run_as` read of images, by ID
        self.gpu_reader = gpu_reader
        self._idle: dict[tuple[int, str], list[DockerOutputArea]] = {}
        self._broken: list[DockerOutputArea] = []  # could not be emptied in the background: closed at close()
        self._pool_lock = threading.Lock()  # the pool is given back to from the reaper's threads
        self._reaper: ThreadPoolExecutor | None = None
        self._removals: list[Future[object]] = []
        self._owner = f"{socket.gethostname()}:{os.getpid()}"
        self._users: dict[str, RunAs] = {}  # by image ID: an image never changes
        self._configs: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> DockerEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Wait for pending removals and remove the pooled output areas."""
        self.drain()
        for area in [*(a for areas in self._idle.values() for a in areas), *self._broken]:
            area.close()
        self._idle.clear()
        self._broken.clear()

    def drain(self) -> None:
        """Wait until every finished container has been removed and every area given back emptied."""
        for removal in self._removals:
            with contextlib.suppress(Exception):
                removal.result()
        self._removals.clear()

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            try:
                self._client = docker.from_env()
                if self._client.api.base_url.startswith("http+docker://"):  # a local socket: no proxy applies,
                    self._client.api.trust_env = False  # and requests would read the environment per request
                self._client.ping()
            except (docker.errors.DockerException, requests.RequestException) as exc:
                raise SandboxError(f"cannot reach the Docker engine: {exc}", transient=True) from None
        return self._client

    def describe(self) -> EngineInfo:
        with engine_errors("asking the engine what it is"):
            info = self.client.info()
        return EngineInfo(engine=f"Docker {info.get('ServerVersion', '(version unknown)')}",
                          runtimes=tuple(sorted(info.get("Runtimes") or {})))

    def has_credentials(self, registry: str) -> bool | None:
        """From the client's configuration, as its pulls read it (~/.docker/config.json or $DOCKER_CONFIG:
        `auths`, `credHelpers`, `credsStore`); None when a credential helper fails."""
        try:
            return docker.auth.load_config().resolve_authconfig(registry) is not None
        except docker.errors.DockerException:
            return None

    # --- images ------------------------------------------------------------------------------

    def image_id(self, ref: str) -> str:
        """The local image ID for a reference, pulling a digest-pinned one if needed and checking
        the digest it arrived with, so runs use an ID that no tag can swap."""
        with engine_errors(f"looking up {ref}"):
            try:
                return self._known(self.client.images.get(ref))
            except docker.errors.ImageNotFound:
                if "@sha256:" not in ref:
                    raise SandboxError(f"image {ref} is not on this runner") from None
        with engine_errors(f"pulling {ref}"):
            image = self.client.images.pull(ref)
        if ref not in image.attrs.get("RepoDigests", []):
            raise SandboxError(f"the pulled image does not carry the digest {ref}")
        return _id(image)

    def _known(self, image: Model) -> str:
        """The image's ID; its configuration kept (`_config`), as the engine's answer holds it already."""
        image_id = _id(image)
        self._configs.setdefault(image_id, image.attrs.get("Config") or {})
        return image_id

    def build(self, folder: Path, *, name: str, base: str | None, args: Mapping[str, str] | None = None,
              extra_context: Mapping[str, Path] | None = None) -> str:
        """Build `folder` (a Dockerfile with `ARG BASE`), tagged by its content, and return the image ID.
        `extra_context` folders join the build context under their names, and the CA bundle its Dockerfile
        (a temporary copy is built)."""
        bundle = self.build_certificates
        tag = image_tag(folder, name=name, base=base, args=args, extra_context=extra_context,
                        certificates=certificates.fingerprint(bundle) if bundle else "")
        known = self.trusted.get(tag)
        if known is not None and self._present(known):  # by the ID recorded when it was built: never by its tag
            return known
        with contextlib.ExitStack() as stack:
            context = folder
            if extra_context or bundle:
                scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="challenge-context-")))
                context = assemble_context(folder, extra_context, scratch / "context")
            if bundle:
                certificates.add_to_context(context, bundle)
            return self._build(context, folder, tag=tag, args={**(args or {}), **({"BASE": base} if base else {})})

    def _build(self, context: Path, folder: Path, *, tag: str, args: Mapping[str, str]) -> str:
        with engine_errors(f"building {folder} failed"):
            try:
                image, _ = self.client.images.build(path=str(context), tag=tag, buildargs=dict(args),
                                                    rm=True, forcerm=True)
            except docker.errors.BuildError as exc:
                raise SandboxError(f"building {folder} failed: {build_failure(exc.build_log, str(exc))}") from None
        image_id = _id(image)
        self.trusted.put(tag, image_id)
        return image_id

    def load_archive(self, path: Path, *, max_bytes: int = ARCHIVE_MAX_BYTES) -> str:
        """Load a `docker save` archive holding one image, rebuilt without names (see `archives`); its image
        ID. Every tag is where it was afterwards: one that moved is put back and the archive refused."""
        with tempfile.TemporaryDirectory(prefix="challenge-archive-", dir=path.parent) as tmp:
            plain = Path(tmp) / "image.tar"
            archives.sanitize(path, plain, max_bytes=max_bytes)
            with engine_errors("loading the image archive"):
                before = self._tags()
                with open(plain, "rb") as data:
                    try:
                        images = self.client.images.load(data)
                    except (docker.errors.ImageLoadError, docker.errors.APIError) as exc:
                        if isinstance(exc, docker.errors.APIError) and exc.is_server_error():
                            raise  # the engine's own trouble (a full disk): transient, left pending
                        raise BadArchive(f"the engine could not load it: {_load_reason(exc)}") from None
                found = {_id(image) for image in images}
                self._tags_kept(before, found)
        if len(found) != 1:
            raise BadArchive(f"the archive loaded {len(found)} images; submit exactly one (docker save IMAGE)")
        return found.pop()

    def _tags(self) -> dict[str, str]:
        """Every tag on the engine and the image it names."""
        return {tag: _id(image) for image in self.client.images.list() for tag in image.tags}

    def _tags_kept(self, before: Mapping[str, str], loaded: set[str]) -> None:
        """After a load: a tag that now names a `loaded` image and did not before is put back where it was
        (or removed), and the archive refused. The rebuilt archive names nothing, so this never happens
        unless the engine names images of its own accord: the last line of defence for the images the
        runner keeps. (Tags other runners move meanwhile, onto other images, are theirs.)"""
        moved = {tag: image for tag, image in self._tags().items() if image in loaded and before.get(tag) != image}
        for tag in moved:
            if tag in before:
                repository, _, name = tag.rpartition(":")
                self.client.api.tag(before[tag], repository, name, force=True)
            else:
                self.client.api.remove_image(tag, noprune=True)
        if moved:
            raise BadArchive(f"loading it named images the runner keeps ({', '.join(sorted(moved))}); put back")

    def save_archive(self, image: str, path: Path) -> None:
        """Write `image` as a `docker save` archive to `path` (the demo's archived examples)."""
        with engine_errors(f"saving {image}"), open(path, "wb") as out:
            for chunk in self.client.images.get(image).save(named=False):
                out.write(chunk)

    def run_as(self, image: str) -> RunAs:
        """Who containers of `image` run as (see `users`), from its USER and its own /etc/passwd and
        /etc/group, read from a container that never starts (the engine reads them too, at every run)."""
        if image not in self._users:
            declared = str(self._config(image).get("User") or "")
            try:
                passwd, group = self._kept_files(image, ("/etc/passwd", "/etc/group"))
                self._users[image] = users.run_as(declared, passwd=passwd, group=group)
            except users.RefusedUser as exc:
                raise SandboxError(str(exc)) from None
        return self._users[image]

    def _config(self, image: str) -> dict[str, Any]:
        """The image's configuration (USER, VOLUME, ...); kept for an image ID, which never changes."""
        if image in self._configs:
            return self._configs[image]
        with engine_errors(f"looking up {image}"):
            config = self.client.images.get(image).attrs.get("Config") or {}
        if image.startswith("sha256:"):
            self._configs[image] = config
        return config

    def _kept_files(self, image: str, paths: tuple[str, ...]) -> list[str | None]:
        """`_image_files`, read once per image ID (see `ImageFiles`): an ID's files never change."""
        kept = self.image_files.get(image, paths)
        if kept is None:
            kept = self._image_files(image, *paths)
            self.image_files.put(image, paths, kept)
        return kept

    def _image_files(self, image: str, *paths: str) -> list[str | None]:
        """Small text files of an image, each None where absent; RefusedUser for one that is not a plain
        file of at most FILE_MAX_BYTES (the engine would follow a link, or read it whole)."""
        with engine_errors(f"reading {image}"):
            created = self.client.api.create_container(image, command=["/"], entrypoint=[], network_disabled=True,
                                                       labels={OWNER: self._owner})
            try:
                return [self._image_file(created["Id"], path) for path in paths]
            finally:
                self.client.api.remove_container(created["Id"], force=True, v=True)

    def _image_file(self, container: str, path: str) -> str | None:
        try:
            stream, _ = self.client.api.get_archive(container, path)
        except docker.errors.NotFound:
            return None
        refused = users.RefusedUser(f"the image's {path} is not a plain file of at most "
                                    f"{users.FILE_MAX_BYTES // 1024**2} MiB")
        data = bytearray()
        for chunk in stream:  # a tar of the one file: its header, the file, padding
            data += chunk
            if len(data) > users.FILE_MAX_BYTES + 4 * tarfile.BLOCKSIZE:
                raise refused
        try:
            with tarfile.open(fileobj=io.BytesIO(bytes(data))) as archive:
                member = archive.next()
                content = archive.extractfile(member) if member is not None and member.isfile() else None
                if member is None or content is None or member.size > users.FILE_MAX_BYTES:
                    raise refused
                return content.read().decode("utf-8", errors="replace")
        except tarfile.TarError:
            raise refused from None

    def ensure_base(self, preferred: str | None = None, *, log: Log = print) -> str:
        """The base image's ID (see `baseimage.ensure_base`), as recorded when this runner first made or found
        it; also the keeper of /output unless one was set. Images are built FROM this ID, never its tag."""
        tag = baseimage.wanted_base(preferred)
        known = self.trusted.get(tag)
        if known is None or not self._present(known):
            tag = baseimage.ensure_base(preferred, present=self._present, pull=self._pulled,
                                        import_rootfs=self._import_rootfs, log=log)
            known = self.trusted.get(tag)
        if known is None or not self._present(known):
            with engine_errors(f"looking up {tag}"):
                known = _id(self.client.images.get(tag))
            self.trusted.put(tag, known)
        self.keeper_image = self.keeper_image or known
        return known

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
            answer = self.client.api.import_image_from_file(str(archive), repository=repository, tag=tag_name)
        found = re.search(r"sha256:[0-9a-f]{64}", str(answer))
        if found:  # the engine's answer names the imported image: recorded by ID at once, not found by tag later
            self.trusted.put(tag, found.group())

    # --- output areas ------------------------------------------------------------------------

    @contextlib.contextmanager
    def output_area(self, size: int, *, user: str = NOBODY) -> Iterator[DockerOutputArea]:
        """An empty /output of `size` bytes, from the pool or new; back to the pool when emptied (in
        the background: the next job finds it empty, and this one does not wait)."""
        with self._pool_lock:
            idle = self._idle.setdefault((size, user), [])
            area = idle.pop() if idle else None
            broken, self._broken = self._broken, []
        for gone in broken:  # areas the background could not empty, closed here (closing waits for the reaper)
            gone.close()
        area = area or self._new_area(size, user)
        try:
            yield area
        except BaseException:
            area.close()
            raise
        if area.dirty:
            self._later(self._recycle, (size, user), area)
        else:
            self._pooled((size, user), area)

    def _recycle(self, key: tuple[int, str], area: DockerOutputArea) -> None:
        try:
            emptied = area.empty()
        except SandboxError:
            emptied = False
        if emptied:
            self._pooled(key, area)
        else:
            with self._pool_lock:
                self._broken.append(area)

    def _pooled(self, key: tuple[int, str], area: DockerOutputArea) -> None:
        """Back to the pool; past MAX_IDLE_AREAS the oldest kind of area is let go (each declared user of
        each image has its own: a warm runner must not keep one per image it ever ran)."""
        with self._pool_lock:
            self._idle.setdefault(key, []).append(area)
            while sum(map(len, self._idle.values())) > MAX_IDLE_AREAS:
                oldest = next(k for k, areas in self._idle.items() if areas)
                self._broken.append(self._idle[oldest].pop(0))  # closed by the next output_area() or close()
                if not self._idle[oldest]:
                    del self._idle[oldest]

    def _new_area(self, size: int, user: str) -> DockerOutputArea:
        keeper_image = self._helper_image()
        if not any(self._idle.values()):
            self.remove_orphans()
        with engine_errors("preparing /output"):
            return DockerOutputArea(self.client, keeper_image, size=size, user=user,
                                    labels={OWNER: self._owner}, drain=self.drain)

    def _helper_image(self) -> str:
        """The image of the runner's own containers (keepers, removals): the base image once `ensure_base` ran."""
        if self.keeper_image is None:
            raise SandboxError("no keeper image configured for the runner's own containers (call ensure_base first)")
        return self.keeper_image

    # --- host folders a container left ------------------------------------------------------

    def remove_as(self, folder: Path, user: str) -> bool:
        """EMPTY_OUTPUT, run as `user` in a helper container of the keeper image with `folder` as its /output
        (the one host path it sees); whether `folder` is empty now. The helper carries this runner's OWNER
        label: one left by a runner that died meanwhile is swept as its runs are."""
        with engine_errors(f"emptying {folder}"):
            helper = self.client.containers.create(
                self._helper_image(), ["sh", "-c", EMPTY_OUTPUT], user=user, labels={OWNER: self._owner},
                mounts=[docker.types.Mount("/output", str(folder), type="bind")], **_helper_options())
            try:
                helper.start()
                exit_code: int = helper.wait(timeout=REMOVAL_TIMEOUT_S)["StatusCode"]
            finally:
                helper.remove(force=True)
        return exit_code == 0

    # --- clean-up after dead runners ---------------------------------------------------------

    def remove_orphans(self) -> int:
        """Remove the runs and output areas whose runner process on this host has died (killed,
        crashed): containers first, so their volumes are free to go. Another runner may be removing
        the same ones at this moment; what it removed first is not an error."""
        found = 0
        with engine_errors("cleaning up"):
            # sparse: the listing's own labels, without inspecting each container (a job's sweep was 4 requests)
            for container in self.client.containers.list(all=True, filters={"label": OWNER}, sparse=True):
                if _orphaned(container.attrs.get("Labels") or {}):
                    found += _removed(container.remove, force=True)
            for volume in self.client.volumes.list(filters={"label": OWNER}):
                if _orphaned(volume.attrs.get("Labels") or {}):
                    found += _removed(volume.remove)
        return found

    def remove_labelled(self, job: str) -> int:
        """Remove containers left by a runner that died while running `job`. Only a dead runner's: a
        live runner in another checkout (or another challenge repository on this engine) may be
        running a submission of the same name at this moment."""
        with engine_errors("cleaning up"):
            found = self.client.containers.list(all=True, filters={"label": f"{LABEL}={job}"}, sparse=True)
            return sum(_removed(container.remove, force=True) for container in found
                       if _orphaned(container.attrs.get("Labels") or {}))

    # --- runs --------------------------------------------------------------------------------

    def run(self, spec: RunSpec, output: OutputArea | None = None) -> Outcome:
        if output is not None and not isinstance(output, DockerOutputArea):
            raise TypeError("a DockerEngine runs only into its own output areas")
        if clash := self._volume_refusal(spec):
            return Outcome(exit_code=None, wall_time_s=0.0, start_error=clash)
        with engine_errors("starting the container"):
            container = self._create(spec, output)
        try:
            with engine_errors("running the container"):
                return self._start_and_wait(container, spec)
        finally:
            self._remove_later(container)

    def _remove_later(self, container: Container) -> None:
        self._later(container.remove, force=True, v=True)  # v: anonymous volumes too, should the engine make any

    def _later(self, chore: Callable[..., object], *args: object, **kwargs: object) -> None:
        """Chores no job waits for (removing finished containers, emptying areas); `drain` waits."""
        if self._reaper is None:
            self._reaper = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reaper")
        self._removals = [f for f in self._removals if not f.done()]  # a warm runner runs for months
        self._removals.append(self._reaper.submit(chore, *args, **kwargs))

    def _create(self, spec: RunSpec, output: DockerOutputArea | None) -> Container:
        volumes = {str(m.host): {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in spec.mounts}
        memory = spec.memory
        if output is not None:
            output.prepare()
            volumes.update(output.mount(spec.output_path))
            output.dirty = True
            memory += output.size  # what it writes to the tmpfs is charged to its memory: /output's own budget
        devices = [docker.types.DeviceRequest(device_ids=list(spec.gpus), capabilities=[["gpu"]])] if spec.gpus else []
        # containers.create's own translation of its options, without the inspection it adds after creating:
        # a job creates two containers, and the engine's answer holds all a run needs (its ID).
        created = self.client.api.create_container(**_create_container_args(dict(
            image=spec.image,
            version=self.client.api._version,
            command=list(spec.command) if spec.command else None,
            user=spec.user.user,
            group_add=list(spec.user.groups) or None,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=int(spec.cpus * 1e9),
            pids_limit=spec.pids,
            ulimits=[docker.types.Ulimit(name="nofile", soft=spec.open_files, hard=spec.open_files)],
            shm_size=spec.shm_size,
            tmpfs=self._scratch(spec, volumes),
            volumes=volumes,
            device_requests=devices,
            log_config=docker.types.LogConfig(
                type="json-file", config={"max-size": str(spec.log_bytes), "max-file": "1"}),
            runtime=spec.runtime,
            environment={"HOME": spec.user.home} if spec.user.home else None,
            labels={OWNER: self._owner, **({LABEL: spec.job} if spec.job else {}),
                    **({CHECKOUT: str(spec.checkout)} if spec.checkout else {})},
            detach=True,
        )))
        return self.client.containers.prepare_model({"Id": created["Id"]})

    def _volume_refusal(self, spec: RunSpec) -> str | None:
        """Why the image cannot run with these mounts: a VOLUME it declares is not an absolute path, or lies
        inside a read-only mount (`/input/x`), where the engine would make its folder and be refused at every
        start, as the engine's own trouble: the submission would stay pending for ever. The image's fault,
        said before anything starts. Paths are read as the engine cleans them (`//input/x`, `/tmp/../input`)."""
        read_only = [PurePosixPath(_clean(m.target)) for m in spec.mounts if m.read_only]
        for declared in self._config(spec.image).get("Volumes") or {}:
            if not declared.startswith("/"):
                return f"the image declares VOLUME {declared}, which is not an absolute path"
            path = PurePosixPath(_clean(declared))
            inside = next((t for t in read_only if path != t and path.is_relative_to(t)), None)
            if inside is not None:
                return f"the image declares VOLUME {declared}, inside {inside}, which the runner mounts read-only"
        return None

    def _scratch(self, spec: RunSpec, mounts: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
        """/tmp, and each VOLUME the image declares where nothing is mounted: tmpfs of the run's scratch size
        (charged to its memory). The engine would make those disk-backed volumes without a size limit."""
        taken = {_clean(mount["bind"]) for mount in mounts.values()}
        declared = {_clean(path) for path in self._config(spec.image).get("Volumes") or {}} - taken
        return {path: f"rw,nosuid,nodev,size={spec.tmp_size}" for path in ["/tmp", *sorted(declared - {"/tmp"})]}

    def _start_and_wait(self, container: Container, spec: RunSpec) -> Outcome:
        gpu = self.gpu_reader(spec.gpus[0]) if spec.gpus and self.gpu_reader else (lambda: None)
        with Sampler(memory_reader(container.id), MEMORY_INTERVAL_S) as memory, Sampler(gpu, GPU_INTERVAL_S) as gpus:
            started = time.monotonic()
            try:
                container.start()
            except docker.errors.APIError as exc:
                if (cannot := _cannot_start(exc)) is None:
                    raise  # the engine's own trouble
                return Outcome(exit_code=cannot[0], wall_time_s=0.0, start_error=cannot[1])
            exit_code, timed_out, stopped = _wait(container, spec)
            wall = time.monotonic() - started
        container.reload()
        stdout, stderr, both = _logs(container)
        return Outcome(
            exit_code=exit_code,
            wall_time_s=round(wall, 3),
            timed_out=timed_out,
            stopped=stopped,
            oom_killed=bool(container.attrs["State"].get("OOMKilled")) and not timed_out and not stopped,
            stderr_tail=_tail(stderr),
            stdout_tail=_tail(stdout),
            peak_memory_bytes=max(memory.samples, default=None),
            gpu=flare_gpu_summary(gpus.samples),
            logs=both.decode("utf-8", errors="replace")[-spec.log_bytes:],
        )


def _clean(path: str) -> str:
    """An absolute container path as the engine reads it (Go's filepath.Clean): one leading slash, no '.' or '..'."""
    return "/" + posixpath.normpath(path).lstrip("/")


def _helper_options() -> dict[str, Any]:
    """How the runner's own containers run (an output area's keeper, a removal): the trusted base image's
    tools, never a participant's code, yet boxed as a run is (no network, read-only root, no capabilities),
    with little memory and few processes, and logged nowhere."""
    return dict(entrypoint=[], network_mode="none", read_only=True, cap_drop=["ALL"],
                security_opt=["no-new-privileges"], mem_limit=64 * 1024**2, pids_limit=16,
                log_config=docker.types.LogConfig(type="none"))


def _cannot_start(exc: docker.errors.APIError) -> tuple[int, str] | None:
    """The exit code a shell gives (127 not found, 126 not executable) and runc's reason, when the image's
    own command cannot be started (it does not exist, is a folder, is not executable): the image's fault,
    a failed result. None for anything else, which stays the engine's trouble."""
    text = str(exc.explanation or exc)
    match = _EXEC_REFUSED.search(text)
    if match is None:
        return None
    reason = match["reason"]
    return (127 if "not found" in reason or "no such file" in reason else 126), reason[:ERROR_LINE_MAX]


def _load_reason(exc: docker.errors.DockerException) -> str:
    """The engine's reason, one line, without the runner's own paths (its scratch folder for the load)."""
    text = (getattr(exc, "explanation", None) or str(exc)).strip().splitlines()[0]
    return re.sub(r"/\S*/docker-import-\d+/", "", text)[:200]


SGR = re.compile(r"\x1b\[[0-9;]*m")


def build_failure(build_log: Iterable[Mapping[str, Any]], error: str) -> str:
    """Why a build failed, in one line: the failing step, the last line it printed (the cause, such as
    "/bin/sh: 1: python: not found") and the engine's error (which only gives the exit code)."""
    step, cause = "", ""
    for chunk in build_log:
        for line in SGR.sub("", str(chunk.get("stream", ""))).splitlines():  # stderr comes coloured
            line = line.strip()
            if line.startswith("Step ") and " : " in line:
                step, cause = line.partition(" : ")[2], ""
            elif line and not line.startswith(("--->", "---> ", "Removing intermediate container")):
                cause = line
        error = str(chunk.get("error") or error)
    parts = [f"step {step!r}" if step else "", cause if cause != error.strip() else "", error.strip()]
    return printable(": ".join(part for part in parts if part), 600)


def _orphaned(labels: Mapping[str, str]) -> bool:
    """Whether the runner named in `labels` ran on this host and is gone."""
    owner_host, _, pid = labels.get(OWNER, "").partition(":")
    return owner_host == socket.gethostname() and pid.isdigit() and not process_alive(int(pid))


def _removed(remove: Callable[..., None], **kwargs: object) -> int:
    """1 if `remove` removed it; 0 if it was gone already, is being removed by another runner, or (a
    volume) is still in use by a container that is going away: the next sweep takes it."""
    try:
        remove(**kwargs)
        return 1
    except docker.errors.NotFound:
        return 0
    except docker.errors.APIError as exc:
        if exc.status_code == 409:  # removal already in progress, or a volume still in use
            return 0
        raise


def _wait(container: Container, spec: RunSpec) -> tuple[int | None, bool, str | None]:
    """The exit code, whether the time limit was reached, and why the watch stopped it (the container
    is killed in both cases). Without a watch it is one blocking wait, the common case's only cost."""
    started = time.monotonic()
    while True:
        left = spec.time_limit - (time.monotonic() - started)
        if left > 0:
            step = left if spec.watch is None else min(left, WATCH_INTERVAL_S)
            asked = time.monotonic()
            try:
                return container.wait(timeout=step).get("StatusCode"), False, None
            except requests.exceptions.RequestException:
                if time.monotonic() - asked < step - 1:  # not our timeout: the engine failed
                    raise
        ran = time.monotonic() - started
        reason = spec.watch(ran) if spec.watch is not None else None
        if reason is None and ran < spec.time_limit:
            continue
        with contextlib.suppress(docker.errors.APIError):  # it may have ended meanwhile
            container.kill()
        return container.wait(timeout=30).get("StatusCode"), reason is None, reason


def _logs(container: Container) -> tuple[bytes, bytes, bytes]:
    """The run's stdout, stderr, and both as they came, from one request: the engine frames each chunk
    of a container without a terminal (`_create` gives none one) with its stream (1 stdout, 2 stderr;
    others are the engine's own) and its size."""
    api = container.client.api
    url = f"{api.base_url}/v{api.api_version}/containers/{container.id}/logs"
    with api.get(url, params={"stdout": 1, "stderr": 1}, timeout=api.timeout) as response:
        if not response.ok:
            raise SandboxError(f"reading the logs: the engine answered {response.status_code}",
                               transient=response.status_code >= 500)
        raw = response.content
    out: list[bytes] = []
    err: list[bytes] = []
    both: list[bytes] = []
    at = 0
    while at + 8 <= len(raw):
        size = int.from_bytes(raw[at + 4:at + 8], "big")
        chunk = raw[at + 8:at + 8 + size]
        if raw[at] in (1, 2):
            (out if raw[at] == 1 else err).append(chunk)
            both.append(chunk)
        at += 8 + size
    return b"".join(out), b"".join(err), b"".join(both)


def _id(model: Model) -> str:
    """An image's ID as the engine gave it (docker-py's `Model.id`: its "Id")."""
    return cast(str, model.id)  # docker-py has no type information; the engine's IDs are strings


def _tail(stream: bytes) -> list[str]:
    return stream.decode("utf-8", errors="replace").splitlines()[-TAIL_LINES:]
