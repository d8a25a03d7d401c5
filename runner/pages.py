"""Render the challenge tree and its results into a staging folder of Markdown for a site builder.

The staging folder holds the organizers' pages as written plus generated ones (the catalog on the
home page, a leaderboard per phase, a JSON export of the catalog). Nothing here depends on
mkdocs' plugin or hook API, so any builder that reads mkdocs.yml (MkDocs, Zensical) renders it.
Files are written only when their content changes, so a watching builder rebuilds what changed.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import jinja2

from .model import Challenge, Phase
from .ranking import leaderboard
from .store import Store

CATALOG_MARK = "<!-- catalog -->"
PAGE_SUFFIXES = {".md", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf", ".csv"}
# Folders of a challenge that are data or code, not pages.
NOT_PAGES = {"submissions", "results", "evaluation", "examples", "data", "phases"}


@dataclass(frozen=True)
class CatalogEntry:
    challenge: Challenge
    status: str
    phases: list[Phase]
    submissions: int


def environment(templates: Path) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["fmt"] = fmt
    env.filters["cell"] = cell
    return env


def fmt(value: float | None, places: int) -> str:
    return "–" if value is None else f"{value:.{places}f}"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def generate(store: Store, stage: Path, templates: Path, assets: Path, *, today: dt.date | None = None) -> list[Path]:
    """Write the whole staging folder; returns the files written or kept. Stale files are removed."""
    today = today or dt.datetime.now(dt.timezone.utc).date()
    env = environment(templates)
    wanted: dict[Path, bytes] = {}
    entries = [catalog_entry(store, slug, today) for slug in store.slugs()]
    _site_pages(store.base, wanted)
    for slug in store.slugs():
        _organizer_pages(store.base / slug, wanted, Path(slug))
        for phase in store.phases(slug).values():
            board = leaderboard(phase, store.results(slug, phase.slug))
            page = env.get_template("leaderboard.md.j2").render(board=board, phase=phase,
                                                                 challenge=store.challenge(slug))
            wanted[Path(slug, "leaderboard", f"{phase.slug}.md")] = page.encode()
            _result_files(store, slug, phase.slug, wanted)
    wanted[Path("index.md")] = _home(store, env, entries).encode()
    wanted[Path("catalog.json")] = (json.dumps([export(e) for e in entries], indent=2) + "\n").encode()
    for path in sorted(assets.rglob("*")) if assets.is_dir() else []:
        if path.is_file():
            wanted[Path("assets", path.relative_to(assets))] = path.read_bytes()
    return _sync(stage, wanted)


def catalog_entry(store: Store, slug: str, today: dt.date) -> CatalogEntry:
    challenge = store.challenge(slug)
    return CatalogEntry(challenge, challenge.current_status(today), list(store.phases(slug).values()),
                        len(store.submission_paths(slug)))


def export(entry: CatalogEntry) -> dict:
    """A catalog record in OpenChallenges' field names, for other catalogs to import."""
    c = entry.challenge
    return {
        "slug": c.slug, "name": c.name, "headline": c.headline, "description": c.description,
        "status": entry.status, "platform": c.platform,
        "start_date": c.start_date.isoformat() if c.start_date else None,
        "end_date": c.end_date.isoformat() if c.end_date else None,
        "incentives": list(c.incentives), "submission_types": list(c.submission_types),
        "input_data_types": list(c.input_data_types), "operation": c.operation,
        "categories": list(c.categories), "keywords": list(c.tags), "website_url": c.website_url,
        "doi": c.doi, "organizations": [{"name": o.name, "role": o.role, "url": o.url} for o in c.organizations],
    }


def _home(store: Store, env: jinja2.Environment, entries: list[CatalogEntry]) -> str:
    intro_path = store.base / "index.md"
    intro = intro_path.read_text(encoding="utf-8") if intro_path.is_file() else "# Challenges\n\n"
    catalog = env.get_template("catalog.md.j2").render(entries=entries)
    if CATALOG_MARK in intro:
        return intro.replace(CATALOG_MARK, catalog)
    return intro.rstrip() + "\n\n" + catalog


def _site_pages(folder: Path, wanted: dict[Path, bytes]) -> None:
    """Site-wide pages (guides for organizers and participants) kept beside the challenges."""
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.is_file() and path.suffix.lower() in PAGE_SUFFIXES and path.name != "index.md":
            wanted[Path(path.name)] = path.read_bytes()


def _organizer_pages(folder: Path, wanted: dict[Path, bytes], prefix: Path) -> None:
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and path.suffix.lower() in PAGE_SUFFIXES and rel.parts[0] not in NOT_PAGES:
            wanted[prefix / rel] = path.read_bytes()


def _result_files(store: Store, slug: str, phase: str, wanted: dict[Path, bytes]) -> None:
    folder = store.base / slug / "results" / phase
    for path in sorted(folder.glob("*/*.json")):
        wanted[Path(slug, "results", phase, path.relative_to(folder))] = path.read_bytes()


def _sync(stage: Path, wanted: dict[Path, bytes]) -> list[Path]:
    stage.mkdir(parents=True, exist_ok=True)
    for rel, data in wanted.items():
        target = stage / rel
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    keep = {stage / rel for rel in wanted}
    for path in sorted(stage.rglob("*"), reverse=True):
        if path.is_file() and path not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    return sorted(keep)

