"""An in-process `Executor` with scripted containers, so the job logic is tested in milliseconds.

Each image follows a script of `Behaviour`s (write these files or links to /output, exit with a
code, time out, run out of memory, report measurements, or make the executor itself fail), one per
run, the last one repeating. Outputs live in a real temporary folder and are read back through the
same tar checks as the keeper agent's stream (`outputs.extract_tar`), so a link is refused exactly as
on the real engine. The real-engine tests stay the proof of isolation; this proves the bookkeeping
around it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.execution import archives
from runner.execution.images import image_tag
from runner.execution.measure import GpuUsage
from runner.execution.outputs import OutputLimits, extract_tar
from runner.execution.sandbox import NOBODY, EngineInfo, Log, Outcome, OutputArea, RunAs, RunSpec, SandboxError

FAKE_BASE = "fake-base:1"
NO_SPACE = "OSError: [Errno 28] No space left on device"

Writer = Callable[[Mapping[str, Path], Path], None]  # (host folder by mount target, output included; output)


@dataclass(frozen=True)
class Behaviour:
    """What one run of a scripted container does. `write(inputs, output)` computes outputs from the
    mounted folders (`inputs["/input"]`, ...); `raises` makes the executor fail instead of running."""

    files: Mapping[str, bytes | str] = field(default_factory=dict)
    links: Mapping[str, str] = field(default_factory=dict)
    write: Writer | None = None
    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    sleep_s: float = 0.0
    wall_time_s: float | None = None
    timed_out: bool = False
    oom_killed: bool = False
    peak_memory_bytes: int | None = None
    gpu: GpuUsage | None = None
    raises: SandboxError | None = None


class FakeOutputArea:
    """/output as a host temporary folder, read back as a tar stream like the keeper agent's."""

    def __init__(self, size: int, fail: Callable[[str], None]):
        self.path = Path(tempfile.mkdtemp(prefix="fake-output-"))
        self.size, self._fail = size, fail

    def collect(self, target: Path, limits: OutputLimits = OutputLimits()) -> int:
        """Copy /output into `target` through the real checks; raises UnsafeOutput as Docker's would."""
        self._fail("collect")
        stream = io.BytesIO()
        with tarfile.open(fileobj=stream, mode="w") as archive:
            archive.add(self.path, arcname="output")  # links are stored as links, never followed
        stream.seek(0)
        return extract_tar(stream, target, strip="output", limits=limits.within(self.size))

    def clear(self) -> None:
        """Empty the folder now, as Docker's keeper does before the next run."""
        self._fail("clear")
        _empty(self.path)

    def used(self) -> int:
        return sum(p.lstat().st_size for p in self.path.rglob("*") if p.is_file() and not p.is_symlink())

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


