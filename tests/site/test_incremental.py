"""MkDocs builds that redo only what changed still equal a clean `mkdocs build`, file for file."""

from __future__ import annotations

import filecmp
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path, PurePath

import pytest

from runner.site import pages
from runner.site.build import (
    GENERATED_CONFIG,
    SiteConfig,
    build_site,
    builder_config,
    builder_settings,
    generated_settings,
    site_builder,
)
from runner.site.incremental import posix_key
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, add_result


def build_twice(repo: Path, clean: Path) -> Path:
    """The site built incrementally into build/site, and by a clean `mkdocs build` into `clean`."""
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets, cache=repo / "build" / "page-cache")
    site = build_site(config)  # it writes the configuration that the clean build reads too
    clean_build(repo, clean)
    return site


def clean_build(repo: Path, clean: Path) -> None:
    """A clean `mkdocs build` of the staged pages into `clean`."""
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--clean", "--quiet", "-f", GENERATED_CONFIG,
                    "-d", str(clean)], cwd=repo, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


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


def test_kept_pages_follow_the_link_targets_titles_and_search_entries_of_others(repo, tmp_path):
    add_result(repo, "alice", "v1", 0.8)
    challenge = repo / "challenges" / CHALLENGE
    (challenge / "faq.md").write_text("# FAQ\n\nSee [the table](table.csv) and [the rules](rules.md#deadline).\n")
    site = build_twice(repo, tmp_path / "first")
    assert differences(site, tmp_path / "first") == []
    faq, leaderboard = site / CHALLENGE / "faq" / "index.html", site / CHALLENGE / "leaderboard" / PHASE / "index.html"
    assert 'href="table.csv"' in faq.read_text()  # no such file: the link is left as is
    before = leaderboard.stat().st_mtime_ns

    (challenge / "table.csv").write_text("a,b\n1,2\n")  # the link's target appears, the navigation stays
    build_twice(repo, tmp_path / "second")
    assert differences(site, tmp_path / "second") == []
    assert 'href="../table.csv"' in faq.read_text() and leaderboard.stat().st_mtime_ns == before

    (challenge / "table.csv").unlink()  # and goes
    (challenge / "rules.md").write_text("# Rules\n\n## Deadline\n\nIn March.\n")  # a new page: a new navigation
    build_twice(repo, tmp_path / "third")
    assert differences(site, tmp_path / "third") == []
    assert 'href="table.csv"' in faq.read_text() and 'href="../rules/#deadline"' in faq.read_text()

    (challenge / "rules.md").write_text("# Terms\n\nNo deadline.\n")  # a page's own title: every page's navigation
    build_twice(repo, tmp_path / "fourth")
    assert differences(site, tmp_path / "fourth") == [] and "Terms" in leaderboard.read_text()

    before = {path: path.stat().st_mtime_ns for path in (faq, leaderboard)}
    cache = site.with_name(f".{site.name}-mkdocs-cache")
    again = subprocess.run([sys.executable, "-m", "runner.site.incremental", "mkdocs.generated.yml", str(cache)],
                           cwd=repo, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert again.returncode == 0 and "dirty" not in again.stderr and "stale" not in again.stderr  # MkDocs' own notices
    assert {path: path.stat().st_mtime_ns for path in before} == before  # nothing changed: nothing written
    assert differences(site, tmp_path / "fourth") == []  # the search index whole, from the kept pages' entries


@pytest.mark.parametrize("path", ["a/b.md", "a//b.md", "./a.md", "a/./b.md", "a/b/", "/abs/x.json", "../up.md",
                                  "a/../b", "", ".", "a\\b.md", "é/ü.md", "a/b/."])
def test_a_link_target_is_keyed_as_mkdocs_keys_it(path):
    assert posix_key(path) == PurePath(path).as_posix()


def test_the_generated_configuration_is_read_as_mkdocs_reads_it(repo):
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets, cache=repo / "build" / "page-cache")
    path = builder_config(config)
    settings = generated_settings(path)
    assert settings is not None and settings["INHERIT"] == "mkdocs.yml" and settings["nav"]
    path.write_text(path.read_text() + "extra: {added: !ENV [HOME]}\n")  # not what builder_config writes
    assert generated_settings(path) is None  # MkDocs' own loader reads it: the tag is MkDocs'


