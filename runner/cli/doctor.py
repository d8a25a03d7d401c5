"""`challenge doctor`: check this runner host before it evaluates anything, one line per check."""

from __future__ import annotations

import argparse
import contextlib

from rich.markup import escape

from runner.evaluation.doctor import Check, Host, examine, failed

from . import summary
from .common import SubParsers, err, open_store, out, settings_here
from .evaluate import add_runner_options, runner_config, runner_engine
from .keys import runner_keys

STYLES = {"ok": "green", "warn": "yellow", "fail": "bold red"}


def register(sub: SubParsers) -> None:
    d = sub.add_parser("doctor", help=summary("doctor"))
    add_runner_options(d)
    d.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Every check with the options `challenge evaluate` would get; 1 if any fails, warnings included or not."""
    settings = settings_here(args)
    # whom the runner seals to: GitHub's keys of github:<login>
    store = open_store(args.root, settings, keys=runner_keys(settings))
    host = Host(config=runner_config(settings, store), state_dir=settings.state(store.root),
                base_image=settings.base_image)
    with contextlib.closing(runner_engine(settings, root=store.root)) as executor:  # no GPUs: NVML is one of the checks
        checks = examine(store, executor, host, log=err.print)
    for check in checks:
        out.print(line(check), markup=True)
    counts = {status: sum(c.status == status for c in checks) for status in STYLES}
    out.print(f"{counts['fail']} failed, {counts['warn']} warning(s), {counts['ok']} ok", markup=False)
    return 1 if failed(checks) else 0


def line(check: Check) -> str:
    """`ok    engine: Docker 27.1; ...`, with `Fix: ...` on a line that is not ok; nothing of it read as markup."""
    fix = f". Fix: {check.fix}" if check.status != "ok" and check.fix else ""
    return f"[{STYLES[check.status]}]{check.status:<4}[/] {escape(f'{check.name}: {check.detail}{fix}')}"
