"""`challenge demo`: the example challenges evaluated for real, the site built and served."""

from __future__ import annotations

import argparse
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from runner.evaluation import examples, reruns
from runner.evaluation.job import RunnerConfig, RunnerError
from runner.evaluation.queue import JobReport
from runner.evaluation.reruns import Choice
from runner.execution.sandbox import Executor
from runner.settings import add_options
from runner.site import serve
from runner.site.build import build_site
from runner.tree.policy import took
from runner.tree.records import Keys
from runner.tree.signing import SigningKey, load_or_create, signers_line
from runner.tree.store import Store
from runner.tree.verification import signers_path

from . import summary
from .common import SubParsers, err, out, port, settings_here, stage
from .evaluate import runner_executor, with_progress
from .keys import SIGNING_KEY_FILE
from .leaderboard import cmd_leaderboard
from .reruns import carry, preserve
from .site import generate_pages


@dataclass(frozen=True)
class DemoRerun:
    """A rerun an example challenge stands for, run once its source phase has results."""

    challenge: str
    source: str
    target: str
    choice: Choice
    preserve: bool = False  # keep the source phase's images on the runner first


RERUNS = (
    # a living benchmark: the final test's algorithms on a new scanner's data
    DemoRerun("ellipsoid-segmentation", "final-test", "new-scanner", Choice("all"), preserve=True),
    # retraining the best (NODE21, STOIC): the top 2 of the final phase trained again on more secret data
    DemoRerun("lesion-training", "final", "retrain", Choice("top", 2)),
)


DEMO_RUNNER = "demo-runner"  # the principal the demo's results are signed as


def register(sub: SubParsers) -> None:
    d = sub.add_parser("demo", help=summary("demo"))
    d.add_argument("--no-serve", action="store_true", help="stop after building the site")
    d.add_argument("--port", type=port, default=8000)
    d.add_argument("--workspace", type=Path, help="where the demo works (default: ROOT/.demo)")
    add_options(d, "base_image")
    d.set_defaults(func=cmd_demo)


def _rerun(rerun: DemoRerun, store: Store, *, executor: Executor, config: RunnerConfig,
           base: str) -> list[JobReport]:
    """Carry the rerun's results over and evaluate them; nothing if its challenge or phases are not in
    this workspace. What an earlier demo carried is kept, and its results are not made again."""
    paths = [store.paths.phase_file(rerun.challenge, slug) for slug in (rerun.source, rerun.target)]
    if not all(path.is_file() for path in paths):
        return []
    with stage(f"re-running {rerun.challenge}: {rerun.source} -> {rerun.target} ({rerun.choice})"):
        if rerun.preserve and config.preserved_dir is not None:
            preserve(store, store.phase(rerun.challenge, rerun.source), executor=executor,
                     folder=config.preserved_dir)
        carried = carry(store, rerun.challenge, source=rerun.source, target=rerun.target, choice=rerun.choice)
        return with_progress(reruns.queue(store, carried), store=store, executor=executor, config=config, base=base,
                             out=out, err=err)


def cmd_demo(args: argparse.Namespace) -> int:
    started = time.monotonic()
    if not args.no_serve:
        serve.check_port(args.port)  # now, rather than once the evaluations are done
    root, settings = args.root.resolve(), settings_here(args)
    workspace = examples.prepare_workspace(root, (args.workspace or root / ".demo").resolve())
    # The example participants have no GitHub keys: a debugging phase's logs are sealed to the organizers alone.
    store = Store(workspace, keys=Keys(github_keys=lambda login: []), signer=_demo_signer(workspace))
    err.print(f"demo workspace: {workspace}")
    with stage("preparing the base image"):  # built offline once per machine: about 2 minutes
        executor, base = runner_executor(settings, root=workspace, log=err.print)
    err.print(f"base image: {base}")
    with contextlib.closing(executor):
        reports = _evaluate(store, executor=executor, base=base)
    if any(r.status == "error" for r in reports):
        raise RunnerError("some submissions could not be evaluated (see above)")
    for slug in store.slugs():
        for phase in store.phases(slug):
            cmd_leaderboard(argparse.Namespace(root=workspace, challenge=slug, phase=phase, format="table"))
    with stage("building the site"):
        site = build_site(generate_pages(workspace, settings))
    out.print(f"results in {store.base}/*/results/, site built in {site}")
    err.print(f"demo done in {took(time.monotonic() - started)}")
    if not args.no_serve:
        serve.serve_static(site, args.port, log=err.print)
    return 0


def _demo_signer(workspace: Path) -> SigningKey:
    """The demo runner's signing key (in the workspace's build/), listed in the workspace's allowed_signers,
    so that `challenge verify --root WORKSPACE` checks the demo's results as a clone checks a real runner's."""
    key = load_or_create(workspace / "build" / SIGNING_KEY_FILE)
    path = signers_path(workspace)
    listed = path.read_text(encoding="utf-8") if path.is_file() else ""
    if key.public not in listed:
        path.write_text(listed + signers_line(DEMO_RUNNER, key) + "\n", encoding="utf-8")
    return key


def _evaluate(store: Store, *, executor: Executor, base: str) -> list[JobReport]:
    """The examples' hidden data written, their submissions made and evaluated, then the reruns they
    stand for: one stage each."""
    data_root = store.root / "data-root"
    with stage("writing the hidden data"):
        for slug in examples.make_hidden_data(store, data_root):
            err.print(f"hidden data written for {slug} under {data_root}")
    with stage("building and submitting the examples"):
        for example in examples.examples(store):
            err.print(f"submitting example {example.challenge}/{example.folder.name}")
            examples.submit(example, store, executor=executor, base=base)
    # Local runs: local image IDs and file:// archives are fine, and GPU phases run on the CPU here.
    build = store.root / "build"
    config = RunnerConfig(data_root=data_root, allow_local_images=True, cpu_fallback=True,
                          log_dir=build / "logs", cache_dir=build / "cache", training_dir=build / "training",
                          preserved_dir=build / "preserved")
    with stage("evaluating the examples"):
        reports = with_progress(store.pending(), store=store, executor=executor, config=config, base=base, out=out,
                                err=err)
    for rerun in RERUNS:
        reports += _rerun(rerun, store, executor=executor, config=config, base=base)
    return reports
