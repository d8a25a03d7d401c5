"""`challenge data download|seal`: a challenge's data sets for participants (see `tree.datasets`).

    challenge data download CHALLENGE [--dest DIR] [--identity KEY] [--only NAME]   participants
    challenge data seal CHALLENGE --links FILE [--all]                              organizers
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from runner.tree.datasets import (
    DataError,
    Source,
    check_links,
    download,
    open_links,
    seal_links,
    sources,
)
from runner.tree.located import load_yaml
from runner.tree.model import Dataset
from runner.tree.people import load_registration
from runner.tree.sealing import Recipient, SealError, read_identity_file, recipient
from runner.tree.store import Store

from . import summary
from .common import SubParsers, UsageError, err, github, open_store, out, settings_here


def register(sub: SubParsers) -> None:
    data = sub.add_parser("data", help=summary("data"))
    commands = data.add_subparsers(dest="data_command", required=True)
    d = commands.add_parser("download", help="download, verify (sha256) and resume a challenge's data sets")
    d.add_argument("challenge")
    d.add_argument("--dest", type=Path, default=Path("data"), help="where to save them (default: ./data)")
    d.add_argument("--identity", "-i", type=Path, help="your SSH private key (or age identity), to open the links "
                   "of data behind terms sealed for you")
    d.add_argument("--login", help="your GitHub login: opens data-access/<login>.age directly")
    d.add_argument("--only", action="append", metavar="NAME", help="only this data set (repeatable)")
    d.set_defaults(func=cmd_download)
    s = commands.add_parser("seal", help="seal the links of data behind terms to each registered participant's "
                                         "SSH keys (organizers)")
    s.add_argument("challenge")
    s.add_argument("--links", type=Path, required=True, help="a local YAML file, `data set name: URL` per line; "
                   "never commit it")
    s.add_argument("--all", action="store_true", help="seal again for everyone (after the links or keys changed); "
                   "by default only registrations without an access file")
    s.add_argument("--repo", help="OWNER/NAME (default: $GITHUB_REPOSITORY)")
    s.add_argument("--api-url", help="GitHub's REST API (default: $GITHUB_API_URL, else api.github.com)")
    s.set_defaults(func=cmd_seal)


# --- participants -----------------------------------------------------------------------------------


def cmd_download(args: argparse.Namespace) -> int:
    store = open_store(args.root, settings_here())
    challenge = store.challenge(args.challenge)
    if not challenge.data:
        raise UsageError(f"challenge {args.challenge!r} lists no data sets (data: in its challenge.yml)")
    wanted = _wanted(challenge.data, args.only)
    links = {}
    if args.identity and any(d.terms for d in wanted):
        links = open_links(store.paths, challenge.slug, read_identity_file(args.identity), login=args.login)
    found, gated = sources(challenge, links)
    chosen = [s for s in found if s.dataset in wanted]
    for dataset in (d for d in gated if d in wanted):
        err.print(f"skipped {dataset.name}: behind terms; registered participants open their links with "
                  "--identity ~/.ssh/id_ed25519", markup=False)
    failed = _download_all(chosen, args.dest)
    return 1 if failed or any(d in wanted for d in gated) else 0


def _wanted(datasets: tuple[Dataset, ...], only: list[str] | None) -> list[Dataset]:
    names = [d.name for d in datasets]
    for name in only or []:
        if name not in names:
            raise UsageError(f"--only {name!r}: no such data set (data sets: {', '.join(names)})")
    return [d for d in datasets if not only or d.name in only]


def _download_all(chosen: list[Source], dest: Path) -> int:
    """Each source in turn under one progress display; the number that failed (each reported)."""
    failed = 0
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=err, transient=True) as progress:
        for source in chosen:
            task = progress.add_task(source.dataset.name, total=source.dataset.size)

            def advance(done: int, total: int | None, task: Any = task) -> None:
                progress.update(task, completed=done, total=total or None)

            def retrying(line: str) -> None:
                progress.console.print(f"[yellow]retry[/] {escape(line)}", markup=True, highlight=False)

            try:
                path = download(source, dest, progress=advance, log=retrying)
            except DataError as exc:
                failed += 1
                progress.console.print(f"[red]failed[/] {escape(str(exc))}", markup=True, highlight=False)
                continue
            progress.console.print(f"[green]ok[/] {escape(f'{source.dataset.name}: {path}')} (sha256 verified)",
                                   markup=True, highlight=False)
    return failed


# --- organizers -------------------------------------------------------------------------------------


def cmd_seal(args: argparse.Namespace) -> int:
    store = open_store(args.root, settings_here())
    challenge = store.challenge(args.challenge)
    links = check_links(challenge, load_yaml(args.links).data or {}, where=str(args.links))
    hub = github(settings_here(), args.repo, args.api_url, log=lambda line: err.print(line, markup=False))
    sealed, skipped = 0, 0
    for login in _registered(store, challenge.slug):
        target = store.paths.data_access_file(challenge.slug, login)
        if target.is_file() and not args.all:
            continue
        recipients = _recipients(hub.ssh_keys(login), login)
        if not recipients:
            skipped += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(seal_links(challenge, login, links, recipients))
        out.print(f"sealed {target.relative_to(store.root)}", markup=False)
        sealed += 1
    out.print(f"{sealed} sealed, {skipped} skipped; commit challenges/{challenge.slug}/data-access/ (never the "
              f"links file)", markup=False)
    return 1 if skipped else 0


def _registered(store: Store, slug: str) -> list[str]:
    """The logins whose registration is merged and valid (it accepts the rules, and with them the terms)."""
    logins = []
    for path in sorted(store.paths.registrations(slug).glob("*.yml")):
        try:
            load_registration(path)
        except (ValueError, OSError) as exc:  # ModelError is a ValueError
            err.print(f"skipped {path.stem}: {exc}", markup=False)
            continue
        logins.append(path.stem)
    return logins


def _recipients(keys: list[str], login: str) -> list[Recipient]:
    usable = []
    for text in keys:
        try:
            usable.append(recipient(text, where=f"{login}'s key"))
        except SealError:
            continue  # a kind age cannot seal to (ecdsa, a security key): the others may do
    if not usable:
        err.print(f"skipped {login}: GitHub publishes no ed25519 or RSA SSH key for this login; they add one at "
                  "https://github.com/settings/keys, then run this again", markup=False)
    return usable
