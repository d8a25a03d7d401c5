"""Signed results checked against the tree: the store signs what it writes; `challenge verify`, the site
build and the pages all ask `tree.verification` whether a record is as the runner made it."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest

from runner.cli import main
from runner.site import pages
from runner.site.build import SiteConfig
from runner.site.datafiles import read_snapshot
from runner.tree.records import Keys, sealed_path
from runner.tree.sealing import new_identity, recipient, seal
from runner.tree.signing import new_key, signers_line
from runner.tree.store import Store
from runner.tree.verification import Verifier, signers_path
from tests.helpers import CHALLENGE, NOW, PHASE, Tree, add_signed_result, commit, edit_yaml, phase_file

WHEN = "2026-03-01T10:00:00+00:00"

@pytest.fixture
def tree(tree: Path) -> Path:
    """The built tree, with the site's templates and mkdocs.yml: this module's tests build pages."""
    Tree(tree).site()
    return tree


@pytest.fixture
def signed_repo(tree) -> Path:
    key = new_key()
    signers_path(tree).write_text(signers_line("gpu-1", key) + "\n")
    store = Store(tree, signer=key)
    for participant, dice in (("alice", 0.91), ("bob", 0.84)):
        add_signed_result(tree, store, participant, dice)
    return tree


def tamper(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_what_the_runner_wrote_verifies_and_an_edited_digit_does_not(signed_repo):
    verifier = Verifier.of(signed_repo)
    record = signed_repo / "challenges" / CHALLENGE / "results" / PHASE / "alice" / "v1.json"
    check = verifier.check(Store(signed_repo).read_result(record), record)
    assert check.verified and check.signer == "gpu-1"
    tamper(record, "0.91", "0.97")
    check = verifier.check(Store(signed_repo).read_result(record), record)
    assert not check.verified and "changed after the runner signed it" in check.reason


def test_a_record_verifies_whatever_numbers_it_holds(tree):
    key = new_key()
    signers_path(tree).write_text(signers_line("gpu-1", key) + "\n")
    for dice in (2**70, -(2**63) - 1, 2**64 - 1, 1e308, -0.0, 1 / 3):  # past 64 bits orjson reads a float
        record = add_signed_result(tree, Store(tree, signer=key), "alice", dice)
        assert Verifier.of(tree).check(Store(tree).read_result(record), record).verified, dice


def test_provenance_must_agree_with_the_tree(signed_repo):
    subprocess.run(["git", "init", "-q"], cwd=signed_repo, check=True)
    commit(signed_repo, WHEN)
    store, verifier = Store(signed_repo), Verifier.of(signed_repo)
    results = signed_repo / "challenges" / CHALLENGE / "results" / PHASE
    # A record copied under another participant's name names its own place.
    (results / "carol").mkdir()
    (results / "carol" / "v1.json").write_text((results / "alice" / "v1.json").read_text())
    assert "names another place" in verifier.check(store.read_result(results / "carol" / "v1.json"),
                                                   results / "carol" / "v1.json").reason
    # The submission file edited after its evaluation.
    submission = signed_repo / "challenges" / CHALLENGE / "submissions" / PHASE / "bob" / "v1.yml"
    submission.write_text(submission.read_text() + "title: swapped\n")
    assert "not the one the runner evaluated" in Verifier.of(signed_repo).check(
        store.read_result(results / "bob" / "v1.json"), results / "bob" / "v1.json").reason
    # An evaluation under a phase file the phase never had.
    phase_file(signed_repo).write_text(phase_file(signed_repo).read_text() + "\n# edited\n")
    commit(signed_repo, WHEN, "phase edited")
    tamper(phase_file(signed_repo), "# edited", "# edited again")
    assert Verifier.of(signed_repo).check(store.read_result(results / "alice" / "v1.json"),
                                          results / "alice" / "v1.json").verified  # the first version is in history


def test_verify_command_names_each_file_that_fails(signed_repo, capsys):
    assert main(["--root", str(signed_repo), "verify"]) == 0
    assert "2 result(s) verified" in capsys.readouterr().out
    record = signed_repo / "challenges" / CHALLENGE / "results" / PHASE / "bob" / "v1.json"
    tamper(record, "0.84", "0.94")
    assert main(["--root", str(signed_repo), "verify"]) == 1
    captured = capsys.readouterr()
    assert f"challenges/{CHALLENGE}/results/{PHASE}/bob/v1.json: the signature does not match" in captured.out
    assert "1 of 2 result(s) do not verify" in captured.err


def test_the_site_publishes_only_what_verifies_and_says_which(signed_repo):
    record = signed_repo / "challenges" / CHALLENGE / "results" / PHASE / "bob" / "v1.json"
    tamper(record, "0.84", "0.99")
    config = SiteConfig.read(signed_repo)
    left: list[str] = []
    pages.generate(Store(signed_repo, verifier=Verifier.of(signed_repo)), config.stage, config.templates,
                   config.assets, log=left.append)
    assert left == [f"challenges/{CHALLENGE}/results/{PHASE}/bob/v1.json: not published, it does not verify: the "
                    "signature does not match the record: it was changed after the runner signed it"]
    board = (config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert "| alice |" in board and "| bob |" not in board
    assert "Results left out: they do not verify" in board and "bob/v1: the signature does not match" in board
    assert "✓ verified · data dddddddddddd · eval cccccccccccc" in board
    shown = json.loads((config.stage / CHALLENGE / "results" / PHASE / "alice" / "v1.json").read_text())
    assert shown["verification"] == {"verified": True, "signer": "gpu-1", "reason": ""}
    assert shown["provenance"]["data_manifest"] == "sha256:" + "d" * 64


def test_without_allowed_signers_results_show_unverified(signed_repo):
    signers_path(signed_repo).unlink()
    config = SiteConfig.read(signed_repo)
    pages.generate(Store(signed_repo, verifier=Verifier.of(signed_repo)), config.stage, config.templates,
                   config.assets)
    board = (config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert "| alice |" in board and "| bob |" in board and "✗ unverified" in board


def test_results_scored_on_other_data_rank_apart(tree):
    key = new_key()
    signers_path(tree).write_text(signers_line("gpu-1", key) + "\n")
    store = Store(tree, signer=key)
    add_signed_result(tree, store, "alice", 0.95, data="sha256:" + "1" * 64, now=NOW)
    # The newest: the hidden data changed since alice's.
    add_signed_result(tree, store, "bob", 0.84, data="sha256:" + "2" * 64, now=NOW + dt.timedelta(days=1))
    config = SiteConfig.read(tree)
    pages.generate(Store(tree, verifier=Verifier.of(tree)), config.stage, config.templates, config.assets)
    board = (config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert "The hidden data or the evaluation changed during this phase" in board
    assert "data 111111111111, evaluation cccccccccccc: 1 result(s)" in board
    assert "data 222222222222, evaluation cccccccccccc: 1 result(s)" in board
    excluded = board.split("## Excluded results")[1]
    assert "| alice |" in excluded and "scored on other hidden data" in excluded
    # A newer result that failed before its evaluation ran (it names the evaluation image as pinned, not as
    # built) sets nothing: bob's data still decides.
    add_signed_result(tree, store, "carol", 0, data="sha256:" + "2" * 64, evaluation_image="ghcr.io/o/e@sha256:"
                      + "f" * 64, status="failed", now=NOW + dt.timedelta(days=2))
    pages.generate(Store(tree, verifier=Verifier.of(tree)), config.stage, config.templates, config.assets)
    board = (config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert "| bob |" not in board.split("## Excluded results")[1]


def test_hand_made_records_fail_to_verify_and_never_stop_the_check(signed_repo):
    results = signed_repo / "challenges" / CHALLENGE / "results" / PHASE
    record = json.loads((results / "alice" / "v1.json").read_text())
    record["provenance"]["signed_at"] = 12
    (results / "alice" / "v1.json").write_text(json.dumps(record))
    (results / "bob" / "v1.json").write_text("[1, 2]")
    assert main(["--root", str(signed_repo), "verify"]) == 1
    # A submission file that links elsewhere is never read.
    submission = signed_repo / "challenges" / CHALLENGE / "submissions" / PHASE / "bob" / "v1.yml"
    submission.unlink()
    submission.symlink_to("/dev/zero")
    assert main(["--root", str(signed_repo), "verify"]) == 1


def test_history_and_the_leaderboard_command_leave_out_what_does_not_verify(signed_repo, capsys):
    subprocess.run(["git", "init", "-q"], cwd=signed_repo, check=True)
    commit(signed_repo, "2026-03-01T12:00:00+00:00")
    record = signed_repo / "challenges" / CHALLENGE / "results" / PHASE / "bob" / "v1.json"
    tamper(record, "0.84", "0.99")
    commit(signed_repo, "2026-03-02T12:00:00+00:00", "bob's score edited by hand")
    config = SiteConfig.read(signed_repo)
    pages.generate(Store(signed_repo, verifier=Verifier.of(signed_repo)), config.stage, config.templates,
                   config.assets)
    history = config.stage / CHALLENGE / "leaderboard" / PHASE / "history.json.gz"
    before = read_snapshot(history, "2026-03-01")["rows"]
    after = read_snapshot(history, "2026-03-02")["rows"]
    assert [r["participant"] for r in before] == ["alice", "bob"]
    assert [r["participant"] for r in after] == ["alice"]
    for as_of in ([], ["--as-of", "2026-03-02"]):
        assert main(["--root", str(signed_repo), "leaderboard", CHALLENGE, PHASE, "--format", "json", *as_of]) == 0
        assert [r["participant"] for r in json.loads(capsys.readouterr().out)] == ["alice"]


def test_keys_pinned_outside_the_tree_outrank_what_a_writer_commits(signed_repo, capsys, monkeypatch, tmp_path):
    pinned = signers_path(signed_repo).read_text()
    monkeypatch.setenv("CHALLENGE_ALLOWED_SIGNERS", pinned)
    assert main(["--root", str(signed_repo), "verify"]) == 0
    capsys.readouterr()
    # A writer adds their own key to the tree's file: the build stops and says which line.
    forger = new_key()
    signers_path(signed_repo).write_text(pinned + signers_line("laptop", forger) + "\n")
    assert main(["--root", str(signed_repo), "build"]) == 1
    assert ("lists other keys or validity (line 2) than the keys pinned in CHALLENGE_ALLOWED_SIGNERS"
            in capsys.readouterr().err)
    # Deleting the file does not switch verification off either: the pin still holds.
    signers_path(signed_repo).unlink()
    record = signed_repo / "challenges" / CHALLENGE / "results" / PHASE / "bob" / "v1.json"
    add_signed_result(signed_repo, Store(signed_repo, signer=forger), "mallory", 0.99)
    assert main(["--root", str(signed_repo), "verify"]) == 1
    out = capsys.readouterr().out
    assert "mallory/v1.json: signed by a key that CHALLENGE_ALLOWED_SIGNERS does not list" in out
    assert "bob" not in out and record.exists()
    # An empty file given on purpose is an error, not a fall-back to the tree's keys.
    (tmp_path / "empty").write_text("\n")
    assert main(["--root", str(signed_repo), "verify", "--signers", str(tmp_path / "empty")]) == 1
    assert "lists no key" in capsys.readouterr().err
    # A reader checks against keys got apart from the repository.
    monkeypatch.delenv("CHALLENGE_ALLOWED_SIGNERS")
    (tmp_path / "trusted").write_text(pinned)
    assert main(["--root", str(signed_repo), "verify", "--signers", str(tmp_path / "trusted")]) == 1
    assert "mallory/v1.json" in capsys.readouterr().out


def test_a_deleted_allowed_signers_stops_the_build_instead_of_publishing_unverified(signed_repo, capsys):
    subprocess.run(["git", "init", "-q"], cwd=signed_repo, check=True)
    commit(signed_repo, WHEN)
    signers_path(signed_repo).unlink()
    commit(signed_repo, WHEN, "allowed_signers removed")
    for command in (["build"], ["verify"]):
        assert main(["--root", str(signed_repo), *command]) == 1
        assert "allowed_signers: deleted, though the tree's history has it" in capsys.readouterr().err


@pytest.fixture
def rerun_repo(tree) -> tuple[Path, Store, bytes]:
    """alice's result, evaluated again (a fixed evaluation scored it lower): the repository, the runner's
    store and the first record's bytes."""
    key = new_key()
    signers_path(tree).write_text(signers_line("gpu-1", key) + "\n")
    store = Store(tree, signer=key)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tree, check=True)
    record = add_signed_result(tree, store, "alice", 0.95, now=NOW)
    commit(tree, "2026-03-01T12:00:00+00:00")
    first = record.read_bytes()
    add_signed_result(tree, store, "alice", 0.81, now=NOW + dt.timedelta(days=1))
    commit(tree, "2026-03-02T12:00:00+00:00", "rerun")
    assert main(["--root", str(tree), "verify"]) == 0
    return tree, store, first