class FakeExecutor:
    """The `Executor` interface without an engine; records what it was asked to do.

    `runs` lists every RunSpec executed, `builds` every (folder, tag) built (`contexts` the extra
    context folders each build was given), `removed` every job
    whose leftovers were cleaned up. Set `leftovers[job]` or `orphans` to play a dead runner, and
    `fail(method, error, ...)` to make the next calls of `image_id`, `build`, `run`, `collect`,
    `clear`, `remove_labelled`, `remove_as`, `output_area`, `load_archive`, `run_as` or `describe` raise. `loaded`
    lists the image IDs of the archives loaded. `credentials` says which registries it pulls from logged in;
    `users[image ID]` who an image's containers run as (NOBODY unless set; a SandboxError there is raised,
    as for a user the image does not define), `areas` the user of each output area provisioned, `emptied`
    each host folder emptied as a user (`remove_as`): the folder, the user, and what was in it then.
    """

    def __init__(self, *, gpus: tuple[str, ...] = (), runtimes: tuple[str, ...] = ("runc",),
                 credentials: Mapping[str, bool | None] | None = None):
        self.gpus, self.runtimes, self.credentials = gpus, runtimes, dict(credentials or {})
        self.images: dict[str, str] = {}  # reference, tag or ID -> image ID
        self.scripts: dict[str, list[Behaviour]] = {}  # image ID -> behaviours still to play
        self.runs: list[RunSpec] = []
        self.builds: list[tuple[Path, str]] = []
        self.contexts: list[dict[str, Path]] = []
        self.leftovers: dict[str, int] = {}
        self.orphans = 0
        self.removed: list[str] = []
        self.loaded: list[str] = []  # image IDs of the archives loaded
        self.users: dict[str, RunAs | SandboxError] = {}
        self.areas: list[str] = []
        self.emptied: list[tuple[Path, str, list[str]]] = []
        self.open_areas = 0
        self.closed = False
        self._failures: dict[str, list[SandboxError]] = {}

    def __enter__(self) -> FakeExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- scripting ---------------------------------------------------------------------------

    def add_image(self, ref: str, *behaviours: Behaviour) -> str:
        """Make `ref` known (as if pulled or built); its runs play `behaviours` in turn, the last
        one repeating. Returns its image ID: `ref` itself when it is one."""
        image_id = ref if ref.startswith("sha256:") else "sha256:" + hashlib.sha256(ref.encode()).hexdigest()
        self.images[ref] = self.images[image_id] = image_id
        self.scripts[image_id] = list(behaviours) or [Behaviour()]
        return image_id

    def fail(self, method: str, *errors: SandboxError) -> None:
        """The next calls of `method` raise `errors`, one each, before behaving normally again."""
        self._failures.setdefault(method, []).extend(errors)

    def _fail(self, method: str) -> None:
        pending = self._failures.get(method)
        if pending:
            raise pending.pop(0)

    # --- images ------------------------------------------------------------------------------

    def image_id(self, ref: str) -> str:
        self._fail("image_id")
        if ref in self.images:
            return self.images[ref]
        if "@sha256:" in ref:
            raise SandboxError(f"pulling {ref}: image not found (manifest unknown)")
        raise SandboxError(f"image {ref} is not on this runner")

    def build(self, folder: Path, *, name: str, base: str | None, args: Mapping[str, str] | None = None,
              extra_context: Mapping[str, Path] | None = None) -> str:
        """The image scripted under `name` (a plain do-nothing one if none was), built from `folder`;
        `contexts` records the extra folders each build was given."""
        self._fail("build")
        if not (folder / "Dockerfile").is_file():
            raise SandboxError(f"building {folder} failed: no Dockerfile")
        tag = image_tag(folder, name=name, base=base, args=args, extra_context=extra_context)
        self.builds.append((folder, tag))
        self.contexts.append(dict(extra_context or {}))
        image_id = self.images.get(name) or self.add_image(name)
        self.images[tag] = image_id
        return image_id

    def load_archive(self, path: Path, *, max_bytes: int = 32 * 1024**3) -> str:
        """The image an archive holds, through the same checks as Docker's: an archive this fake saved
        loads as the image it was saved from; one not scripted yet runs as a plain do-nothing image."""
        self._fail("load_archive")
        with tempfile.TemporaryDirectory(prefix="fake-archive-") as tmp:
            image = archives.sanitize(path, Path(tmp) / "image.tar", max_bytes=max_bytes)
        found = self.images.get(image.image_id) or self.add_image(image.image_id)
        self.loaded.append(found)
        return found

    def save_archive(self, image: str, path: Path) -> None:
        """A minimal docker save layout: manifest.json naming the image's config by its digest, no layers.
        The config names the image, so an image saved here loads as itself (as Docker's config digest does)."""
        image_id = self.image_id(image)
        config = json.dumps({"rootfs": {"type": "layers", "diff_ids": []}, "fake": image_id}).encode()
        digest = hashlib.sha256(config).hexdigest()
        self.images[f"sha256:{digest}"] = image_id
        manifest = json.dumps([{"Config": f"{digest}.json", "RepoTags": [f"{image}:latest"], "Layers": []}]).encode()
        with tarfile.open(path, "w") as archive:
            for name, data in ((f"{digest}.json", config), (archives.MANIFEST, manifest)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))

    def run_as(self, image: str) -> RunAs:
        self._fail("run_as")
        found = self.users.get(image, RunAs())
        if isinstance(found, SandboxError):
            raise found
        return found

    def ensure_base(self, preferred: str | None = None, *, log: Log = print) -> str:
        """The base, runnable as a do-nothing image unless scripted otherwise."""
        base = preferred or FAKE_BASE
        self.scripts.setdefault(self.images.setdefault(base, base), [Behaviour()])
        return base

    def describe(self) -> EngineInfo:
        self._fail("describe")
        return EngineInfo(engine="fake", runtimes=self.runtimes)

    def has_credentials(self, registry: str) -> bool | None:
        return self.credentials.get(registry, False)

    # --- output areas and clean-up -----------------------------------------------------------

    @contextlib.contextmanager
    def output_area(self, size: int, *, user: str = NOBODY) -> Iterator[FakeOutputArea]:
        self._fail("output_area")
        area = FakeOutputArea(size, self._fail)
        self.areas.append(user)
        self.open_areas += 1
        try:
            yield area
        finally:
            area.close()
            self.open_areas -= 1

    def remove_as(self, folder: Path, user: str) -> bool:
        """Empty `folder` as Docker's helper does, as this process's user (a fake cannot switch to `user`)."""
        self._fail("remove_as")
        self.emptied.append((folder, user, sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))))
        _empty(folder)
        return not any(folder.iterdir())

    def remove_labelled(self, job: str) -> int:
        self._fail("remove_labelled")
        self.removed.append(job)
        return self.leftovers.pop(job, 0)

    def remove_orphans(self) -> int:
        found, self.orphans = self.orphans, 0
        return found

    def close(self) -> None:
        self.closed = True

    # --- runs --------------------------------------------------------------------------------

    def run(self, spec: RunSpec, output: OutputArea | None = None) -> Outcome:
        """Play the image's next behaviour, refusing what a real engine would refuse first."""
        self._fail("run")
        self._refuse(spec)
        self.runs.append(spec)
        behaviour = self._next(spec.image)
        if behaviour.raises is not None:
            raise behaviour.raises
        started = time.monotonic()
        time.sleep(min(behaviour.sleep_s, spec.time_limit))
        fits = _write(behaviour, spec, output) if isinstance(output, FakeOutputArea) else True
        outcome = _outcome(behaviour, spec, no_space=not fits, elapsed=round(time.monotonic() - started, 3))
        if spec.watch is not None:  # once, when it has written everything it will
            outcome.stopped = spec.watch(outcome.wall_time_s)
        return outcome

    def _refuse(self, spec: RunSpec) -> None:
        if spec.image not in self.scripts:
            raise SandboxError(f"starting the container: image not found (No such image: {spec.image})")
        if spec.runtime and spec.runtime not in self.runtimes:
            raise SandboxError(f"starting the container: unknown or invalid runtime name: {spec.runtime}")
        if any(gpu not in self.gpus for gpu in spec.gpus):
            raise SandboxError('starting the container: could not select device driver "" with '
                               "capabilities: [[gpu]]")

    def _next(self, image_id: str) -> Behaviour:
        script = self.scripts[image_id]
        return script.pop(0) if len(script) > 1 else script[0]


