"""Carrying a phase's results over to another phase (`runner.evaluation.reruns`): which results go,
the submission files that carry them, resuming; and images preserved on the runner, on the real engine."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
import yaml

from runner.evaluation.archives import load_preserved, preserve_image, preserved_archive
from runner.evaluation.reruns import Choice, RerunError, Standing, check_phases, plan, queue, select, write
from runner.execution.sandbox import SandboxError
from runner.tree.policy import window
from runner.tree.result_model import Result
from runner.tree.store import Store
from tests.helpers import CHALLENGE, NOW, PHASE, REPO, add_result, edit_yaml, phase_file

TARGET = "new-scanner"
WHEN = "2026-03-01T10:00:00+00:00"


def standing(participant: str, sub_id: str, rank: int | None, status: str = "succeeded",
             withheld: str | None = None) -> Standing:
    metrics = None if withheld or status != "succeeded" else {"aggregates": {"dice": {"mean": 0.5}}}
    return Standing(Result(challenge=CHALLENGE, phase=PHASE, participant=participant, submission=sub_id,
                           status=status, created_at=WHEN, started_at=WHEN, finished_at=WHEN, metrics=metrics,
                           withheld=withheld), rank)


def keys(chosen: list[Standing]) -> list[str]:
    return [f"{s.result.participant}/{s.result.submission}" for s in chosen]


# --- selection ---------------------------------------------------------------------------------


def test_all_takes_every_succeeded_result_best_ranked_first():
    standings = [standing("bob", "v1", 2), standing("carol", "v1", None), standing("alice", "v1", 1),
                 standing("dave", "v1", None, status="failed")]
    assert keys(select(standings, Choice("all"))) == ["alice/v1", "bob/v1", "carol/v1"]


def test_best_keeps_each_participants_best_ranked_result():
    standings = [standing("alice", "v1", 3), standing("alice", "v2", 1), standing("bob", "v1", 2),
                 standing("bob", "v2", 4), standing("carol", "v1", None)]
    assert keys(select(standings, Choice("best"))) == ["alice/v2", "bob/v1"]


def test_top_keeps_every_result_tied_at_the_cut():
    standings = [standing("dave", "v1", 4), standing("bob", "v1", 2), standing("alice", "v1", 1),
                 standing("carol", "v1", 2), standing("erin", "v1", None)]
    assert keys(select(standings, Choice("top", 1))) == ["alice/v1"]
    assert keys(select(standings, Choice("top", 2))) == ["alice/v1", "bob/v1", "carol/v1"]
    assert keys(select(standings, Choice("top", 3))) == ["alice/v1", "bob/v1", "carol/v1"]
    assert keys(select(standings, Choice("top", 9))) == ["alice/v1", "bob/v1", "carol/v1", "dave/v1"]


@pytest.mark.parametrize("how", [Choice("all"), Choice("best"), Choice("top", 1)])
def test_results_whose_scores_are_withheld_are_not_guessed_at(how):
    standings = [standing("alice", "v1", None, withheld="scores withheld until 2027-12-31 23:59 UTC"),
                 standing("bob", "v1", None, status="failed")]
    with pytest.raises(RerunError, match=r"final-test: the scores of 1 result\(s\) are withheld \(scores withheld "
                                         r"until 2027-12-31 23:59 UTC\); pass --identity"):
        select(standings, how)


def test_only_algorithms_of_the_same_kind_are_carried():
    store = Store(REPO)
    source, target = store.phase(CHALLENGE, PHASE), store.phase(CHALLENGE, TARGET)
    check_phases(source, target)
    with pytest.raises(RerunError, match="takes predictions files, which cannot run on other data"):
        check_phases(source, dataclasses.replace(target, submission_kind="predictions"))
    with pytest.raises(RerunError, match="'final-test' takes algorithm submissions but 'new-scanner' takes training"):
        check_phases(source, dataclasses.replace(target, submission_kind="training"))
    with pytest.raises(RerunError, match="--from and --to are both 'final-test'"):
        check_phases(source, source)


# --- the submission files ----------------------------------------------------------------------


def carried(repo, chosen: list[Standing]):
    store = Store(repo)
    return write(store, plan(store, store.phase(CHALLENGE, TARGET), chosen))


def test_a_carried_submission_names_the_same_algorithm_and_says_where_it_came_from(repo):
    add_result(repo, "alice", "v1", 0.9)
    source = repo / "challenges" / CHALLENGE / "submissions" / PHASE / "alice" / "v1.yml"
    edit_yaml(source, title="Mean filter", description="Smooths first.", code_url="https://example.org/code")
    [done] = carried(repo, [standing("alice", "v1", 2)])
    assert done.state == "written"
    assert done.plan.path == repo / "challenges" / CHALLENGE / "submissions" / TARGET / "alice" / "v1.yml"
    written = yaml.safe_load(done.plan.path.read_text())
    assert written == {"phase": TARGET, "image": yaml.safe_load(source.read_text())["image"], "title": "Mean filter",
                       "description": "Re-run of final-test result alice/v1 (rank 2 in final-test).\n\nSmooths first.",
                       "code_url": "https://example.org/code"}
    submission = Store(repo).submission(done.plan.path)  # a valid submission of the target phase
    assert (submission.phase, submission.participant, submission.id) == (TARGET, "alice", "v1")


def test_an_image_archive_is_carried_as_it_was_submitted_and_long_descriptions_are_cut(repo):
    add_result(repo, "alice", "v1", 0.9)
    source = repo / "challenges" / CHALLENGE / "submissions" / PHASE / "alice" / "v1.yml"
    archive = {"url": "https://example.org/algo.tar.age", "sha256": "b" * 64, "encrypted": True}
    source.write_text(yaml.safe_dump({"phase": PHASE, "image_archive": archive, "description": "x" * 2000}))
    [done] = carried(repo, [standing("alice", "v1", None)])
    written = yaml.safe_load(done.plan.path.read_text())
    assert written["image_archive"] == archive and "image" not in written
    assert written["description"].startswith("Re-run of final-test result alice/v1 (unranked in final-test).\n\nxxx")
    assert len(written["description"]) == 2000
    Store(repo).submission(done.plan.path)  # within the field's limit: it reads


def test_writing_again_changes_nothing_and_evaluates_nothing_twice(repo):
    add_result(repo, "alice", "v1", 0.9)
    add_result(repo, "bob", "v1", 0.8)
    first = carried(repo, [standing("alice", "v1", 1), standing("bob", "v1", 2)])
    assert [c.state for c in first] == ["written", "written"]
    store = Store(repo)
    assert [s.key for s in queue(store, first)] == [f"{CHALLENGE}/{TARGET}/alice/v1", f"{CHALLENGE}/{TARGET}/bob/v1"]
    add_result(repo, "alice", "v1", 0.7, phase=TARGET)  # alice's rerun has its result now
    before = first[1].plan.path.stat().st_mtime_ns
    again = carried(repo, [standing("alice", "v1", 1), standing("bob", "v1", 2)])
    assert [c.state for c in again] == ["kept", "kept"]
    assert first[1].plan.path.stat().st_mtime_ns == before
    assert [s.key for s in queue(store, again)] == [f"{CHALLENGE}/{TARGET}/bob/v1"]


def test_a_rank_that_moved_since_keeps_the_file_written_then(repo):
    add_result(repo, "bob", "v1", 0.8)
    [first] = carried(repo, [standing("bob", "v1", 1)])
    text = first.plan.path.read_text()
    [again] = carried(repo, [standing("bob", "v1", 2)])
    assert (again.state, first.plan.path.read_text()) == ("kept", text)


def test_a_file_there_for_another_algorithm_is_reported_and_skipped(repo):
    add_result(repo, "bob", "v1", 0.8)
    path = repo / "challenges" / CHALLENGE / "submissions" / TARGET / "bob" / "v1.yml"
    path.parent.mkdir(parents=True)
    other = f"phase: {TARGET}\nimage: ghcr.io/bob/other@sha256:{'e' * 64}\n"
    path.write_text(other)
    [done] = carried(repo, [standing("bob", "v1", 1)])
    assert done.state == "conflict"
    assert done.why == f"challenges/{CHALLENGE}/submissions/{TARGET}/bob/v1.yml is there and names another algorithm"
    assert path.read_text() == other
    assert queue(Store(repo), [done]) == []


def test_a_result_without_its_submission_file_is_an_error(repo):
    add_result(repo, "bob", "v1", 0.8)
    (repo / "challenges" / CHALLENGE / "submissions" / PHASE / "bob" / "v1.yml").unlink()
    with pytest.raises(RerunError, match=f"result bob/v1 has no submission file at challenges/{CHALLENGE}/"):
        carried(repo, [standing("bob", "v1", 1)])


def test_the_new_scanner_phase_takes_no_submissions_by_pull_request():
    phase = Store(REPO).phase(CHALLENGE, TARGET)
    assert not window(phase, NOW).open
    assert yaml.safe_load(phase_file(REPO, TARGET).read_text())["score_jsonpath"] == Store(REPO).phase(
        CHALLENGE, PHASE).score.path


# --- images preserved on the runner (real engine) ----------------------------------------------


@pytest.mark.docker
def test_a_preserved_image_comes_back_after_it_was_deleted(engine, base_image, docker_client, tmp_path):
    context = tmp_path / "image"
    context.mkdir()
    (context / "Dockerfile").write_text(f"ARG BASE\nFROM ${{BASE}}\nLABEL test-run={uuid.uuid4().hex}\n")
    image_id = engine.build(context, name="challenge-test/preserved", base=base_image)
    folder = tmp_path / "preserved"
    assert load_preserved(image_id, executor=engine, folder=folder) is None  # nothing kept yet

    assert preserve_image(image_id, executor=engine, folder=folder) is True
    assert preserve_image(image_id, executor=engine, folder=folder) is False  # saved once
    archive = preserved_archive(folder, image_id)
    assert archive.is_file() and not archive.with_suffix(".part").exists()
    assert yaml.safe_load(archive.with_suffix(".json").read_text()) == {"ref": image_id, "image_id": image_id}

    docker_client.images.remove(image_id, force=True)  # deleted upstream
    with pytest.raises(SandboxError):
        engine.image_id(image_id)
    assert load_preserved(image_id, executor=engine, folder=folder) == image_id
    assert engine.image_id(image_id) == image_id
    assert load_preserved("ghcr.io/nobody/kept@sha256:" + "f" * 64, executor=engine, folder=folder) is None
