"""The `challenge` command: each GitHub workflow step and each organizer task is one call."""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

import docker.errors
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import __version__, demo, pages, serve
from .baseimage import ensure_base
from .evaluate import ENV_DATA_ROOT, RunnerConfig, RunnerError
from .jobs import JobReport, run_jobs
from .located import ModelError
from .ranking import leaderboard
from .sandbox import DockerSandbox, SandboxError
from .sitebuild import BUILDERS, BuildError, SiteConfig, build_site
from .store import Store

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


class UsageError(RuntimeError):
    """A wrong argument; the message says which and what to do."""


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except (ModelError, RunnerError, SandboxError, BuildError, UsageError, docker.errors.DockerException,
            OSError) as exc:
        if args.verbose:
            err.print(traceback.format_exc(), markup=False)
        err.print(f"error: {exc}", markup=False)
        return 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="challenge", description=__doc__)
    p.add_argument("--version", action="version", version=f"challenge {__version__}")
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: current folder)")
    p.add_argument("-v", "--verbose", action="store_true", help="show full tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", help="validate the challenge tree, or one file or folder")
    c.add_argument("path", nargs="?", type=Path)
    c.set_defaults(func=cmd_check)

    e = sub.add_parser("evaluate", help="evaluate submissions in the sandbox and write their results")
    e.add_argument("submissions", nargs="*", type=Path, help="submission YAML files")
    e.add_argument("--pending", action="store_true", help="every submission that has no result yet")
    e.add_argument("--rerun", action="store_true", help="replace existing results")
    e.add_argument("--data-root", type=Path, default=os.environ.get(ENV_DATA_ROOT),
                   help=f"hidden data root (or ${ENV_DATA_ROOT})")
    e.add_argument("--allow-local-images", action="store_true",
                   help="accept local image IDs (sha256:...) for runs without a registry")
    e.add_argument("--base-image", help="Python base for building evaluation images (default: python:3.11-slim, "
                   "else an offline Debian base)")
    e.add_argument("--runtime", help="container runtime, e.g. runsc for gVisor")
    e.set_defaults(func=cmd_evaluate)

    lb = sub.add_parser("leaderboard", help="print a phase's leaderboard")
    lb.add_argument("challenge")
    lb.add_argument("phase")
    lb.add_argument("--format", choices=("table", "csv", "json"), default="table")
    lb.set_defaults(func=cmd_leaderboard)

    b = sub.add_parser("build", help="generate pages, then build the static site")
    b.add_argument("--builder", choices=BUILDERS, default="mkdocs")
    b.add_argument("--pages-only", action="store_true", help="only generate the staging folder")
    b.add_argument("--strict", action="store_true", help="fail on warnings such as broken links")
    b.set_defaults(func=cmd_build)

    s = sub.add_parser("serve", help="serve the site, regenerating pages as you edit")
    s.add_argument("--port", type=int, default=8000)
    s.set_defaults(func=cmd_serve)

    d = sub.add_parser("demo", help="evaluate the example challenges for real, build and serve the site")
    d.add_argument("--no-serve", action="store_true", help="stop after building the site")
    d.add_argument("--port", type=int, default=8000)
    d.add_argument("--workspace", type=Path, help="where the demo works (default: ROOT/.demo)")
    d.add_argument("--base-image", help="Python base image for the example images")
    d.set_defaults(func=cmd_demo)
    return p


# --- check ----------------------------------------------------------------------------------

def cmd_check(args: argparse.Namespace) -> int:
    store = Store(args.root)
    problems = store.check(args.path)
    for problem in problems:
        out.print(str(problem), markup=False)
    if problems:
        err.print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found")
        return 1
    out.print(f"ok: {args.path or store.base} is valid")
    return 0


# --- evaluate -------------------------------------------------------------------------------

