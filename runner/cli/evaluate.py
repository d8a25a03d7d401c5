"""`challenge evaluate`: run submissions in the sandbox and write their results, with progress."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from runner.errors import printable
from runner.evaluation.archives import ENV_RUNNER_KEY
from runner.evaluation.cache import DEFAULT_MAX_AGE_S, DEFAULT_MAX_BYTES
from runner.evaluation.job import ENV_DATA_ROOT, RunnerConfig
from runner.evaluation.queue import JobReport, run_jobs
from runner.execution import certificates
from runner.execution.docker_engine import DockerEngine
from runner.execution.measure import nvml_readers
from runner.execution.sandbox import Executor
from runner.execution.trusted import TrustedImages
from runner.tree.model import Submission
from runner.tree.schema_types import Size
from runner.tree.sealing import Identity, identities, read_identity_file
from runner.tree.store import Store

from . import summary, warm_client
from .common import SubParsers, UsageError, err, out, state_dir
from .keys import runner_keys, runner_store

ENV_GPUS = "CHALLENGE_GPUS"
ENV_BUILD_CA = "CHALLENGE_BUILD_CA_CERTS"
# Where a runner host keeps what must outlive one workflow job (a job's checkout is cleaned each time):
# cache/, logs/, training/ (to resume training) and preserved/. Default: ROOT/build.
TRUSTED_IMAGES = "trusted-images.json"  # in the state folder: the IDs of the images this runner built or chose
STYLES = {"succeeded": "green", "failed": "red", "error": "bold red", "skipped": "dim", "busy": "yellow"}


def register(sub: SubParsers) -> None:
    e = sub.add_parser("evaluate", help=summary("evaluate"))
    e.add_argument("submissions", nargs="*", type=Path, help="submission YAML files")
    e.add_argument("--pending", action="store_true", help="every submission that has no result yet")
    e.add_argument("--rerun", action="store_true", help="replace existing results")
    e.add_argument("--shard", type=shard, help="I/N: only the submissions whose key hashes to shard I of N, "
                   "so N runners split --pending without coordinating")
    e.add_argument(warm_client.OPTION, metavar="SOCKET", help="hand the work to the warm runner listening there "
                   f"(`challenge runner --socket SOCKET`; or ${warm_client.ENV_RUNNER})")
    add_runner_options(e)
    e.set_defaults(func=cmd_evaluate)


def add_runner_options(parser: argparse.ArgumentParser) -> None:
    """How this runner host is set up: the options of every command that evaluates (`runner_config`)."""
    parser.add_argument("--data-root", type=Path, default=os.environ.get(ENV_DATA_ROOT),
                        help=f"hidden data root (or ${ENV_DATA_ROOT})")
    parser.add_argument("--allow-local-images", action="store_true",
                        help="local runs: accept local image IDs (sha256:...), and image archives at file:// or "
                             "private-network addresses")
    parser.add_argument("--base-image", help="Python base for building evaluation images (default: "
                        "python:3.11-slim, else an offline Debian base)")
    parser.add_argument("--runtime", help="container runtime, e.g. runsc for gVisor")
    parser.add_argument("--gpus", default=os.environ.get(ENV_GPUS, ""),
                        help=f"GPU indices this runner may assign, e.g. 0 or 0,1 (or ${ENV_GPUS})")
    parser.add_argument("--cache-dir", type=Path, help="reuse of algorithm outputs (default: STATE/cache: "
                        "$CHALLENGE_STATE_DIR, else ROOT/build)")
    parser.add_argument("--cache-max-size", type=size, default=DEFAULT_MAX_BYTES,
                        help="evict the least recently used outputs beyond this size, e.g. 20g (default: 20g)")
    parser.add_argument("--cache-max-age", type=float, default=DEFAULT_MAX_AGE_S / 86400,
                        help="evict outputs unused for this many days (default: 30)")
    parser.add_argument("--cpu-fallback", action="store_true",
                        help="run GPU phases without a GPU where this runner has none (demo, local tries); "
                             "results say so")
    parser.add_argument("--runner-key", type=Path,
                        help=f"this runner's age identity, to open image archives encrypted to it (or "
                             f"${ENV_RUNNER_KEY} holding the key itself)")
    parser.add_argument("--log-dir", type=Path, help="full container logs for organizers (default: STATE/logs)")
    parser.add_argument("--training-dir", type=Path, help="training phases: each submission's checkpoints and "
                        "model, kept across runner restarts (default: STATE/training)")
    add_preserved_dir(parser)


def add_preserved_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preserved-dir", type=Path, help="archives of algorithm images kept on this runner "
                        "(`challenge preserve`; default: STATE/preserved)")


def cmd_evaluate(args: argparse.Namespace) -> int:
    # GitHub's SSH keys seal what phases withhold; the locks are shared by the checkouts of this runner host.
    store = runner_store(args.root, keys=runner_keys())
    if args.pending == bool(args.submissions):
        raise UsageError("give submission files or --pending (one of the two)")
    queue = store.pending() if args.pending else [store.submission(p) for p in args.submissions]
    if args.shard:
        queue = [s for s in queue if in_shard(s.key, args.shard)]
    return evaluate_queue(queue, store=store, args=args, rerun=args.rerun)


def evaluate_queue(queue: list[Submission], *, store: Store, args: argparse.Namespace, rerun: bool = False) -> int:
    """Evaluate `queue` on this runner as `add_runner_options` set it up, with progress; the exit status."""
    config = runner_config(args, store)
    warm = getattr(args, "executor", None)  # set by a warm runner (`challenge runner`), which keeps it open
    executor, base = warm or runner_executor(args.base_image, root=store.root, gpus=config.gpu_ids)
    with contextlib.nullcontext() if warm else contextlib.closing(executor):
        reports = with_progress(queue, store=store, executor=executor, config=config, base=base, rerun=rerun,
                                sweep_dead=getattr(args, "sweep_dead", True))  # a warm runner decides (`warm`)
    return 1 if any(r.status == "error" for r in reports) else 0


def runner_config(args: argparse.Namespace, store: Store) -> RunnerConfig:
    """The RunnerConfig of `add_runner_options`' options; folders default to <state folder>/<name>."""
    if args.data_root is None:
        raise UsageError(f"no hidden data root: pass --data-root DIR or set {ENV_DATA_ROOT}")
    build = state_dir(store.root)
    return RunnerConfig(data_root=Path(args.data_root).resolve(), allow_local_images=args.allow_local_images,
                        runtime=args.runtime, gpu_ids=gpu_ids(args.gpus),
                        cpu_fallback=args.cpu_fallback, cache_dir=(args.cache_dir or build / "cache").resolve(),
                        cache_max_bytes=args.cache_max_size, cache_max_age_s=args.cache_max_age * 86400,
                        log_dir=(args.log_dir or build / "logs").resolve(),
                        runner_keys=runner_identity(args.runner_key),
                        training_dir=(args.training_dir or build / "training").resolve(),
                        preserved_dir=preserved_dir(args, store))


