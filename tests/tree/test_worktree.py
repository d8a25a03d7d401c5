"""What the working tree holds unlike HEAD, as git sees it, and the tree ids of folders that hold nothing else."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from runner.tree import worktree
from runner.tree.worktree import working_tree

FOLDERS = ["challenges/a/results/p", "challenges/a/results/q", "challenges/b/results/p"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=root,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for folder in FOLDERS:
        (root / folder / "team").mkdir(parents=True)
        (root / folder / "team" / "s1.json").write_text("{}\n")
    (root / ".gitignore").write_text("*.tmp\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "results")
    return root


def ids(root: Path, kept: Path | None = None) -> dict[str, str]:
    tree = working_tree(root, "challenges")
    assert tree is not None
    return tree.folder_ids(FOLDERS, kept=kept)


def age(root: Path) -> None:
    """Every folder's time an hour back: past the clock's tick, so a folder's time may be kept."""
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, (time.time() - 3600,) * 2)


def test_a_clean_folder_is_keyed_by_its_tree_at_head(repo):
    assert ids(repo) == {folder: git(repo, "rev-parse", f"HEAD:{folder}") for folder in FOLDERS}


@pytest.mark.parametrize("change", ["modified", "same size", "staged", "deleted", "untracked", "ignored", "folder"])
def test_any_change_under_a_folder_leaves_it_out_and_only_it(repo, change):
    team = repo / FOLDERS[0] / "team"
    if change == "modified":
        (team / "s1.json").write_text('{"a": 1}\n')
    elif change == "same size":  # within the same second: git compares content where times cannot tell
        (team / "s1.json").write_text("[]\n")
    elif change == "staged":
        (team / "s1.json").write_text('{"a": 1}\n')
        git(repo, "add", "-A")
    elif change == "deleted":
        (team / "s1.json").unlink()
    elif change == "untracked":
        (team / "s2.json").write_text("{}\n")
    elif change == "ignored":
        (team / "s2.tmp").write_text("{}\n")
    else:  # a new participant's folder
        (team.parent / "other").mkdir()
        (team.parent / "other" / "s1.json").write_text("{}\n")
    assert set(ids(repo)) == set(FOLDERS[1:])


def test_an_ignored_folder_above_counts_as_a_change(repo):
    (repo / ".gitignore").write_text("*.tmp\nchallenges/a/results/\n")
    (repo / FOLDERS[0] / "team" / "s2.json").write_text("{}\n")
    assert set(ids(repo)) == set(FOLDERS[1:])


def test_outside_the_top_of_a_working_tree_git_is_not_asked(repo, tmp_path):
    assert working_tree(repo / "challenges", "a") is None  # a folder inside it
    assert working_tree(tmp_path, "challenges") is None  # no repository
    (tmp_path / "empty").mkdir()
    git(tmp_path / "empty", "init", "-q")
    assert working_tree(tmp_path / "empty", "challenges") is None  # no commit yet


def test_kept_folder_times_spare_the_listing_until_a_folder_changes(repo, tmp_path, monkeypatch):
    kept = tmp_path / "folders.pickle"
    age(repo)
    first = ids(repo, kept)
    assert set(first) == set(FOLDERS) and kept.is_file()
    listed = []
    monkeypatch.setattr("runner.tree.worktree._holds", lambda root, folder: listed.append(folder))
    assert ids(repo, kept) == first and listed == []  # nothing listed: every folder's time is as kept
    monkeypatch.undo()
    (repo / FOLDERS[1] / "team" / "s2.tmp").write_text("{}\n")  # ignored, in a folder whose time was kept
    (repo / FOLDERS[2] / "late").mkdir()
    (repo / FOLDERS[2] / "late" / "s1.json").write_text("{}\n")
    assert set(ids(repo, kept)) == {FOLDERS[0]}


def test_a_folder_changed_within_the_clocks_tick_is_listed_again(repo, tmp_path, monkeypatch):
    kept = tmp_path / "folders.pickle"
    ids(repo, kept)  # every folder just written: none of their times is kept
    listed = []
    monkeypatch.setattr("runner.tree.worktree._holds", lambda root, folder: listed.append(folder))
    ids(repo, kept)
    assert sorted(listed) == sorted(FOLDERS)


def test_a_tracked_file_rewritten_in_place_is_seen_though_its_folders_time_is_kept(repo, tmp_path):
    kept = tmp_path / "folders.pickle"
    age(repo)
    ids(repo, kept)
    (repo / FOLDERS[0] / "team" / "s1.json").write_text("[]\n")  # the same size; no folder's time changes
    age(repo)
    assert set(ids(repo, kept)) == set(FOLDERS[1:])


