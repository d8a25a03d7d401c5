"""Every cache's key is read from the code that fills it: a change to any module a page imports, at any
depth, misses the page cache; a change elsewhere keeps it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner.codekey import PACKAGE, code_key

PAGES = ["runner.site.pages"]


@pytest.fixture
def package(tmp_path) -> Path:
    copy = tmp_path / "src" / "runner"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def edited(package: Path, rel: str) -> str:
    with (package / rel).open("a") as handle:
        handle.write("\n# edited\n")
    return code_key(PAGES, package=package)


@pytest.mark.parametrize("rel", ["ranking/tables.py", "ranking/phase_uncertainty.py", "tree/exclusions.py",
                                 "site/templating.py", "errors.py", "__init__.py"])
def test_a_module_the_pages_import_changes_their_key(package, rel):
    assert code_key(PAGES, package=package) == code_key(PAGES)
    assert edited(package, rel) != code_key(PAGES)


@pytest.mark.parametrize("rel", ["cli/evaluate.py", "evaluation/job.py", "execution/docker_engine.py"])
def test_a_module_they_never_import_keeps_it(package, rel):
    assert edited(package, rel) == code_key(PAGES)


def test_relative_and_lazy_imports_count(package):
    cli = ["runner.cli.site"]
    edited(package, "cli/common.py")
    assert code_key(cli, package=package) != code_key(cli)  # from .common import ...
    (package / "tree" / "lazy.py").write_text("X = 1\n")
    before = code_key(["runner.tree.history"], package=package)
    with (package / "tree" / "history.py").open("a") as handle:
        handle.write("\n\ndef later():\n    from runner.tree import lazy\n    return lazy.X\n")
    after = code_key(["runner.tree.history"], package=package)
    (package / "tree" / "lazy.py").write_text("X = 2\n")
    assert before != after != code_key(["runner.tree.history"], package=package)


def test_the_site_build_misses_its_page_cache_after_a_ranking_module_changes(package, repo):
    """The real `challenge build`, run from the copied package twice, then after ranking/tables.py changed."""
    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    cache = repo / "build" / "page-cache"

    def build() -> set[str]:
        subprocess.run([sys.executable, "-m", "runner.cli", "--root", str(repo), "build"], env=env, check=True,
                       capture_output=True, cwd=package.parent)  # -m puts the working folder first
        return {p.name for p in cache.iterdir()}

    first = build()
    assert first and build() == first  # nothing changed: every entry found again
    edited(package, "ranking/tables.py")
    assert build().isdisjoint(first)  # every entry computed again, the stale ones pruned
