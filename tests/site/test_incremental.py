"""MkDocs builds that redo only what changed still equal a clean `mkdocs build`, file for file."""

from __future__ import annotations

import filecmp
import os
import pickle
import subprocess
import sys
from pathlib import Path

from runner.site import pages
from runner.site.build import SiteConfig, build_site, builder_config
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, add_result


def build_twice(repo: Path, clean: Path) -> Path:
    """The site built incrementally into build/site, and by a clean `mkdocs build` into `clean`."""
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets, cache=repo / "build" / "page-cache")
    site = build_site(config)
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--clean", "--quiet", "-f", builder_config(config).name,
                    "-d", str(clean)], cwd=repo, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return site


def differences(one: Path, other: Path) -> list[str]:
    """Files that differ or exist on one side only (sitemap.xml.gz holds its build's time)."""
    def walk(cmp: filecmp.dircmp[str], rel: str) -> list[str]:
        found = [f"{rel}{name}" for name in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files]
        return found + [f for name, sub in cmp.subdirs.items() for f in walk(sub, f"{rel}{name}/")]
    return [f for f in walk(filecmp.dircmp(one, other, ignore=[]), "") if f != "sitemap.xml.gz"]


def test_incremental_builds_equal_clean_builds_as_results_and_pages_change(repo, tmp_path):
    add_result(repo, "alice", "v1", 0.8)
    site = build_twice(repo, tmp_path / "first")
    assert differences(site, tmp_path / "first") == []
    leaderboard = site / CHALLENGE / "leaderboard" / PHASE / "index.html"
    viewer = site / CHALLENGE / "results" / PHASE / "view" / "index.html"
    before = viewer.stat().st_mtime_ns

    add_result(repo, "bob", "v1", 0.9)  # a new participant: a new data file, a changed leaderboard
    (repo / "challenges" / CHALLENGE / "faq.md").write_text("# FAQ\n\nAsk on the forum.\n")  # a new page: new nav
    build_twice(repo, tmp_path / "second")
    assert differences(site, tmp_path / "second") == []
    assert "bob" in leaderboard.read_text() and (site / CHALLENGE / "faq" / "index.html").is_file()
    assert viewer.stat().st_mtime_ns != before  # the navigation changed, so every page was rendered again

    before = viewer.stat().st_mtime_ns
    add_result(repo, "carol", "v1", 0.7)  # the same pages: only what changed is written
    build_twice(repo, tmp_path / "third")
    assert differences(site, tmp_path / "third") == []
    assert "carol" in leaderboard.read_text() and viewer.stat().st_mtime_ns == before
    kept = pickle.loads(site.with_name(f".{site.name}-mkdocs-cache").read_bytes()).indexed
    assert kept[f"{CHALLENGE}/index.md"][1]  # an unchanged page: its search entries came from the cache, and equal

    (repo / "challenges" / CHALLENGE / "faq.md").unlink()  # a page removed: its output goes too
    build_twice(repo, tmp_path / "fourth")
    assert differences(site, tmp_path / "fourth") == [] and not (site / CHALLENGE / "faq").exists()

    build_site(SiteConfig.read(repo), "zensical")  # another builder's files in the same folder
    build_twice(repo, tmp_path / "fifth")
    assert differences(site, tmp_path / "fifth") == []
