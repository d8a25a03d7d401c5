"""`challenge doctor`: whether a runner host can evaluate every phase of the tree the first time.

Each check is a `Check`: ok; warn (it may still work, and the line says why not surely); fail (a phase
cannot be evaluated here, or its hidden data is exposed), with the fix whenever it is not ok. In order:
the engine (reachable, its version and runtimes); GPUs, where a phase needs them (NVML, the NVIDIA
runtime, a GPU seen inside a container run the way the runner runs them); each phase's hidden data
(there, readable by the containers' user, writable by its owner alone) and the key that hashes it for
each result's provenance; free disk for the output
cache and the state folder; keys (the runner's age identity where pending submissions are encrypted to
it, and whom withheld results are sealed to); and the registries phases name (credentials for private
images).

A GPU phase on a host where no GPU is visible fails: its submissions could only wait for another
runner. With --cpu-fallback it is a warning: they run on the CPU, and their results say so.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runner.errors import ChallengeError
from runner.evaluation.archives import ENV_RUNNER_KEY
from runner.evaluation.failures import RunnerError
from runner.evaluation.job import ARCHIVE_MAX_BYTES, RunnerConfig
from runner.evaluation.provenance import DATA_KEY, make_key_command, read_data_key
from runner.execution.measure import GpuUnreadable, nvml_gpus
from runner.execution.sandbox import NOBODY, EngineInfo, Executor, Log, RunSpec, SandboxError, last_line
from runner.tree.phase_model import Phase
from runner.tree.policy import withholds
from runner.tree.records import recipients
from runner.tree.references import registry_of
from runner.tree.store import Store

Status = Literal["ok", "warn", "fail"]
GIB = 1024**3
CONTAINER_UID, CONTAINER_GID = (int(part) for part in NOBODY.split(":"))
# How the organizers' guide has admins set the hidden data's permissions, and the fix printed here: the
# containers' group reads it, its owner (the runner's user) alone writes it, other users see nothing.
DATA_PERMISSIONS = "chgrp -R {gid} {root} && chmod -R u=rwX,g=rX,o= {root}"
GUIDE = "challenges/organizers.md"
GPU_PROBE = ("nvidia-smi", "-L")  # the NVIDIA Container Toolkit puts it into every container given a GPU
GPU_PROBE_TIME_S = 60
GPU_FIX = ("on a machine with an NVIDIA GPU, install its driver and the NVIDIA Container Toolkit, then give the "
           "runner its GPUs (CHALLENGE_GPUS=0); or run those phases on the CPU with --cpu-fallback")
TOOLKIT_FIX = ("install the NVIDIA Container Toolkit and register it with the engine: "
               "nvidia-ctk runtime configure --runtime=docker && systemctl restart docker")


@dataclass(frozen=True)
class Check:
    """One line of `challenge doctor`: what was checked, how it stands, and what to do when it is not ok."""

    name: str
    status: Status
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class DiskFloor:
    """Free space under which a runner folder's disk is a warning, and under which it fails."""

    warn: int = ARCHIVE_MAX_BYTES  # one image archive is downloaded whole into the cache
    fail: int = 4 * GIB  # a job's outputs (1 GiB by default) and their copy in the cache, with room to spare


@dataclass(frozen=True, kw_only=True)
class Host:
    """The runner host as its options set it up (`challenge evaluate`'s), which the doctor examines."""

    config: RunnerConfig
    state_dir: Path
    base_image: str | None = None  # the image the GPU probe runs, as the runner's --base-image picks it
    disk: DiskFloor = field(default_factory=DiskFloor)
    gpus_seen: Callable[[], dict[str, str]] = nvml_gpus  # the GPUs NVML sees, by index


def examine(store: Store, executor: Executor, host: Host, *, log: Log = lambda line: None) -> list[Check]:
    """Every check, in the order printed; `log` hears what takes long (building the base image)."""
    phases = [phase for slug in store.slugs() for phase in store.phases(slug).values()]
    engine, info = engine_check(executor, host.config)
    return [engine, *gpu_checks(phases, executor, host, info=info, log=log), *data_checks(phases, host.config),
            *disk_checks(host), runner_key_check(store, host.config), *sealing_checks(store, phases),
            *registry_checks(phases, executor)]


def failed(checks: Iterable[Check]) -> bool:
    return any(check.status == "fail" for check in checks)


# --- the engine and GPUs ---------------------------------------------------------------------------


