"""`challenge evaluate`: run submissions in the sandbox and write their results, with progress."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from runner.errors import printable
from runner.evaluation.job import RunnerConfig
from runner.evaluation.queue import JobReport, run_jobs
from runner.execution import certificates
from runner.execution.docker_engine import DockerEngine
from runner.execution.measure import nvml_readers
from runner.execution.sandbox import Executor
from runner.execution.trusted import ImageFiles, TrustedImages
from runner.settings import Settings, add_options, variable
from runner.tree.sealing import Identity, identities, read_identity_file
from runner.tree.store import Store
from runner.tree.submission_model import Submission

from . import summary, warm_client
from .common import Job, SubParsers, UsageError, progress_bar
from .keys import runner_keys, runner_store

# What the options of every command that evaluates set (`runner_config`): how this runner host is set up.
RUNNER_OPTIONS = ("data_root", "allow_local_images", "base_image", "runtime", "gpus", "cache_dir", "cache_max_size",
                  "cache_max_age", "cpu_fallback", "runner_key", "log_dir", "training_dir", "preserved_dir")
# Where a runner host keeps what must outlive one workflow job (a job's checkout is cleaned each time):
# cache/, logs/, training/ (to resume training) and preserved/. Default: ROOT/build.
TRUSTED_IMAGES = "trusted-images.json"  # in the state folder: the IDs of the images this runner built or chose
IMAGE_FILES = "image-files"  # in the state folder: each image's /etc/passwd and /etc/group, by image ID
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
    add_options(parser, *RUNNER_OPTIONS)


@dataclass(frozen=True)
class Warm:
    """What a warm runner (`challenge runner`) lends a job: its open executor and base image, and whether
    this job sweeps what dead runners left."""

    executor: Executor
    base: str
    sweep_dead: bool


def cmd_evaluate(args: argparse.Namespace) -> int:
    return evaluate_job(args, job=Job.here())


def evaluate_job(args: argparse.Namespace, *, job: Job, warm: Warm | None = None) -> int:
    """`challenge evaluate` with `job`'s variables, folder and consoles (a warm runner's client's, or ours)."""
    settings = job.settings(args)
    # GitHub's SSH keys seal what phases withhold; the locks are shared by the checkouts of this runner host.
    store = runner_store(job.cwd / args.root, settings=settings, keys=runner_keys(settings))
    if args.pending == bool(args.submissions):
        raise UsageError("give submission files or --pending (one of the two)")
    queue = store.pending() if args.pending else [store.submission(job.cwd / p) for p in args.submissions]
    if args.shard:
        queue = [s for s in queue if in_shard(s.key, args.shard)]
    return evaluate_queue(queue, store=store, settings=settings, job=job, rerun=args.rerun, warm=warm)


def evaluate_queue(queue: list[Submission], *, store: Store, settings: Settings, job: Job, rerun: bool = False,
                   warm: Warm | None = None) -> int:
    """Evaluate `queue` on this runner as `settings` set it up, with progress; the exit status. A `warm`
    runner's executor stays open for its next job."""
    config = runner_config(settings, store)
    executor, base = (warm.executor, warm.base) if warm else runner_executor(settings, root=store.root,
                                                                               gpus=config.gpu_ids, log=job.err.print)
    with contextlib.nullcontext() if warm else contextlib.closing(executor):
        reports = with_progress(queue, store=store, executor=executor, config=config, base=base, rerun=rerun,
                                sweep_dead=warm.sweep_dead if warm else True, out=job.out, err=job.err)
    return 1 if any(r.status == "error" for r in reports) else 0


def runner_config(settings: Settings, store: Store) -> RunnerConfig:
    """The RunnerConfig of `settings`; folders default to <state folder>/<name>."""
    if settings.data_root is None:
        raise UsageError(f"no hidden data root: pass --data-root DIR or set {variable('data_root')}")
    folder, root = settings.folder, store.root
    return RunnerConfig(data_root=settings.data_root.resolve(), allow_local_images=settings.allow_local_images,
                        runtime=settings.runtime, gpu_ids=settings.gpus, cpu_fallback=settings.cpu_fallback,
                        cache_dir=folder(settings.cache_dir, "cache", root=root),
                        cache_max_bytes=settings.cache_max_size, cache_max_age_s=settings.cache_max_age * 86400,
                        log_dir=folder(settings.log_dir, "logs", root=root), runner_keys=runner_identity(settings),
                        training_dir=folder(settings.training_dir, "training", root=root),
                        preserved_dir=preserved_dir(settings, store), checkout=root)


def preserved_dir(settings: Settings, store: Store) -> Path:
    return settings.folder(settings.preserved_dir, "preserved", root=store.root)


def runner_executor(settings: Settings, *, root: Path, gpus: tuple[str, ...] = (),
                    log: Callable[[str], None]) -> tuple[Executor, str]:
    """This runner's executor and its Python base image's ID (also used to build evaluation images)."""
    executor = runner_engine(settings, root=root, gpus=gpus)
    return executor, executor.ensure_base(settings.base_image, log=log)


def runner_engine(settings: Settings, *, root: Path, gpus: tuple[str, ...] = ()) -> Executor:
    """This runner's executor (Docker), which knows the images it trusts by the IDs recorded in the state
    folder, and measures `gpus` through NVML: opened now, so a runner that cannot read them stops at its
    start with one line instead of leaving each GPU submission pending. Choosing another executor
    (Kubernetes Jobs) is a change here alone."""
    readers = nvml_readers(gpus) if gpus else {}
    return DockerEngine(gpu_reader=readers.__getitem__ if readers else None,
                        trusted=TrustedImages(settings.state(root) / TRUSTED_IMAGES),
                        image_files=ImageFiles(settings.state(root) / IMAGE_FILES),
                        build_certificates=build_certificates(settings))


def build_certificates(settings: Settings) -> bytes | None:
    """The CA bundle the runner's builds trust: the PEM file named by CHALLENGE_BUILD_CA_CERTS, if set
    (hosts behind TLS inspection; see `execution.certificates`)."""
    try:
        return certificates.read_bundle(settings.build_ca_certs) if settings.build_ca_certs else None
    except certificates.BadBundle as exc:
        raise UsageError(f"{variable('build_ca_certs')}: {exc}") from None


def runner_identity(settings: Settings) -> tuple[Identity, ...]:
    """The runner's age identity, which opens image archives encrypted to its public key: from
    --runner-key FILE, else the key itself in CHALLENGE_RUNNER_KEY, else none."""
    if settings.runner_key is not None:
        return tuple(read_identity_file(settings.runner_key))
    text = settings.runner_key_text or ""
    found = tuple(identities([text])) if text else ()
    if text and not found:
        raise UsageError(f"{variable('runner_key_text')} holds no age identity (AGE-SECRET-KEY-1...) or OpenSSH "
                         "private key")
    return found


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
                  base: str | None = None, rerun: bool = False, sweep_dead: bool = True, out: Console,
                  err: Console) -> list[JobReport]:
    """run_jobs with a progress bar on `err` and one coloured line per finished submission."""
    if not queue:
        out.print("nothing to evaluate")
        return []
    with progress_bar(err) as progress:
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

