"""The commit that added each file, for one file or many in one git walk."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

from runner.tree.gitfiles import added, added_all, rewound
from tests.helpers import commit


def test_added_all_finds_the_commit_that_last_added_each_file(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "challenges" / "a").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "challenges" / "a" / "challenge.yml").write_text("one\n")
    commit(repo, "2026-01-01T00:00:00Z")
    (repo / "challenges" / "b c").mkdir()
    (repo / "challenges" / "b c" / "challenge.yml").write_text("two\n")
    (repo / "challenges" / "a" / "challenge.yml").write_text("one, edited\n")
    commit(repo, "2026-01-02T00:00:00Z")
    (repo / "challenges" / "a" / "challenge.yml").unlink()
    commit(repo, "2026-01-03T00:00:00Z")
    (repo / "challenges" / "a" / "challenge.yml").write_text("one again\n")
    commit(repo, "2026-01-04T00:00:00+02:00")
    (repo / "challenges" / "d.yml").write_text("never committed\n")
    rels = ["challenges/a/challenge.yml", "challenges/b c/challenge.yml", "challenges/d.yml"]

    found = added_all(repo, "challenges/*/challenge.yml")

    assert {rel: at.at for rel, at in found.items()} == {
        "challenges/a/challenge.yml": dt.datetime(2026, 1, 3, 22, tzinfo=dt.UTC),  # re-added, in UTC
        "challenges/b c/challenge.yml": dt.datetime(2026, 1, 2, tzinfo=dt.UTC)}  # a name with a space
    assert all(added(repo, rel) == found.get(rel) for rel in rels)  # one file alone: the same answer
    assert added_all(tmp_path, "challenges/*/challenge.yml") == {} and added(tmp_path, rels[0]) is None  # no git


def test_rewound_names_files_put_back_to_content_they_had_lost(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "challenges").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    files = {name: repo / "challenges" / name for name in ("back", "restored", "moved on", "kept")}
    steps = {"back": ["A", "B", "A"], "restored": ["A", None, "A"], "moved on": ["A", "B", "A", "C"],
             "kept": ["A", "A", "A"]}
    for day in range(4):
        for name, contents in steps.items():
            if day < len(contents):
                if contents[day] is None:
                    files[name].unlink()
                else:
                    files[name].write_text(contents[day])
        commit(repo, f"2026-01-0{day + 1}T00:00:00Z")
    assert rewound(repo, "challenges/*") == {"challenges/back"}
    assert rewound(tmp_path, "challenges/*") == set()  # outside git