def test_a_name_git_would_not_read_back_as_one_line_is_left_out_not_mistaken(repo):
    """cat-file answers one line per name and strips a trailing CR: a name with a control character could
    shift every answer after it onto the wrong folder, and one past UTF-8 cannot be written as text."""
    odd = [b"challenges/a/results/zz\x0c" + b"0" * 40 + b" tree\x0cq\r", b"challenges/a/results/\xff\xfe"]
    for name in odd:
        os.makedirs(os.path.join(os.fsencode(repo), name, b"team"))
        with open(os.path.join(os.fsencode(repo), name, b"team", b"s1.json"), "wb") as out:
            out.write(b"{}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "odd names")
    tree = working_tree(repo, "challenges")
    assert tree is not None
    asked = [*FOLDERS[:1], *map(os.fsdecode, odd), *FOLDERS[1:]]
    assert tree.folder_ids(asked) == {folder: git(repo, "rev-parse", f"HEAD:{folder}") for folder in FOLDERS}


def test_folders_are_listed_in_parts(repo, monkeypatch):
    monkeypatch.setattr("runner.tree.worktree.LISTED_AT_ONCE", 1)
    (repo / FOLDERS[1] / "team" / "s2.json").write_text("{}\n")
    assert set(ids(repo)) == {FOLDERS[0], FOLDERS[2]}


def test_a_commit_landing_while_folders_are_checked_gives_no_ids(repo):
    tree = working_tree(repo, "challenges")
    assert tree is not None
    (repo / FOLDERS[0] / "team" / "s2.json").write_text("{}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a result lands")
    assert tree.folder_ids(FOLDERS) == {}  # what git compared is no longer what HEAD holds


def gated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: Path, *, status_fails: bool = False) -> None:
    """A `git` first on PATH whose status waits for `gate` to exist (10 s at most, then fails) or fails at once."""
    real = shutil.which("git")
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    status = "exit 1" if status_fails else (f'for i in $(seq 100); do [ -e "{gate}" ] && exec "{real}" "$@"; '
                                            "sleep 0.1; done; exit 1")
    shim.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = status ] && {{ {status}; }}; done\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")


def test_gits_status_runs_while_the_caller_goes_on(repo, tmp_path, monkeypatch):
    gate = tmp_path / "gate"
    gated_git(tmp_path, monkeypatch, gate)
    (repo / FOLDERS[0] / "team" / "s1.json").write_text('{"a": 1}\n')
    tree = working_tree(repo, "challenges")  # returns with the status still waiting for the gate
    assert tree is not None
    gate.touch()
    assert set(tree.folder_ids(FOLDERS)) == set(FOLDERS[1:])


def test_a_failed_status_leaves_every_folder_out(repo, tmp_path, monkeypatch):
    gated_git(tmp_path, monkeypatch, tmp_path / "gate", status_fails=True)
    tree = working_tree(repo, "challenges")
    assert tree is not None
    assert tree.folder_ids(FOLDERS) == {} and tree.differs(FOLDERS[0])


def test_kept_times_are_compared_while_the_status_still_runs(repo, tmp_path, monkeypatch):
    kept = tmp_path / "folders.pickle"
    age(repo)
    first = ids(repo, kept)
    gate = tmp_path / "gate"
    gated_git(tmp_path, monkeypatch, gate)
    compare, before_status = worktree._unchanged, []

    def compared(top: str, times: dict[str, int]) -> bool:
        before_status.append(not gate.exists())
        gate.touch()  # now the status may run: a build that waited for it first would have failed by now
        return compare(top, times)
    monkeypatch.setattr("runner.tree.worktree._unchanged", compared)
    assert ids(repo, kept) == first and before_status[0]


def test_a_failed_status_keeps_the_kept_times(repo, tmp_path, monkeypatch):
    kept = tmp_path / "folders.pickle"
    age(repo)
    ids(repo, kept)
    held = kept.read_bytes()
    with monkeypatch.context() as patched:
        gated_git(tmp_path, patched, tmp_path / "gate", status_fails=True)
        assert ids(repo, kept) == {}
    assert kept.read_bytes() == held


def test_a_process_forked_before_the_status_answered_counts_everything_as_differing(repo):
    (repo / FOLDERS[0] / "team" / "s1.json").write_text('{"a": 1}\n')
    tree = working_tree(repo, "challenges")
    assert tree is not None
    child = os.fork()
    if child == 0:  # the child must not read the parent's pipe: it would leave the parent an empty answer
        os._exit(0 if tree.differs(FOLDERS[1]) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert set(tree.folder_ids(FOLDERS)) == set(FOLDERS[1:])  # the parent still has git's whole answer


def test_a_commit_before_the_status_read_head_leaves_nothing_clean(repo, tmp_path, monkeypatch):
    """HEAD moves after `working_tree` read it and before git's status did: the status compared another commit."""
    gate = tmp_path / "gate"
    gated_git(tmp_path, monkeypatch, gate)
    tree = working_tree(repo, "challenges")
    assert tree is not None
    (repo / FOLDERS[0] / "team" / "s1.json").write_text('{"a": 2}\n')
    git(repo, "commit", "-qam", "a runner's result")
    gate.touch()
    assert tree.differs(FOLDERS[1]) and tree.folder_ids(FOLDERS) == {}


def test_a_file_changed_after_the_status_started_is_not_as_at_head(repo, monkeypatch):
    monkeypatch.setattr(worktree, "RACY_NS", 0)
    tree = working_tree(repo, "challenges")
    assert tree is not None and not tree.differs("challenges")
    time.sleep(0.05)  # past the lag of the kernel's coarse clock, which the files' times come from
    (repo / FOLDERS[0] / "team" / "s1.json").write_text('{"a": 2}\n')
    assert not tree.as_at_head(f"{FOLDERS[0]}/team/s1.json") and tree.as_at_head(f"{FOLDERS[1]}/team/s1.json")
    assert not tree.as_at_head(f"{FOLDERS[1]}/team/none.json")
    monkeypatch.setattr(worktree, "RACY_NS", 10**12)  # a file changed this close to the status may have been missed
    assert not tree.as_at_head(f"{FOLDERS[1]}/team/s1.json")