def engine_check(executor: Executor, config: RunnerConfig) -> tuple[Check, EngineInfo | None]:
    """The engine's line, and what it said of itself (None when it did not answer)."""
    try:
        info = executor.describe()
    except SandboxError as exc:
        return Check("engine", "fail", str(exc), fix="start the engine (systemctl start docker) and let the "
                     "runner's user use it (the docker group)"), None
    runtimes = ", ".join(info.runtimes) or "none listed"
    if config.runtime and config.runtime not in info.runtimes:
        return Check("engine", "fail", f"{info.engine} offers no runtime {config.runtime} (--runtime), only "
                     f"{runtimes}", fix=f"install {config.runtime} and register it with the engine, or drop "
                     "--runtime"), info
    return Check("engine", "ok", f"{info.engine}; runtimes {runtimes}"), info


def gpu_checks(phases: Sequence[Phase], executor: Executor, host: Host, *, info: EngineInfo | None,
               log: Log) -> list[Check]:
    """One line when no phase needs a GPU or none is visible; else NVML, the runtime and a GPU in a container."""
    needing = [phase for phase in phases if phase.gpus_wanted]
    if not needing:
        return [Check("gpu", "ok", "no phase needs one")]
    names = _names(needing)
    try:
        seen, why = host.gpus_seen(), "NVML sees none"
    except GpuUnreadable as exc:
        seen, why = {}, str(exc)
    if not seen:
        if host.config.cpu_fallback:
            return [Check("gpu", "warn", f"no GPU is visible ({why}): {names} run on the CPU (--cpu-fallback), "
                          "and their results say so", fix=GPU_FIX)]
        return [Check("gpu", "fail", f"no GPU is visible on this host ({why}): it blocks {names}", fix=GPU_FIX)]
    gpus = _given(host.config, seen, wanted=max(phase.gpus_wanted for phase in needing), names=names)
    if isinstance(gpus, Check):
        return [gpus]
    found = Check("gpu", "ok", f"NVML sees {_listed(seen)}; {names} get GPU {','.join(gpus)}")
    if info is None:  # the engine did not answer (its line says so): no container can run
        return [found]
    return [found, _nvidia_runtime(info), _gpu_in_container(executor, host, gpus, log=log)]


def _given(config: RunnerConfig, seen: dict[str, str], *, wanted: int, names: str) -> tuple[str, ...] | Check:
    """The GPUs the runner gives a GPU phase's run, or the line saying why it gives none."""
    fix = f"give the runner the GPUs NVML sees: CHALLENGE_GPUS={','.join(seen)} (or --gpus)"
    unknown = [gpu for gpu in config.gpu_ids if gpu not in seen]
    if unknown:
        return Check("gpu", "fail", f"the runner is given GPU {', '.join(unknown)}, which NVML does not see "
                     f"(it sees {_listed(seen)})", fix=fix)
    try:
        given = config.gpus_for(wanted)
    except RunnerError as exc:
        return Check("gpu", "fail", f"{names}: {exc}", fix=fix)
    if given is None:
        return Check("gpu", "warn", f"NVML sees {_listed(seen)}, but the runner is given too few: {names} run on "
                     "the CPU (--cpu-fallback)", fix=fix)
    return given


def _nvidia_runtime(info: EngineInfo) -> Check:
    if "nvidia" in info.runtimes:
        return Check("nvidia runtime", "ok", f"{info.engine} offers it")
    return Check("nvidia runtime", "warn", f"{info.engine} lists no nvidia runtime; GPUs reach containers only "
                 "where the NVIDIA Container Toolkit is installed", fix=TOOLKIT_FIX)


def _gpu_in_container(executor: Executor, host: Host, gpus: tuple[str, ...], *, log: Log) -> Check:
    """The GPU seen by a container run through the runner's own run path: its sandbox, user and runtime."""
    name = "gpu in a container"
    try:
        image = executor.image_id(executor.ensure_base(host.base_image, log=log))
        outcome = executor.run(RunSpec(image=image, command=GPU_PROBE, gpus=gpus, runtime=host.config.runtime,
                                       time_limit=GPU_PROBE_TIME_S))
    except SandboxError as exc:
        return Check(name, "fail", str(exc), fix=TOOLKIT_FIX)
    if not outcome.ok:
        return Check(name, "fail", f"{' '.join(GPU_PROBE)} failed: {outcome.error_line(GPU_PROBE_TIME_S)}",
                     fix=TOOLKIT_FIX)
    return Check(name, "ok", last_line(outcome.stdout_tail) or f"GPU {','.join(gpus)} given")


# --- hidden data -----------------------------------------------------------------------------------


def data_checks(phases: Sequence[Phase], config: RunnerConfig) -> list[Check]:
    """One line per phase: its folders there (the runner's own layout, `RunnerConfig.phase_data`), and their
    permissions as the containers' user meets them."""
    if not config.data_root.is_dir():
        return [Check("data", "fail", f"the hidden data root {config.data_root} is not a folder",
                      fix=f"make it, with each phase's hidden data (the layout: {GUIDE})")]
    return [_phase_data(phase, config) for phase in phases] + [data_key_check(config)]


