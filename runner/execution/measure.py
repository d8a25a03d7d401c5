"""Sample a running container's peak memory (cgroups) and GPU memory (NVML) from the host.

Memory: the kernel keeps a high-water mark per cgroup (v2 `memory.peak`, v1
`memory.max_usage_in_bytes`); it vanishes with the container, so it is read while it runs.
GPU: FLARE's convention (../shared/reference/README.md): total minus free on the assigned GPU every
0.1 s; the reported maximum is the largest sample that appears in more than 2% of samples, and the
area under the curve is the sum of samples times 0.1 s.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from runner.errors import ChallengeError

CGROUP = Path("/sys/fs/cgroup")
GPU_INTERVAL_S = 0.1


def cgroup_peak_files(container_id: str, root: Path = CGROUP) -> list[Path]:
    """Where the engine may keep this container's memory high-water mark (v2 first, then v1)."""
    return [
        root / "system.slice" / f"docker-{container_id}.scope" / "memory.peak",
        root / "docker" / container_id / "memory.peak",
        root / "memory" / "docker" / container_id / "memory.max_usage_in_bytes",
        root / "memory" / "system.slice" / f"docker-{container_id}.scope" / "memory.max_usage_in_bytes",
    ]


class Sampler:
    """Calls `read()` every `interval` seconds on a thread until stopped; keeps every value."""

    def __init__(self, read: Callable[[], int | None], interval: float):
        self._read, self._interval = read, interval
        self._stop = threading.Event()
        self.samples: list[int] = []
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            value = self._read()
            if value is not None:
                self.samples.append(value)
            if self._stop.wait(self._interval):
                return


def memory_reader(container_id: str, root: Path = CGROUP) -> Callable[[], int | None]:
    files = cgroup_peak_files(container_id, root)

    def read() -> int | None:
        for path in files:
            try:
                return int(path.read_text())
            except (OSError, ValueError):
                continue
        return None

    return read


@dataclass(frozen=True)
class GpuUsage:
    max_bytes: int
    auc_byte_seconds: float
    samples: int


def flare_gpu_summary(samples: list[int], interval: float = GPU_INTERVAL_S) -> GpuUsage | None:
    """FLARE's stable maximum (largest value seen in more than 2% of samples) and the AUC."""
    if not samples:
        return None
    counts = Counter(samples)
    stable = [value for value, n in counts.items() if n > 0.02 * len(samples)]
    return GpuUsage(max_bytes=max(stable) if stable else max(samples),
                    auc_byte_seconds=sum(samples) * interval, samples=len(samples))


class GpuUnreadable(ChallengeError):
    """NVML cannot be read on this host (nvidia-ml-py missing, no NVIDIA driver, a GPU it does not have)."""


def nvml_gpus() -> dict[str, str]:
    """The GPUs NVML sees on this host, by index ("0" -> "NVIDIA H100 80GB HBM3"); GpuUnreadable says why not."""
    nvml = _nvml()
    with _nvml_errors(nvml, "NVML cannot list the GPUs"):
        return {str(i): str(nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(i)))
                for i in range(nvml.nvmlDeviceGetCount())}


def nvml_readers(indices: Sequence[str]) -> dict[str, Callable[[], int | None]]:
    """A reader of used memory (total minus free) for each GPU index a runner was given, each opened now:
    a runner that cannot measure its GPUs says so when it starts (GpuUnreadable), not in each submission."""
    nvml = _nvml()
    readers = {}
    for index in indices:
        if not index.isdigit():
            raise GpuUnreadable(f"GPU {index!r}: the runner measures GPUs by index (0, 1, ...)")
        with _nvml_errors(nvml, f"NVML cannot read GPU {index}"):
            readers[index] = _used_memory(nvml, nvml.nvmlDeviceGetHandleByIndex(int(index)))
    return readers


def _used_memory(nvml: ModuleType, handle: object) -> Callable[[], int | None]:
    def read() -> int | None:
        info = nvml.nvmlDeviceGetMemoryInfo(handle)
        return int(info.total - info.free)

    return read


def _nvml() -> ModuleType:
    """pynvml, initialised (NVML counts its initialisations: a second one costs nothing)."""
    try:
        import pynvml  # type: ignore[import-untyped]  # only runners with GPUs need it; it ships no types
    except ImportError:
        raise GpuUnreadable("NVML cannot be read: pynvml is not installed (install nvidia-ml-py)") from None
    nvml: ModuleType = pynvml
    with _nvml_errors(nvml, "NVML cannot be read"):
        nvml.nvmlInit()
    return nvml


@contextlib.contextmanager
def _nvml_errors(nvml: ModuleType, what: str) -> Iterator[None]:
    try:
        yield
    except nvml.NVMLError as exc:  # "NVML Shared Library Not Found", "Driver Not Loaded", "Invalid Argument"
        raise GpuUnreadable(f"{what}: {exc}") from None