def preserved_dir(args: argparse.Namespace, store: Store) -> Path:
    return (args.preserved_dir or state_dir(store.root) / "preserved").resolve()


def gpu_ids(text: str) -> tuple[str, ...]:
    """The GPUs of --gpus or CHALLENGE_GPUS: "0,1" -> ("0", "1")."""
    return tuple(g.strip() for g in text.split(",") if g.strip())


def runner_executor(base_image: str | None, *, root: Path, gpus: tuple[str, ...] = ()) -> tuple[Executor, str]:
    """This runner's executor and its Python base image's ID (also used to build evaluation images)."""
    executor = runner_engine(root=root, gpus=gpus)
    return executor, executor.ensure_base(base_image, log=err.print)


def runner_engine(*, root: Path, gpus: tuple[str, ...] = ()) -> Executor:
    """This runner's executor (Docker), which knows the images it trusts by the IDs recorded in the state
    folder, and measures `gpus` through NVML: opened now, so a runner that cannot read them stops at its
    start with one line instead of leaving each GPU submission pending. Choosing another executor
    (Kubernetes Jobs) is a change here alone."""
    readers = nvml_readers(gpus) if gpus else {}
    return DockerEngine(gpu_reader=readers.__getitem__ if readers else None,
                        trusted=TrustedImages(state_dir(root) / TRUSTED_IMAGES),
                        build_certificates=build_certificates())