ALICE = f"challenges/{CHALLENGE}/results/{PHASE}/alice/v1.json"


@pytest.mark.parametrize("how", ["as it was", "pretty-printed", "merged under a first parent that never saw the rerun"])
def test_an_older_record_put_back_over_its_rerun_fails_to_verify(rerun_repo, capsys, how):
    tree, store, first = rerun_repo
    if how == "merged under a first parent that never saw the rerun":
        subprocess.run(["git", "checkout", "-q", "-b", "old", "HEAD~1"], cwd=tree, check=True)
        subprocess.run(["git", "merge", "-q", "-s", "ours", "main", "-m", "merge"], cwd=tree, check=True,
                       capture_output=True)
    else:
        text = json.dumps(json.loads(first), indent=4).encode() if how == "pretty-printed" else first
        (tree / ALICE).write_bytes(text)  # its signature is genuine
        commit(tree, "2026-03-03T12:00:00+00:00", "restore")
    capsys.readouterr()
    assert main(["--root", str(tree), "verify"]) == 1
    assert f"{ALICE}: an older record of its submission put back" in capsys.readouterr().out
    config = SiteConfig.read(tree)
    left: list[str] = []
    pages.generate(Store(tree, verifier=Verifier.of(tree)), config.stage, config.templates, config.assets,
                   log=left.append)
    assert left and "an older record of its submission put back" in left[0]
    if how != "merged under a first parent that never saw the rerun":  # history reads the first parents
        history = config.stage / CHALLENGE / "leaderboard" / PHASE / "history.json.gz"
        rows = {day: [r["participant"] for r in read_snapshot(history, day)["rows"]]
                for day in ("2026-03-01", "2026-03-03")}
        assert rows == {"2026-03-01": ["alice"], "2026-03-03": []}  # genuine then, put back since
        assert main(["--root", str(tree), "leaderboard", CHALLENGE, PHASE, "--format", "json", "--as-of",
                     "2026-03-03"]) == 0
        assert json.loads(capsys.readouterr().out) == []
    # Evaluated again, it verifies.
    add_signed_result(tree, store, "alice", 0.81, now=NOW + dt.timedelta(days=3))
    commit(tree, "2026-03-04T12:00:00+00:00", "rerun")
    assert main(["--root", str(tree), "verify"]) == 0


