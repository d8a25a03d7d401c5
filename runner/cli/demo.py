"""`challenge demo`: the example challenges evaluated for real, the site built and served."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from runner.evaluation import examples
from runner.evaluation.job import RunnerConfig, RunnerError
from runner.site import serve
from runner.site.build import build_site
from runner.tree.store import Store

from .common import err, out
from .evaluate import runner_executor, with_progress
from .leaderboard import cmd_leaderboard
from .site import generate_pages


def register(sub) -> None:
    d = sub.add_parser("demo", help="evaluate the example challenges for real, build and serve the site")
    d.add_argument("--no-serve", action="store_true", help="stop after building the site")
    d.add_argument("--port", type=int, default=8000)
    d.add_argument("--workspace", type=Path, help="where the demo works (default: ROOT/.demo)")
    d.add_argument("--base-image", help="Python base image for the example images")
    d.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    workspace = examples.prepare_workspace(root, (args.workspace or root / ".demo").resolve())
    store = Store(workspace)
    err.print(f"demo workspace: {workspace}")
    executor, base = runner_executor(args.base_image)
    err.print(f"base image: {base}")
    data_root = workspace / "data-root"
    for slug in examples.make_hidden_data(store, data_root):
        err.print(f"hidden data written for {slug} under {data_root}")
    with contextlib.closing(executor):
        for example in examples.examples(store):
            err.print(f"submitting example {example.challenge}/{example.folder.name}")
            examples.submit(example, store, executor=executor, base=base)
        # Local runs: local image IDs and file:// archives are fine, and GPU phases run on the CPU here.
        config = RunnerConfig(data_root=data_root, allow_local_images=True, cpu_fallback=True,
                              log_dir=workspace / "build" / "logs", cache_dir=workspace / "build" / "cache")
        reports = with_progress(store.pending(), store=store, executor=executor, config=config, base=base)
    if any(r.status == "error" for r in reports):
        raise RunnerError("some submissions could not be evaluated (see above)")
    for slug in store.slugs():
        for phase in store.phases(slug):
            cmd_leaderboard(argparse.Namespace(root=workspace, challenge=slug, phase=phase, format="table"))
    site = build_site(generate_pages(workspace))
    out.print(f"results in {store.base}/*/results/, site built in {site}")
    if not args.no_serve:
        serve.serve_static(site, args.port, log=err.print)
    return 0