def build_certificates() -> bytes | None:
    """The CA bundle the runner's builds trust: the PEM file named by CHALLENGE_BUILD_CA_CERTS, if set
    (hosts behind TLS inspection; see `execution.certificates`)."""
    path = os.environ.get(ENV_BUILD_CA, "").strip()
    try:
        return certificates.read_bundle(Path(path)) if path else None
    except certificates.BadBundle as exc:
        raise UsageError(f"{ENV_BUILD_CA}: {exc}") from None


def runner_identity(path: Path | None) -> tuple[Identity, ...]:
    """The runner's age identity, which opens image archives encrypted to its public key: from
    --runner-key FILE, else the key itself in CHALLENGE_RUNNER_KEY, else none."""
    if path is not None:
        return tuple(read_identity_file(path))
    text = os.environ.get(ENV_RUNNER_KEY, "").strip()
    found = tuple(identities([text])) if text else ()
    if text and not found:
        raise UsageError(f"{ENV_RUNNER_KEY} holds no age identity (AGE-SECRET-KEY-1...) or OpenSSH private key")
    return found


def size(text: str) -> int:
    """Bytes from 2048, 512m or 20g: the tree's own reading of sizes."""
    try:
        return TypeAdapter(Size).validate_python(text)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(exc.errors()[0]["msg"]) from None


def shard(text: str) -> tuple[int, int]:
    index, _, total = text.partition("/")
    if not (index.isdigit() and total.isdigit() and 1 <= int(index) <= int(total)):
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N with 1 <= I <= N")
    return int(index), int(total)


def in_shard(key: str, which: tuple[int, int]) -> bool:
    """A stable hash (not Python's salted hash()), so every runner agrees on the split."""
    index, total = which
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % total == index - 1


def with_progress(queue: list[Submission], *, store: Store, executor: Executor, config: RunnerConfig,
                  base: str | None = None, rerun: bool = False, sweep_dead: bool = True) -> list[JobReport]:
    """run_jobs with a progress bar and one coloured line per finished submission."""
    if not queue:
        out.print("nothing to evaluate")
        return []
    with progress_bar() as progress:
        task = progress.add_task("evaluating", total=len(queue))

        def done(report: JobReport) -> None:
            progress.advance(task)
            detail = f": {report.detail}" if report.detail else ""  # a participant's text: never markup
            progress.console.print(f"[{STYLES[report.status]}]{report.status}[/] "
                                   f"{escape(printable(report.submission + detail))}", markup=True, highlight=False)

        def case_done(case: str, index: int, total: int, measured: dict[str, Any]) -> None:
            how = "reused" if measured.get("reused") else f"{measured['wall_time_s']:.2f} s"
            progress.update(task, description=f"evaluating: case {index + 1}/{total} {case} ({how})")

        def note(line: str) -> None:  # retries, and what was swept of dead runners
            progress.console.print(f"[yellow]{escape(printable(line))}[/]", markup=True, highlight=False)

        return run_jobs(queue, store=store, executor=executor, config=config, base=base, rerun=rerun,
                        sweep_dead=sweep_dead, on_done=done, on_case=case_done, log=note)


def progress_bar() -> Progress:
    """The runner's progress bar on stderr, gone once done (the lines printed above it stay)."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=True)