def data_key_check(config: RunnerConfig) -> Check:
    """The key that hashes the hidden data for each result's provenance: there, usable, its owner's alone."""
    path = config.data_root / DATA_KEY
    share = "runners that serve the same phases must share one key, or their results' data manifests differ"
    try:
        read_data_key(path)
        mode = path.stat().st_mode
    except FileNotFoundError:
        if not os.access(config.data_root, os.W_OK):  # the first evaluation could not make it
            return Check("data key", "fail", f"{path} is not made, and this runner cannot write "
                         f"{config.data_root} to make it", fix=f"make it once as the data's owner, readable by the "
                         f"runner: {make_key_command(path)} ({share})")
        return Check("data key", "warn", f"{path} is not made yet: the first evaluation makes it",
                     fix=f"with several runners, make it once and copy it to each ({share})")
    except RunnerError as exc:
        return Check("data key", "fail", str(exc), fix=f"make it again: {make_key_command(path)} ({share})")
    if mode & 0o007:  # the containers' group may read it, as the data (containers never see the data root)
        return Check("data key", "warn", f"{path} is readable by every user of this host: whoever reads it can "
                     "test guesses of a small ground truth against the published hashes", fix=f"chmod o= {path}")
    return Check("data key", "ok", f"{path}; {share}")


def _phase_data(phase: Phase, config: RunnerConfig) -> Check:
    name = f"data {phase.challenge}/{phase.slug}"
    try:
        inputs, _ = config.phase_data(phase)
        if phase.submission_kind == "training":
            config.training_data(phase)
    except RunnerError as exc:
        return Check(name, "fail", str(exc), fix=f"put the phase's hidden data there (the layout: {GUIDE})")
    folder = inputs.parent
    walk = _permissions(folder, parents=(config.data_root, folder.parent))
    fix = DATA_PERMISSIONS.format(gid=CONTAINER_GID, root=config.data_root)
    if wrong := [found.line() for found in (walk.unreadable, walk.writable) if found.count]:
        return Check(name, "fail", "; ".join(wrong), fix=fix)
    if walk.public.count:
        return Check(name, "warn", walk.public.line(), fix=fix)
    return Check(name, "ok", f"{walk.files} file(s), readable by the containers' user {NOBODY}, written by "
                 "their owner alone")


@dataclass
class _Found:
    """Paths of one kind a walk found: how many, and the first (which the line names)."""

    what: str
    count: int = 0
    first: Path | None = None

    def add(self, path: Path) -> None:
        self.count += 1
        self.first = self.first or path

    def line(self) -> str:
        more = f" (and {self.count - 1} more)" if self.count > 1 else ""
        return f"{self.first} {self.what}{more}"


@dataclass
class _Walk:
    unreadable: _Found = field(default_factory=lambda: _Found(f"is not readable by the containers' user {NOBODY}"))
    writable: _Found = field(default_factory=lambda: _Found("is writable by others than its owner"))
    public: _Found = field(default_factory=lambda: _Found("is readable by every user of this host"))
    files: int = 0


def _permissions(folder: Path, *, parents: Sequence[Path]) -> _Walk:
    """What is wrong with the modes under `folder` (links are not followed: the containers see them as
    links), and whether `parents` let others than their owners replace what they hold."""
    walk = _Walk()
    for parent in parents:
        if parent.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            walk.writable.add(parent)
    for top, _, names in os.walk(folder, onerror=lambda exc: walk.unreadable.add(Path(exc.filename))):
        for path in (Path(top), *(Path(top, name) for name in names)):
            mode = (info := path.lstat()).st_mode
            if stat.S_ISLNK(mode):
                continue
            if not _container_reads(info):
                walk.unreadable.add(path)
            if mode & (stat.S_IWGRP | stat.S_IWOTH):
                walk.writable.add(path)
            if mode & stat.S_IROTH:
                walk.public.add(path)
            walk.files += not stat.S_ISDIR(mode)
    return walk


def _container_reads(info: os.stat_result) -> bool:
    """Whether the containers' user (NOBODY, no other groups, no capabilities) may read it, as the kernel
    decides: the owner's bits if it is the owner, else the group's if it is the group, else the others'."""
    shift = 6 if info.st_uid == CONTAINER_UID else 3 if info.st_gid == CONTAINER_GID else 0
    wanted = 0o5 if stat.S_ISDIR(info.st_mode) else 0o4  # a folder is listed and entered
    return (info.st_mode >> shift) & wanted == wanted


# --- disk ----------------------------------------------------------------------------------------


def disk_checks(host: Host) -> list[Check]:
    folders = {"disk cache": host.config.cache_dir, "disk state": host.state_dir}
    return [_disk(name, path, host.disk) for name, path in folders.items() if path is not None]