def test_a_record_of_the_future_made_by_hand_does_not_unseat_the_genuine_one(rerun_repo):
    tree, _, _ = rerun_repo
    genuine = (tree / ALICE).read_bytes()
    forged = json.loads(genuine)
    forged["provenance"]["signed_at"] = "2030-01-01T00:00:00+00:00"
    (tree / ALICE).write_text(json.dumps(forged))
    commit(tree, "2026-03-03T12:00:00+00:00", "forged")
    (tree / ALICE).write_bytes(genuine)
    commit(tree, "2026-03-04T12:00:00+00:00", "genuine again")
    assert main(["--root", str(tree), "verify"]) == 0


def test_a_sealed_record_put_back_beside_a_newer_public_one_fails(tree, tmp_path, capsys):
    secret, public = new_identity()
    (tmp_path / "key").write_text(secret + "\n")
    key = new_key()
    signers_path(tree).write_text(signers_line("gpu-1", key) + "\n")
    edit_yaml(phase_file(tree), blind=True)
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", publish_key=public)
    store = Store(tree, signer=key, keys=Keys())
    record = add_signed_result(tree, store, "alice", 0.95, now=NOW)
    old_sealed = sealed_path(record).read_bytes()
    add_signed_result(tree, store, "alice", 0.81, now=NOW + dt.timedelta(days=1))
    args = ["--root", str(tree), "verify", "--identity", str(tmp_path / "key")]
    assert main(args) == 0
    sealed_path(record).write_bytes(old_sealed)
    assert main(args) == 1
    assert "alice/v1.json (sealed record): its whole record (sealed, or this runner's copy) is not the one" in (
        capsys.readouterr().out)