def test_a_builder_never_told_to_build_leaves_the_site_alone(repo):
    config = SiteConfig.read(repo)
    with site_builder(config) as builder:
        assert builder.waiting is not None and builder.waiting.poll() is None  # ready, and waiting
    assert builder.waiting is None and not config.site.exists()


def test_the_generated_configuration_loads_as_mkdocs_loads_it(repo, monkeypatch):
    from mkdocs.config import load_config

    from runner.site import incremental

    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets, cache=repo / "build" / "page-cache")
    monkeypatch.chdir(repo)
    ours, theirs = incremental._load_config(Path(builder_config(config).name), strict=False), load_config(
        builder_config(config).name)
    told = builder_settings(config)  # as `StartedBuild.build` tells them, in JSON, beside the word `build`
    given = incremental._load_config(Path(GENERATED_CONFIG), strict=False,
                                     settings=incremental._told(json.dumps(told)))
    for option in ("config_file_path", "nav", "docs_dir", "site_dir", "markdown_extensions", "mdx_configs"):
        assert ours[option] == theirs[option] == given[option], option
    assert ours.theme.custom_dir == theirs.theme.custom_dir and ours.theme.dirs == theirs.theme.dirs
    assert told["nav"] and incremental._told("{not json") is None and incremental._told('{"nav": []}') is None


def test_a_builder_told_to_build_still_warns_of_the_configuration(repo):
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets, cache=repo / "build" / "page-cache")
    builder_config(config)
    (repo / "mkdocs.yml").write_text((repo / "mkdocs.yml").read_text() + "\nbogus_option: 1\n")
    told = subprocess.run([sys.executable, "-m", "runner.site.incremental", "mkdocs.generated.yml",
                           str(repo / "build" / "cache"), "--when-told"], input="build\n", cwd=repo,
                          capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert told.returncode == 0 and "Unrecognised configuration name: bogus_option" in told.stderr


def test_a_page_read_once_is_read_again_only_once_its_file_changed(repo, tmp_path, monkeypatch):
    from mkdocs.structure.pages import Page

    from runner.site import incremental
    from runner.tree import worktree

    add_result(repo, "alice", "v1", 0.8)
    faq = repo / "challenges" / CHALLENGE / "faq.md"
    faq.write_text("# FAQ\n\nAsk on the forum.\n")
    site = build_twice(repo, tmp_path / "first")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(worktree, "RACY_NS", 0)  # every time settled: the pages were written a moment ago
    read: list[str] = []
    real = Page.read_source
    monkeypatch.setattr(Page, "read_source", lambda page, config: (read.append(page.file.src_uri), real(page, config)))
    cache = str(site.with_name(f".{site.name}-mkdocs-cache"))
    for _ in range(2):  # the site's hash counts the modules loaded: this process' own, then a build's too
        assert incremental.main(["mkdocs.generated.yml", cache]) == 0
    staged = SiteConfig.read(repo).stage / CHALLENGE / "faq.md"
    assert f"{CHALLENGE}/faq.md" in read
    read.clear()
    assert incremental.main(["mkdocs.generated.yml", cache]) == 0
    assert read == []  # nothing changed: no page read

    before = staged.stat()
    staged.write_text("# FAQ\n\nAsk at the forum.\n")  # the same size, and the same modification time
    os.utime(staged, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert incremental.main(["mkdocs.generated.yml", cache]) == 0
    assert read == [f"{CHALLENGE}/faq.md", f"{CHALLENGE}/faq.md"]  # its stamp's change time: read, then converted
    assert "Ask at the forum" in (site / CHALLENGE / "faq" / "index.html").read_text()
    clean_build(repo, tmp_path / "clean")
    assert differences(site, tmp_path / "clean") == []