def _disk(name: str, path: Path, floor: DiskFloor) -> Check:
    free = shutil.disk_usage(_existing(path)).free
    detail = f"{_gib(free)} free for {path}"
    fix = ("free space there, or point --cache-dir or CHALLENGE_STATE_DIR at a larger disk (--cache-max-size "
           "bounds the cache)")
    if free < floor.fail:
        return Check(name, "fail", f"{detail}, under {_gib(floor.fail)}", fix=fix)
    if free < floor.warn:
        return Check(name, "warn", f"{detail}, under {_gib(floor.warn)} (one image archive may take that much)",
                     fix=fix)
    return Check(name, "ok", detail)


def _existing(path: Path) -> Path:
    """`path`, or its nearest folder that exists (the runner makes the rest): where its disk is."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _gib(size: int) -> str:
    return f"{size / GIB:.1f} GiB"


# --- keys and registries -------------------------------------------------------------------------


def runner_key_check(store: Store, config: RunnerConfig) -> Check:
    """The runner's age identity, where pending submissions are image archives encrypted to it."""
    encrypted = [s for s in store.pending() if s.image_archive and s.image_archive.encrypted]
    if config.runner_keys:
        return Check("runner key", "ok", f"{len(config.runner_keys)} identity(ies) for encrypted image archives; "
                     f"{len(encrypted)} pending submission(s) are encrypted")
    if not encrypted:
        return Check("runner key", "ok", "none given, and no pending submission is encrypted to it")
    phases = sorted({f"{s.challenge}/{s.phase}" for s in encrypted})
    return Check("runner key", "fail", f"{len(encrypted)} pending submission(s) of {', '.join(phases)} are image "
                 "archives encrypted to the runner's key, and this runner has none: they stay pending here",
                 fix=f"give the runner its key: --runner-key FILE, or {ENV_RUNNER_KEY} holding it (age-keygen -o "
                 "runner.key makes one; participants encrypt to its public key)")


def sealing_checks(store: Store, phases: Sequence[Phase]) -> list[Check]:
    """Per challenge whose phases withhold results: whom the runner seals them to (its own call, `recipients`)."""
    withholding = [phase for phase in phases if withholds(phase)]
    return [_sealing(store, slug, [p for p in withholding if p.challenge == slug])
            for slug in sorted({phase.challenge for phase in withholding})]


def _sealing(store: Store, slug: str, phases: list[Phase]) -> Check:
    name, where = f"sealing {slug}", store.paths.challenge_file(slug).relative_to(store.root)
    try:
        readers = recipients(store.challenge(slug), store.keys, publish=True)
    except ChallengeError as exc:  # a key that is not one, GitHub that does not answer
        return Check(name, "fail", f"results of {_names(phases)} are withheld and cannot be sealed: {exc}",
                     fix=f"correct the recipients in {where} (`challenge check` names each)")
    if not readers:
        return Check(name, "warn", f"results of {_names(phases)} are withheld, and {where} names nobody to seal "
                     "them to: whole results stay in this runner's state folder only",
                     fix=f"add recipients and a publish_key (`challenge keys new`) to {where}")
    return Check(name, "ok", f"results of {_names(phases)} are withheld, sealed to {len(readers)} key(s)")


def registry_checks(phases: Sequence[Phase], executor: Executor) -> list[Check]:
    """The registries phases name (allowed_registries, evaluation_image): private images there need a login."""
    named: dict[str, list[Phase]] = {}
    for phase in phases:
        images = [phase.evaluation_image] if phase.evaluation_image else []
        for registry in {*phase.allowed_registries, *filter(None, map(registry_of, images))}:
            named.setdefault(registry, []).append(phase)
    if not named:
        return [Check("registries", "ok", "no phase names one")]
    return [_registry(registry, named[registry], executor) for registry in sorted(named)]


def _registry(registry: str, phases: list[Phase], executor: Executor) -> Check:
    name = f"registry {registry}"
    fix = f"docker login {registry} as the organizers' account (a token that reads packages)"
    found = executor.has_credentials(registry)
    if found:
        return Check(name, "ok", f"logged in, for {_names(phases)}")
    if found is None:
        return Check(name, "warn", f"cannot tell whether the runner is logged in (its credential store did not "
                     f"answer); private images of {_names(phases)} need it", fix=fix)
    return Check(name, "warn", f"not logged in: private images of {_names(phases)} cannot be pulled (public "
                 "ones can)", fix=fix)


def _names(phases: Iterable[Phase]) -> str:
    return ", ".join(f"{phase.challenge}/{phase.slug}" for phase in phases)


def _listed(seen: dict[str, str]) -> str:
    return ", ".join(f"{index}: {name}" for index, name in seen.items())
