"""A folder a build owns keeps what the build wrote, and nothing else."""

from __future__ import annotations

import os

from runner.site.folders import remove_unwanted


def test_what_is_not_kept_goes_with_the_folders_it_leaves_empty(tmp_path):
    for rel in ("a/kept.md", "a/gone.md", "a/b/c/gone.json", "d/gone.csv", "e/f/kept.json", "top.md", "old.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    (tmp_path / "empty" / "below").mkdir(parents=True)
    top = str(tmp_path)
    remove_unwanted(top, {os.path.join(top, rel) for rel in ("a/kept.md", "e/f/kept.json", "top.md")})
    found = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert found == ["a", "a/kept.md", "e", "e/f", "e/f/kept.json", "top.md"]


def test_the_top_folder_stays_when_nothing_is_kept(tmp_path):
    (tmp_path / "site" / "x").mkdir(parents=True)
    (tmp_path / "site" / "x" / "page.html").write_text("old")
    remove_unwanted(str(tmp_path / "site"), set())
    assert (tmp_path / "site").is_dir() and not any((tmp_path / "site").iterdir())