def test_a_sealed_record_of_the_wrong_shape_is_named_not_a_traceback(signed_repo, tmp_path, capsys):
    secret, public = new_identity()
    record = signed_repo / "challenges" / CHALLENGE / "results" / PHASE / "alice" / "v1.json"
    shown = json.loads(record.read_text())
    shown["withheld"] = ["metrics"]
    record.write_text(json.dumps(shown))
    sealed_path(record).write_bytes(seal(b'{"status": 5, "metrics": []}', [recipient(public)]))
    (tmp_path / "key").write_text(secret + "\n")
    assert main(["--root", str(signed_repo), "verify", "--identity", str(tmp_path / "key")]) == 1
    assert "alice/v1.json (sealed record): " in capsys.readouterr().out


def test_allowed_signers_dropped_by_a_merge_that_hides_its_history_still_stops_the_build(signed_repo, capsys):
    git = lambda *args: subprocess.run(["git", *args], cwd=signed_repo, check=True, capture_output=True)  # noqa: E731
    git("init", "-q", "-b", "main")
    commit(signed_repo, WHEN)
    git("checkout", "-q", "--orphan", "forged")
    signers_path(signed_repo).unlink()
    commit(signed_repo, WHEN, "a root commit without allowed_signers")
    git("merge", "-q", "-s", "ours", "--allow-unrelated-histories", "main", "-m", "merge")  # main is the 2nd parent
    assert main(["--root", str(signed_repo), "build"]) == 1
    assert "allowed_signers: deleted, though the tree's history has it" in capsys.readouterr().err


