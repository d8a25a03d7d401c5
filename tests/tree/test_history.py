"""Leaderboards as they stood on past dates, rebuilt from the results' git history."""

from __future__ import annotations

import datetime as dt
import json
import os
import pickle
import subprocess
import time
from pathlib import Path

import pytest

from runner.cli import main
from runner.site import pages
from runner.site.build import SiteConfig
from runner.site.datafiles import read_data, read_snapshot
from runner.tree import worktree
from runner.tree.history import History, HistoryError, parse_when
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, Tree, add_result, commit

UTC = dt.UTC

@pytest.fixture
def tree(tree: Path) -> Path:
    """The built tree, with the site's templates and mkdocs.yml: this module's tests build pages."""
    Tree(tree).site()
    return tree


@pytest.fixture
def history_repo(tree) -> Path:
    """alice lands on 03-01, bob on 03-02 12:00, alice's result is re-run lower on 03-05 and bob's
    removed on 03-06; carol's result is written but never committed."""
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tree, check=True)
    commit(tree, "2026-02-20T09:00:00Z", "the challenge")
    add_result(tree, "alice", "v1", 0.7)
    commit(tree, "2026-03-01T10:00:00Z")
    add_result(tree, "bob", "v1", 0.8)
    commit(tree, "2026-03-02T12:00:00Z")
    add_result(tree, "alice", "v1", 0.6)
    commit(tree, "2026-03-05T08:00:00+02:00")  # 06:00 UTC
    (tree / "challenges" / CHALLENGE / "results" / PHASE / "bob" / "v1.json").unlink()
    commit(tree, "2026-03-06T10:00:00Z")
    add_result(tree, "carol", "v1", 0.9)
    return tree


def standing(tree: Path, when: str) -> list[tuple[str, float]]:
    results = History(Store(tree)).results_as_of(CHALLENGE, PHASE, parse_when(when))
    return [(r.participant, r.metrics["aggregates"]["dice"]["mean"]) for r in results]


def test_results_as_of_a_date_are_those_committed_by_its_end(history_repo):
    assert standing(history_repo, "2026-02-28") == []
    assert standing(history_repo, "2026-03-01") == [("alice", 0.7)]
    assert standing(history_repo, "2026-03-02T11:59:59") == [("alice", 0.7)]
    assert standing(history_repo, "2026-03-02T12:00:00") == [("alice", 0.7), ("bob", 0.8)]
    assert standing(history_repo, "2026-03-05") == [("alice", 0.6), ("bob", 0.8)]  # the re-run replaced it
    assert standing(history_repo, "2026-03-07") == [("alice", 0.6)]  # removed; carol was never committed


def test_parse_when_reads_a_date_as_its_end_in_utc():
    assert parse_when("2026-05-01") == dt.datetime(2026, 5, 1, 23, 59, 59, 999999, UTC)
    assert parse_when("2026-05-01T12:00") == dt.datetime(2026, 5, 1, 12, tzinfo=UTC)
    assert parse_when("2026-05-01T12:00+02:00") == dt.datetime(2026, 5, 1, 10, tzinfo=UTC)
    with pytest.raises(ValueError):
        parse_when("yesterday")


def test_snapshots_are_the_last_days_the_results_changed(history_repo):
    history = History(Store(history_repo))
    snaps = history.snapshots(CHALLENGE, PHASE)
    assert [s.day.isoformat() for s in snaps] == ["2026-03-01", "2026-03-02", "2026-03-05", "2026-03-06"]
    assert [r.participant for r in history.results(snaps[1])] == ["alice", "bob"]
    assert [r.participant for r in history.results(snaps[-1])] == ["alice"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=history_repo, capture_output=True, text=True).stdout
    assert snaps[-1].commit == head.strip()
    limited = History(Store(history_repo), limit=2).snapshots(CHALLENGE, PHASE)
    assert [s.day.isoformat() for s in limited] == ["2026-03-05", "2026-03-06"]


def test_leaderboard_command_as_of(history_repo, capsys):
    assert main(["--root", str(history_repo), "leaderboard", CHALLENGE, PHASE, "--as-of", "2026-03-03",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["rank"], r["participant"], r["Dice (mean)"]) for r in rows] == [(1, "bob", 0.8), (2, "alice", 0.7)]


