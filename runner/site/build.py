"""Run a site builder (MkDocs or Zensical) over the staging folder that `pages` generated."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def builder_settings(config: SiteConfig) -> dict[str, Any]:
    """What `builder_config` writes: mkdocs.yml as organizers wrote it (INHERIT), plus the navigation
    that page generation wrote beside the pages, if any."""
    settings: dict[str, Any] = {"INHERIT": "mkdocs.yml"}
    nav = config.stage / NAV_FILE
    if nav.is_file():
        settings["nav"] = json.loads(nav.read_text(encoding="utf-8"))
    return settings


def builder_config(config: SiteConfig, settings: dict[str, Any] | None = None) -> Path:
    """The configuration the builders read (`builder_settings`, or `settings` as it gave them), so the
    navigation follows phase order and challenge names without a MkDocs hook (Zensical runs none).
    Beside mkdocs.yml, because Zensical resolves its folders from the configuration's own folder."""
    path = config.root / GENERATED_CONFIG
    settings = builder_settings(config) if settings is None else settings
    text = "# Written by `challenge build` from mkdocs.yml and the generated pages; edit mkdocs.yml instead.\n"
    # libyaml's dumper where PyYAML has it (read back the same; a quarter of the time over 300 challenges' nav)
    text += yaml.dump(settings, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                      allow_unicode=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def generated_settings(path: Path) -> dict[str, Any] | None:
    """What `builder_config` wrote at `path` (INHERIT and, if any, nav), read by libyaml; None for a file
    holding anything else, or not plain data, which only MkDocs' own loader may read."""
    try:
        settings = yaml.load(path.read_bytes(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError):
        return None
    return plain_settings(settings)


def plain_settings(settings: object) -> dict[str, Any] | None:
    """`settings` where they are what `builder_settings` gives (INHERIT and, if any, nav), else None."""
    if not isinstance(settings, dict) or not isinstance(settings.get("INHERIT"), str) or set(settings) - {
            "INHERIT", "nav"}:
        return None
    return settings


class StartedBuild:
    """A site builder started before the pages are generated. MkDocs' process imports MkDocs, the theme,
    its plugins and Markdown extensions, and reads its cache meanwhile, on another core (about a third
    of its time for one new result at 300 challenges), then waits for `build`; Zensical has no such
    wait, so it starts there."""

    def __init__(self, config: SiteConfig, builder: str, *, strict: bool):
        if builder not in BUILDERS:
            raise BuildError(f"unknown site builder {builder!r}; choose one of {', '.join(BUILDERS)}")
        self.config, self.builder, self.strict = config, builder, strict
        self.last = config.site.with_name(f".{config.site.name}-builder")  # beside the site, never in it
        self.waiting: subprocess.Popen[str] | None = None
        if builder == "mkdocs":  # MkDocs' own build, redoing only what changed (runner.site.incremental)
            cache = config.site.with_name(f".{config.site.name}-mkdocs-cache")
            cmd = [sys.executable, "-m", "runner.site.incremental", GENERATED_CONFIG, str(cache), "--when-told",
                   *(["--strict"] if strict else [])]
            self.waiting = subprocess.Popen(cmd, cwd=config.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, env=builder_env())

    def build(self) -> Path:
        """Build the staged pages into the site folder. MkDocs' waiting process is told the settings just
        written with the word `build`: reading 300 challenges' navigation back from YAML took 0.05 s."""
        told = builder_settings(self.config)
        settings = builder_config(self.config, told).name
        previous = self.last.read_text(encoding="utf-8") if self.last.is_file() else None
        if self.waiting is not None:
            if previous not in (None, "mkdocs"):
                shutil.rmtree(self.config.site, ignore_errors=True)  # another builder's files do not pass for its own
            waiting, self.waiting = self.waiting, None
            try:
                stdout, stderr = waiting.communicate(f"build {json.dumps(told)}\n")  # one line: JSON's escapes
            except BaseException:  # interrupted: the builder goes too, as subprocess.run's would
                waiting.kill()
                waiting.wait()
                raise
            code = waiting.returncode
        else:  # Zensical keeps its own cache and removes stale files: --clean would drop both
            exe = shutil.which("zensical") or str(Path(sys.executable).with_name("zensical"))
            cmd = [exe, "build", "-f", settings, *(["--clean"] if previous != "zensical" else []),
                   *(["--strict"] if self.strict else [])]
            try:
                done = subprocess.run(cmd, cwd=self.config.root, capture_output=True, text=True, check=False,
                                      env=builder_env())
            except FileNotFoundError:
                raise BuildError(f"{self.builder} is not installed (pip install {self.builder})") from None
            stdout, stderr, code = done.stdout, done.stderr, done.returncode
        if code != 0:
            lines = [ln for ln in (stderr + stdout).splitlines() if ln.strip()]
            raise BuildError(f"{self.builder} build failed: {lines[-1] if lines else 'no output'}")
        self.last.write_text(self.builder, encoding="utf-8")
        return self.config.site

    def close(self) -> None:
        """Stop a builder that was never told to build (the pages could not be generated)."""
        if self.waiting is not None:
            self.waiting.communicate("")  # its stdin closed unasked: it leaves without building
            self.waiting = None


@contextmanager
def site_builder(config: SiteConfig, builder: str = "mkdocs", *, strict: bool = False) -> Iterator[StartedBuild]:
    """A builder started now, to build once the pages are generated (`StartedBuild.build`); `strict`
    turns warnings (broken links in organizers' pages) into failures."""
    started = StartedBuild(config, builder, strict=strict)
    try:
        yield started
    finally:
        started.close()


def build_site(config: SiteConfig, builder: str = "mkdocs", *, strict: bool = False) -> Path:
    """Build the staged pages into the site folder with the chosen builder (see `site_builder`)."""
    with site_builder(config, builder, strict=strict) as started:
        return started.build()


def builder_env() -> dict[str, str]:
    """The environment the site builder runs in, for builds and `challenge serve` alike: without the
    MkDocs 2 banner, which speaks of MkDocs' future, not of this site."""
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