def test_a_root_given_through_a_link_and_a_record_outside_it(signed_repo, tmp_path, capsys):
    (tmp_path / "link").symlink_to(signed_repo)
    assert main(["--root", str(tmp_path / "link"), "leaderboard", CHALLENGE, PHASE, "--format", "json"]) == 0
    assert [r["participant"] for r in json.loads(capsys.readouterr().out)] == ["alice", "bob"]
    outside = tmp_path / "v1.json"
    outside.write_text((signed_repo / "challenges" / CHALLENGE / "results" / PHASE / "bob" / "v1.json").read_text())
    assert main(["--root", str(signed_repo), "verify", str(outside)]) == 1
    assert f"{outside}: its record names another place" in capsys.readouterr().out


def test_the_build_says_when_the_keys_are_not_pinned(signed_repo, capsys, monkeypatch):
    assert main(["--root", str(signed_repo), "build", "--pages-only"]) == 0
    assert "note: the runners' keys are read from challenges/allowed_signers" in capsys.readouterr().err
    monkeypatch.setenv("CHALLENGE_ALLOWED_SIGNERS", signers_path(signed_repo).read_text())
    assert main(["--root", str(signed_repo), "build", "--pages-only"]) == 0
    assert "note: the runners' keys" not in capsys.readouterr().err


def test_what_a_writer_leaves_in_a_files_history_cannot_unseat_or_hide(rerun_repo, capsys):
    tree, store, first = rerun_repo
    git = lambda *args: subprocess.run(["git", *args], cwd=tree, check=True, capture_output=True)  # noqa: E731
    # bob's genuine record, signed later, committed at alice's path and reverted: it is no record of hers.
    bob = add_signed_result(tree, store, "bob", 0.5, now=NOW + dt.timedelta(days=5))
    genuine = (tree / ALICE).read_bytes()
    (tree / ALICE).write_bytes(bob.read_bytes())
    commit(tree, "2026-03-03T12:00:00+00:00", "bob's record at alice's path")
    (tree / ALICE).write_bytes(genuine)
    commit(tree, "2026-03-03T13:00:00+00:00", "reverted")
    # A submodule's commit recorded where a result was: no blob to read, no traceback.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True).stdout.strip()
    link = f"challenges/{CHALLENGE}/results/{PHASE}/carol/v1.json"
    git("update-index", "--add", "--cacheinfo", f"160000,{head},{link}")
    git("commit", "-q", "-m", "a gitlink")
    git("rm", "-q", "--cached", link)
    git("commit", "-q", "-m", "gone")
    assert main(["--root", str(tree), "verify"]) == 0
    (tree / ALICE).write_bytes(first)  # and the old record put back is still found
    commit(tree, "2026-03-04T12:00:00+00:00", "restore")
    assert main(["--root", str(tree), "verify"]) == 1
    assert "an older record of its submission put back" in capsys.readouterr().out
    assert main(["--root", str(tree), "build", "--pages-only"]) == 0


def test_a_participant_folder_made_a_link_fails(rerun_repo, capsys):
    tree, _, _ = rerun_repo
    results = tree / "challenges" / CHALLENGE / "results" / PHASE
    (results / "alice").rename(tree / "stash")
    (results / "alice").symlink_to(tree / "stash")
    assert main(["--root", str(tree), "verify"]) == 1
    assert f"{ALICE}: its file, or a folder above it, is a link" in capsys.readouterr().out


def test_a_runners_copy_replaced_by_another_runners_rerun_is_not_used(tree, tmp_path):
    key = new_key()
    signers_path(tree).write_text(signers_line("gpu-1", key) + "\n")
    edit_yaml(phase_file(tree), blind=True)
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", publish_key=new_identity()[1])
    first = Store(tree, signer=key, withheld=tmp_path / "runner-a")  # keeps its own copies
    record = add_signed_result(tree, first, "alice", 0.95, now=NOW)
    add_signed_result(tree, Store(tree, signer=key, withheld=tmp_path / "runner-b"), "alice", 0.81,
                      now=NOW + dt.timedelta(days=1))
    runner_a = Store(tree, withheld=tmp_path / "runner-a", verifier=Verifier.of(tree))
    public, whole = runner_a.read_records(record)
    assert whole is public  # runner A's stale copy is not the record now
    [(_, _, check)] = runner_a.checked(CHALLENGE, PHASE)
    assert check is not None and check.verified
