"""The commit that added each file, for one file or many in one git walk."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

from runner.tree.gitfiles import added, added_all, blob_id, read_blobs, versions
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


def test_added_all_with_a_cache_reads_only_new_commits_and_answers_as_a_whole_walk(tmp_path: Path):
    repo, cache, pattern = tmp_path / "repo", tmp_path / "added.pickle", "challenges/*/challenge.yml"
    (repo / "challenges" / "a").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "challenges" / "a" / "challenge.yml").write_text("one\n")
    commit(repo, "2026-01-01T00:00:00Z")
    assert added_all(repo, pattern, cache=cache) == added_all(repo, pattern) and cache.is_file()

    (repo / "challenges" / "b").mkdir()
    (repo / "challenges" / "b" / "challenge.yml").write_text("two\n")
    (repo / "challenges" / "a" / "challenge.yml").unlink()
    commit(repo, "2026-01-02T00:00:00Z")
    (repo / "challenges" / "a" / "challenge.yml").write_text("one again\n")  # re-added: the newer commit
    commit(repo, "2026-01-03T00:00:00Z")
    found = added_all(repo, pattern, cache=cache)  # from the commits since the cached one
    assert found == added_all(repo, pattern) and found["challenges/a/challenge.yml"].at.day == 3
    assert added_all(repo, pattern, cache=cache) == found  # HEAD unchanged: from the cache alone

    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~2"], cwd=repo, check=True)  # history rewound
    rewound = added_all(repo, pattern, cache=cache)
    assert rewound == added_all(repo, pattern) and list(rewound) == ["challenges/a/challenge.yml"]
    assert rewound["challenges/a/challenge.yml"].at == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert added_all(repo, "challenges/*/other.yml", cache=cache) == {}  # another pattern: not the cached answer


def test_versions_holds_every_blob_a_file_had_whatever_merge_or_name(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "challenges").mkdir(parents=True)
    git = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)  # noqa: E731
    git("init", "-q", "-b", "main")
    odd = repo / "challenges" / "ålice\tq\"uote.json"  # git quotes such a name unless -z
    odd.write_text("A")
    commit(repo, "2026-01-01T00:00:00Z")
    git("branch", "side")
    odd.write_text("B")
    commit(repo, "2026-01-02T00:00:00Z")
    # A merge whose first parent never saw B: the first-parent line alone would miss it.
    git("checkout", "-q", "side")
    git("merge", "-q", "-s", "ours", "main", "-m", "merge")
    found = versions(repo, ":(glob)challenges/*")
    assert found == {"challenges/ålice\tq\"uote.json": {blob_id(b"A"), blob_id(b"B")}}
    assert read_blobs(repo, sorted(found["challenges/ålice\tq\"uote.json"])) == {blob_id(b"A"): b"A",
                                                                                blob_id(b"B"): b"B"}
    assert versions(tmp_path, ":(glob)challenges/*") == {}  # outside git
    fresh = tmp_path / "fresh"
    (fresh / "challenges").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=fresh, check=True)
    assert versions(fresh, ":(glob)challenges/*") == {}  # a repository with no commit yet


def test_versions_kept_in_the_git_folder_walk_only_new_commits_and_answer_as_a_whole_walk(tmp_path: Path,
                                                                                           monkeypatch):
    import runner.tree.gitfiles as gitfiles
    repo, spec = tmp_path / "repo", ":(literal)challenges/allowed_signers"
    (repo / "challenges").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "challenges" / "allowed_signers").write_text("one\n")
    commit(repo, "2026-01-01T00:00:00Z")
    walked: list[str] = []
    walk = gitfiles._versions

    def counted(root: Path, pathspec: str, commits: str) -> dict[str, set[str]]:
        walked.append(commits)
        return walk(root, pathspec, commits)
    monkeypatch.setattr(gitfiles, "_versions", counted)
    first = versions(repo, spec)
    assert versions(repo, spec) == first and len(walked) == 1  # HEAD as it was kept: nothing walked
    (repo / "challenges" / "allowed_signers").unlink()
    commit(repo, "2026-01-02T00:00:00Z")
    (repo / "challenges" / "other").write_text("x\n")
    commit(repo, "2026-01-03T00:00:00Z")
    kept = versions(repo, spec)
    assert ".." in walked[-1] and kept == walk(repo, spec, "HEAD")  # as a walk of the whole history
    assert kept["challenges/allowed_signers"] == first["challenges/allowed_signers"] | {"0" * 40}  # and deleted
    subprocess.run(["git", "checkout", "-q", "--orphan", "rewritten"], cwd=repo, check=True)
    commit(repo, "2026-01-04T00:00:00Z")  # a history that never had it: read whole, not added to the old one
    assert versions(repo, spec) == {} and ".." not in walked[-1]
    assert list((repo / ".git" / "challenge-runner").glob("versions-*.pickle"))  # in git's folder, not the tree