def test_as_of_outside_git_is_one_clear_error(tree, capsys):
    assert main(["--root", str(tree), "leaderboard", CHALLENGE, PHASE, "--as-of", "2026-03-03"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --as-of needs the repository's git history")
    with pytest.raises(HistoryError):
        History(Store(tree)).snapshots(CHALLENGE, PHASE)


def test_leaderboard_page_links_a_snapshot_per_day(history_repo):
    config = SiteConfig.read(history_repo)
    pages.generate(Store(history_repo), config.stage, config.templates, config.assets)
    folder = config.stage / CHALLENGE / "leaderboard" / PHASE
    assert not (folder / "history").exists()  # one file for every day, not a file a day
    days = [snap["as_of"] for snap in read_data(folder / "history.json.gz")["snapshots"]]
    assert days == ["2026-03-06", "2026-03-05", "2026-03-02", "2026-03-01"]  # newest first, as the page links them
    snap = read_snapshot(folder / "history.json.gz", "2026-03-02")
    assert snap is not None and snap["as_of"] == "2026-03-02" and len(snap["commit"]) == 40
    assert [(r["rank"], r["participant"]) for r in snap["rows"]] == [(1, "bob"), (2, "alice")]
    assert read_snapshot(folder / "history.json.gz", "2026-03-03") is None  # no change that day
    page = (config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert page.index("[2026-03-06]") < page.index("[2026-03-01]")  # newest first
    assert f"({PHASE}/history.json.gz#2026-03-02)" in page
    assert main(["--root", str(history_repo), "build", "--strict"]) == 0  # every snapshot link resolves
    assert (config.site / CHALLENGE / "leaderboard" / PHASE / "history.json.gz").is_file()


def test_snapshots_are_ranked_once_and_kept_between_runs(history_repo):
    config, cache = SiteConfig.read(history_repo), history_repo / "build" / "cache"
    pages.generate(Store(history_repo), config.stage, config.templates, config.assets, cache=cache)

    def snapshots() -> dict[str, bytes]:  # the memo's entries that are snapshots (JSON)
        entries = {p.name: p.read_bytes() for p in cache.iterdir()}
        return {name: data for name, data in entries.items() if data.startswith(b'{"as_of"')}
    kept = snapshots()
    assert len(kept) == 4  # one per snapshot (beside the feeds); no bootstrap without per-case values
    history = config.stage / CHALLENGE / "leaderboard" / PHASE / "history.json.gz"
    marked = next(name for name, data in kept.items() if json.loads(data)["as_of"] == "2026-03-01")
    (cache / marked).write_bytes(b'{"as_of":"2026-03-01","kept":true}')
    add_result(history_repo, "dave", "v1", 0.5)
    commit(history_repo, "2026-03-08T10:00:00Z")
    pages.generate(Store(history_repo), config.stage, config.templates, config.assets, cache=cache)
    assert read_snapshot(history, "2026-03-01") == {"as_of": "2026-03-01", "kept": True}  # read back, not ranked again
    newest = read_snapshot(history, "2026-03-08")  # the new day joins the file
    assert newest is not None and "dave" in [r["participant"] for r in newest["rows"]]
    assert len(snapshots()) == 5


def test_an_entry_a_crash_left_empty_is_made_again(history_repo):
    config, cache = SiteConfig.read(history_repo), history_repo / "build" / "cache"
    pages.generate(Store(history_repo), config.stage, config.templates, config.assets, cache=cache)
    history = config.stage / CHALLENGE / "leaderboard" / PHASE / "history.json.gz"
    before = read_data(history)["snapshots"]
    for entry in cache.iterdir():  # written without a sync, an entry may be empty after a crash
        entry.write_bytes(b"")
    add_result(history_repo, "dave", "v1", 0.5)  # the phase is made again, its past days from the memo
    commit(history_repo, "2026-03-08T10:00:00Z")
    pages.generate(Store(history_repo), config.stage, config.templates, config.assets, cache=cache)
    assert read_data(history)["snapshots"][1:] == before  # every past day, not a file that does not parse


def test_current_results_stand_for_unchanged_committed_files(history_repo, monkeypatch):
    monkeypatch.setattr(worktree, "RACY_NS", 0)  # the files were written just now: trust them as git saw them
    store = Store(history_repo)
    current = {str(store.paths.result_file(r.challenge, r.phase, r.participant, r.submission)
                   .relative_to(history_repo)): r for r in store.results(CHALLENGE, PHASE)}
    add_result(history_repo, "alice", "v1", 0.1)  # changed since it was committed: git's copy counts
    history = History(store)
    snaps = history.snapshots(CHALLENGE, PHASE)
    read = history.read_from_git
    then = history.results(snaps[-1], current)
    assert [(r.participant, r.metrics["aggregates"]["dice"]["mean"]) for r in then] == [("alice", 0.6)]
    assert snaps[-1].files[next(p for p in current if "/alice/" in p)] in read  # read from git, not the tree
    assert set(read) == {b for s in snaps for b in s.files.values()}  # nothing else is committed unchanged

    commit(history_repo, "2026-03-09T10:00:00Z")  # now committed as it is: the tree's copy stands for it
    current = {path: r for path, r in ((p, store.read_result(history_repo / p)) for p in current)}
    history = History(store)
    last = history.snapshots(CHALLENGE, PHASE)[-1]
    assert [r.metrics["aggregates"]["dice"]["mean"] for r in history.results(last, current)] == [0.1, 0.9]
    assert not set(last.files.values()) & set(history.read_from_git)


def test_a_status_taken_after_head_moved_stands_for_nothing(history_repo):
    """A runner commits between the history's read of HEAD and git's status: the status, clean against the new
    commit, says nothing of the blobs the history read, so the tree's new copy must not stand for the old one."""
    store = Store(history_repo)
    commit(history_repo, "2026-03-09T10:00:00Z")  # carol's result committed: everything clean
    history = History(store)
    last = history.snapshots(CHALLENGE, PHASE)[-1]  # read at this HEAD
    add_result(history_repo, "alice", "v1", 0.1)
    commit(history_repo, "2026-03-10T10:00:00Z")  # HEAD moves on; the tree is clean against it
    current = {str(store.paths.result_file(r.challenge, r.phase, r.participant, r.submission)
                   .relative_to(history_repo)): r for r in store.results(CHALLENGE, PHASE)}
    assert history.worktree is not None and not history.worktree.differs("challenges")
    then = history.results(last, current)
    assert [r.metrics["aggregates"]["dice"]["mean"] for r in then] == [0.6, 0.9]  # as committed then
    assert set(last.files.values()) <= set(history.read_from_git)


def test_a_file_rewritten_after_the_status_stands_for_nothing(history_repo, monkeypatch):
    """The runner rewrites a result after git's status looked at it (its commit still to come): what the page then
    reads of it is no longer HEAD's blob, while the file nobody touched still stands for its own."""
    monkeypatch.setattr(worktree, "RACY_NS", 0)
    store = Store(history_repo)
    commit(history_repo, "2026-03-09T10:00:00Z")
    history = History(store)
    assert history.worktree is not None and not history.worktree.differs("challenges")  # answered: all clean
    last = history.snapshots(CHALLENGE, PHASE)[-1]
    time.sleep(0.05)  # past the lag of the kernel's coarse clock, which the files' times come from
    add_result(history_repo, "alice", "v1", 0.1)
    current = {str(store.paths.result_file(r.challenge, r.phase, r.participant, r.submission)
                   .relative_to(history_repo)): r for r in store.results(CHALLENGE, PHASE)}
    then = history.results(last, current)
    assert [r.metrics["aggregates"]["dice"]["mean"] for r in then] == [0.6, 0.9]  # as committed
    alice, carol = (last.files[p] for p in sorted(last.files))
    assert alice in history.read_from_git and carol not in history.read_from_git


def test_snapshot_days_from_the_log_alone_are_the_snapshots(history_repo):
    light, full = History(Store(history_repo), limit=3), History(Store(history_repo), limit=3)
    expected = [(s.day, s.commit) for s in full.snapshots(CHALLENGE, PHASE)]
    assert light.snapshot_days(CHALLENGE, PHASE) == expected and len(expected) == 3
    assert light._days == {}  # no state was rebuilt
    assert full.snapshot_days(CHALLENGE, PHASE) == expected and light.snapshot_days(CHALLENGE, "none") == []


def _everything(history: History, phase: str = PHASE) -> tuple:
    """What a History tells of a phase: its log, its snapshots and their results."""
    snaps = history.snapshots(CHALLENGE, phase)
    return (history._log(f"{CHALLENGE}/{phase}"), [(s.day, s.commit, s.files, s.at) for s in snaps],
            history.snapshot_days(CHALLENGE, phase),
            [[(r.participant, r.metrics["aggregates"]["dice"]["mean"]) for r in history.results(s)] for s in snaps])


def test_the_history_cache_reads_only_new_commits_and_agrees_with_git(history_repo):
    cache = history_repo / "build" / "history"
    first = _everything(History(Store(history_repo), cache=cache))
    assert (cache / "index.pickle").is_file() and _everything(History(Store(history_repo), cache=cache)) == first
    commit(history_repo, "2026-03-08T10:00:00Z")  # carol's result lands
    (history_repo / "challenges" / CHALLENGE / "results" / PHASE / "alice" / "v1.json").unlink()
    commit(history_repo, "2026-03-09T10:00:00Z")  # alice's is removed
    history = History(Store(history_repo), cache=cache)
    cached = _everything(history)
    logged = [args[-3] if args[0] == "log" else args[0] for args in history.git_commands]
    assert cached == _everything(History(Store(history_repo)))  # as read from git whole
    ranges = [a for a in logged if ".." in a]
    assert "ls-tree" not in logged and len(ranges) == 1  # the new commits alone; HEAD's files are not listed
    assert list(cached[0][0]) == [f"challenges/{CHALLENGE}/results/{PHASE}/carol/v1.json"]


def test_a_new_commit_reads_and_writes_only_the_phases_it_touched(history_repo):
    cache = history_repo / "build" / "history"
    Tree(history_repo).phase("test")
    add_result(history_repo, "erin", "t1", 0.4, phase="test")
    commit(history_repo, "2026-03-07T10:00:00Z")
    _everything(History(Store(history_repo), cache=cache))
    files = {path.name: path.stat().st_mtime_ns for path in cache.glob("*.pickle")}
    assert len(files) == 3  # the index and one file per phase with results
    add_result(history_repo, "frank", "t1", 0.45, phase="test")
    commit(history_repo, "2026-03-08T10:00:00Z")
    history = History(Store(history_repo), cache=cache)
    assert history.snapshot_days(CHALLENGE, PHASE) == History(Store(history_repo)).snapshot_days(CHALLENGE, PHASE)
    assert set(history._logs) == {f"{CHALLENGE}/test"}  # the other phase's log was neither read nor written
    rewritten = {name for name, at in files.items() if (cache / name).stat().st_mtime_ns != at}
    assert rewritten == {"index.pickle", history._log_file(f"{CHALLENGE}/test").name}
    for phase in (PHASE, "test"):
        assert _everything(history, phase) == _everything(History(Store(history_repo)), phase)


def test_a_rewritten_history_or_a_lost_cache_file_is_read_whole_again(history_repo):
    cache = history_repo / "build" / "history"
    _everything(History(Store(history_repo), cache=cache))
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~2"], cwd=history_repo, check=True)
    add_result(history_repo, "dave", "v1", 0.3)
    commit(history_repo, "2026-03-10T10:00:00Z")  # HEAD no longer descends from the cached commit
    assert _everything(History(Store(history_repo), cache=cache)) == _everything(History(Store(history_repo)))
    (cache / "index.pickle").write_bytes(b"not a pickle")
    assert _everything(History(Store(history_repo), cache=cache)) == _everything(History(Store(history_repo)))
    History(Store(history_repo), cache=cache).snapshot_days(CHALLENGE, PHASE)
    History(Store(history_repo), cache=cache)._log_file(f"{CHALLENGE}/{PHASE}").write_bytes(b"lost")
    assert _everything(History(Store(history_repo), cache=cache)) == _everything(History(Store(history_repo)))
    add_result(history_repo, "erin", "v1", 0.2)
    commit(history_repo, "2026-03-11T10:00:00Z")
    History(Store(history_repo), cache=cache)._log_file(f"{CHALLENGE}/{PHASE}").unlink()  # and a commit touches it
    assert _everything(History(Store(history_repo), cache=cache)) == _everything(History(Store(history_repo)))


def test_a_cache_whose_commit_is_gone_is_read_whole_again(history_repo):
    """Restored into another clone, or kept past a rewrite and a collection: git no longer knows its commit."""
    cache = history_repo / "build" / "history"
    _everything(History(Store(history_repo), cache=cache))
    code, limit, _, index = pickle.loads((cache / "index.pickle").read_bytes())
    (cache / "index.pickle").write_bytes(pickle.dumps((code, limit, "f" * 40, index)))
    assert _everything(History(Store(history_repo), cache=cache)) == _everything(History(Store(history_repo)))


def test_a_cache_read_on_a_merged_branch_is_not_taken_for_the_first_parent_line(history_repo):
    """The cache was read at a commit HEAD descends from, but through a merge's second parent: the commits
    since it along first parents are not what changed, so the history is read whole again."""
    cache = history_repo / "build" / "history"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "checkout", "-q", "-b", "side", "HEAD~1"], cwd=history_repo, check=True)
    add_result(history_repo, "erin", "v1", 0.2)
    commit(history_repo, "2026-03-07T10:00:00Z")
    _everything(History(Store(history_repo), cache=cache))
    subprocess.run([*git, "checkout", "-q", "main"], cwd=history_repo, check=True)
    subprocess.run([*git, "merge", "-q", "--no-ff", "-m", "merge", "side"], cwd=history_repo, check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": "2026-03-08T10:00:00Z"})
    assert _everything(History(Store(history_repo), cache=cache)) == _everything(History(Store(history_repo)))


def test_a_committed_file_that_is_no_record_is_skipped_not_a_crash(history_repo):
    odd = history_repo / "challenges" / CHALLENGE / "results" / PHASE / "dave" / "v1.json"
    odd.parent.mkdir(parents=True)
    odd.write_text("[1]")  # JSON, but no record: written by hand
    commit(history_repo, "2026-03-07T10:00:00Z")
    history = History(Store(history_repo))
    last = history.snapshots(CHALLENGE, PHASE)[-1]
    assert "dave" not in [r.participant for r in history.results(last)]
