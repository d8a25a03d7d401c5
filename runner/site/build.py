"""Run a site builder (MkDocs or Zensical) over the staging folder that `pages` generated."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from runner.errors import ChallengeError

BUILDERS = ("mkdocs", "zensical")
GENERATED_CONFIG = "mkdocs.generated.yml"
NAV_FILE = ".nav.json"  # site.pages writes it beside the pages; a dot file, so builders do not publish it


class BuildError(ChallengeError):
    """The site builder failed; the message holds its last error line."""


@dataclass(frozen=True)
class SiteConfig:
    """The two folders mkdocs.yml names: where pages are staged and where the site is written."""

    root: Path
    stage: Path
    site: Path
    templates: Path
    assets: Path

    @classmethod
    def read(cls, root: Path) -> SiteConfig:
        path = root / "mkdocs.yml"
        if not path.is_file():
            raise BuildError(f"{path} not found: run from the repository root or pass --root")
        # mkdocs.yml may carry !!python/name tags for Markdown extensions: read them as plain data.
        class Loader(yaml.SafeLoader):
            pass

        Loader.add_multi_constructor("", lambda _loader, _suffix, _node: None)
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}
        return cls(root=root, stage=root / config.get("docs_dir", "docs"), site=root / config.get("site_dir", "site"),
                   templates=root / "site" / "templates", assets=root / "site" / "assets")


def builder_config(config: SiteConfig) -> Path:
    """The configuration the builders read: mkdocs.yml as organizers wrote it (INHERIT), plus the
    navigation that page generation wrote beside the pages, so the navigation follows phase order
    and challenge names without a MkDocs hook (Zensical runs none). Beside mkdocs.yml, because
    Zensical resolves its folders from the configuration's own folder."""
    path = config.root / GENERATED_CONFIG
    settings: dict[str, object] = {"INHERIT": "mkdocs.yml"}
    nav = config.stage / NAV_FILE
    if nav.is_file():
        settings["nav"] = json.loads(nav.read_text(encoding="utf-8"))
    text = "# Written by `challenge build` from mkdocs.yml and the generated pages; edit mkdocs.yml instead.\n"
    text += yaml.safe_dump(settings, sort_keys=False, allow_unicode=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def build_site(config: SiteConfig, builder: str = "mkdocs", *, strict: bool = False) -> Path:
    """Build the staged pages into the site folder with the chosen builder; `strict` turns
    warnings (broken links in organizers' pages) into failures."""
    settings = builder_config(config).name
    last = config.site.with_name(f".{config.site.name}-builder")  # beside the site, never in it, as the cache
    if builder == "mkdocs":  # MkDocs' own build, redoing only what changed (runner.site.incremental)
        if last.is_file() and last.read_text(encoding="utf-8") != builder:
            shutil.rmtree(config.site, ignore_errors=True)  # another builder's files do not pass for its own
        cache = config.site.with_name(f".{config.site.name}-mkdocs-cache")
        cmd = [sys.executable, "-m", "runner.site.incremental", settings, str(cache)]
    elif builder == "zensical":  # Zensical keeps its own cache and removes stale files: --clean would drop both
        exe = shutil.which("zensical") or str(Path(sys.executable).with_name("zensical"))
        switched = not last.is_file() or last.read_text(encoding="utf-8") != builder
        cmd = [exe, "build", "-f", settings, *(["--clean"] if switched else [])]
    else:
        raise BuildError(f"unknown site builder {builder!r}; choose one of {', '.join(BUILDERS)}")
    if strict:
        cmd.append("--strict")
    try:
        done = subprocess.run(cmd, cwd=config.root, capture_output=True, text=True, check=False, env=builder_env())
    except FileNotFoundError:
        raise BuildError(f"{builder} is not installed (pip install {builder})") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        raise BuildError(f"{builder} build failed: {lines[-1] if lines else 'no output'}")
    last.write_text(builder, encoding="utf-8")
    return config.site


def builder_env() -> dict[str, str]:
    """The environment the site builder runs in, for builds and `challenge serve` alike: without the
    MkDocs 2 banner, which speaks of MkDocs' future, not of this site."""
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