def _empty(folder: Path) -> None:
    """Everything in `folder` removed, what a run made read-only made writable first (as EMPTY_OUTPUT does)."""
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            for inner in (child, *(p for p in child.rglob("*") if p.is_dir() and not p.is_symlink())):
                inner.chmod(0o700)
            shutil.rmtree(child)
        else:
            child.unlink()


def _write(behaviour: Behaviour, spec: RunSpec, area: FakeOutputArea) -> bool:
    """Write the behaviour's outputs into the area; False if they overran its size (ENOSPC)."""
    for name, content in behaviour.files.items():
        path = area.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    for name, target in behaviour.links.items():
        (area.path / name).symlink_to(target)
    if behaviour.write is not None:
        behaviour.write({**{m.target: m.host for m in spec.mounts}, spec.output_path: area.path}, area.path)
    return area.used() <= area.size


def _outcome(behaviour: Behaviour, spec: RunSpec, *, no_space: bool, elapsed: float) -> Outcome:
    """The Outcome a real engine would report: killed at the time limit (137), killed past the
    memory limit (137, OOM), or failing with ENOSPC when it wrote past the size of /output."""
    timed_out = behaviour.timed_out or behaviour.sleep_s > spec.time_limit
    oom = not timed_out and (behaviour.oom_killed or (behaviour.peak_memory_bytes or 0) > spec.memory)
    stderr = f"{behaviour.stderr}\n{NO_SPACE}" if no_space else behaviour.stderr
    exit_code = 137 if timed_out or oom else (1 if no_space else behaviour.exit_code)
    wall = behaviour.wall_time_s if behaviour.wall_time_s is not None else elapsed
    logs = behaviour.stdout + stderr
    return Outcome(
        exit_code=exit_code, wall_time_s=spec.time_limit if timed_out else wall, timed_out=timed_out,
        oom_killed=oom, stderr_tail=stderr.splitlines()[-50:], stdout_tail=behaviour.stdout.splitlines()[-50:],
        peak_memory_bytes=min(behaviour.peak_memory_bytes, spec.memory) if behaviour.peak_memory_bytes else None,
        gpu=behaviour.gpu, logs=logs[-spec.log_bytes:],
    )