def cmd_evaluate(args: argparse.Namespace) -> int:
    store = Store(args.root)
    if args.pending == bool(args.submissions):
        raise UsageError("give submission files or --pending (one of the two)")
    if args.data_root is None:
        raise UsageError(f"no hidden data root: pass --data-root DIR or set {ENV_DATA_ROOT}")
    queue = store.pending() if args.pending else [store.submission(p) for p in args.submissions]
    config = RunnerConfig(data_root=Path(args.data_root).resolve(), allow_local_images=args.allow_local_images,
                          runtime=args.runtime)
    sandbox = DockerSandbox()
    base = ensure_base(sandbox.client, args.base_image, log=err.print) if _needs_build(store, queue) else None
    reports = evaluate_with_progress(queue, store=store, sandbox=sandbox, config=config, base=base, rerun=args.rerun)
    return 1 if any(r.status == "error" for r in reports) else 0


def _needs_build(store: Store, queue: list) -> bool:
    return any(not store.phase(s.challenge, s.phase).evaluation_image for s in queue)


def evaluate_with_progress(queue: list, **kwargs) -> list[JobReport]:
    if not queue:
        out.print("nothing to evaluate")
        return []
    styles = {"succeeded": "green", "failed": "red", "error": "bold red", "skipped": "dim", "busy": "yellow"}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        task = progress.add_task("evaluating", total=len(queue))

        def done(report: JobReport) -> None:
            progress.advance(task)
            detail = f": {report.detail}" if report.detail else ""
            progress.console.print(f"[{styles[report.status]}]{report.status}[/] {report.submission}{detail}",
                                   markup=True, highlight=False)

        return run_jobs(queue, on_done=done, **kwargs)


# --- leaderboard ----------------------------------------------------------------------------

def cmd_leaderboard(args: argparse.Namespace) -> int:
    store = Store(args.root)
    phase = store.phase(args.challenge, args.phase)
    board = leaderboard(phase, store.results(args.challenge, args.phase))
    titles = [c.title for c in phase.columns]
    records = [{"rank": r.rank, "participant": r.participant, "submission": r.submission,
                **dict(zip(titles, r.values)), "submitted": r.created_at} for r in board.rows]
    if args.format == "json":
        print(json.dumps(records, indent=2))
    elif args.format == "csv":
        import pandas as pd
        print(pd.DataFrame(records, columns=["rank", "participant", "submission", *titles, "submitted"])
              .to_csv(index=False), end="")
    else:
        table = Table(title=f"{args.challenge} / {phase.title}")
        for name in ("Rank", "Participant", "Submission", *titles):
            table.add_column(name, justify="right" if name not in ("Participant", "Submission") else "left")
        for r in board.rows:
            table.add_row(str(r.rank or "–"), r.participant, r.submission,
                          *(pages.fmt(v, phase.score_decimal_places) for v in r.values))
        out.print(table)
    return 0


# --- site -----------------------------------------------------------------------------------

def generate_pages(root: Path) -> SiteConfig:
    config = SiteConfig.read(root)
    pages.generate(Store(root), config.stage, config.templates, config.assets)
    return config


def cmd_build(args: argparse.Namespace) -> int:
    config = generate_pages(args.root.resolve())
    if args.pages_only:
        out.print(f"pages generated in {config.stage}")
        return 0
    site = build_site(config, args.builder, strict=args.strict)
    out.print(f"site built in {site}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    config = SiteConfig.read(root)
    serve.serve_live(root, args.port, lambda: generate_pages(root),
                     [root / "challenges", config.templates, config.assets], log=err.print)
    return 0


# --- demo -----------------------------------------------------------------------------------

def cmd_demo(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    workspace = demo.prepare_workspace(root, (args.workspace or root / ".demo").resolve())
    store = Store(workspace)
    sandbox = DockerSandbox()
    err.print(f"demo workspace: {workspace}")
    base = ensure_base(sandbox.client, args.base_image, log=err.print)
    err.print(f"base image: {base}")
    data_root = workspace / "data-root"
    for slug in demo.make_hidden_data(store, data_root):
        err.print(f"hidden data written for {slug} under {data_root}")
    for example in demo.examples(store):
        err.print(f"building example {example.challenge}/{example.folder.name}")
        demo.submit(example, store, sandbox, base)
    config = RunnerConfig(data_root=data_root, allow_local_images=True)
    reports = evaluate_with_progress(store.pending(), store=store, sandbox=sandbox, config=config, base=base)
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


if __name__ == "__main__":
    sys.exit(main())
