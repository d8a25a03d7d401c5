"""`challenge check` validates everything an organizer or a pull request can add, each problem once,
all of them in one run, and warns about score paths that match nothing in the committed results."""

from __future__ import annotations

import hashlib
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.cli import main
from runner.tree import check as check_module
from runner.tree.check import check, score_path_warnings
from runner.tree.result_model import Result
from runner.tree.sealing import new_identity
from runner.tree.store import Store
from tests.helpers import CHALLENGE, NOW, PHASE, add_result, edit_yaml, phase_file, write_submission

DIGEST = "sha256:" + "ab" * 32


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def run_check(tree: Path, capsys, *args: str) -> tuple[int, list[str], str]:
    code = main(["--root", str(tree), "check", *args])
    printed = capsys.readouterr()
    return code, printed.out.splitlines(), printed.err


def line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def test_the_example_tree_is_valid_without_warnings(repo, capsys):
    report = check(Store(repo))
    assert (report.problems, report.warnings) == ([], [])
    assert run_check(repo, capsys) == (0, [f"ok: {repo / 'challenges'} is valid"], "")


def test_a_mistake_is_printed_once_and_counted_once(tree, capsys):
    challenge = tree / "challenges" / CHALLENGE / "challenge.yml"
    edit_yaml(challenge, headline="x" * 139)
    write_submission(tree, "carol", "v1", "ghcr.io/carol/algo@" + DIGEST)  # reads the phase, not the challenge
    code, lines, err = run_check(tree, capsys)
    assert (code, err.strip()) == (1, "1 problem found")
    assert lines == [f"{challenge}:{line_of(challenge, 'headline:')}: headline: is 139 characters long; at most 80 "
                     "allowed"]


def test_a_broken_phase_is_reported_at_the_phase_only(tree, capsys):
    phase = phase_file(tree)
    phase.write_text(phase.read_text().replace("submission_kind: algorithm", "submission_kind: algorithms"))
    write_submission(tree, "carol", "v1", "ghcr.io/carol/algo@" + DIGEST)
    code, lines, err = run_check(tree, capsys)
    assert (code, lines, err.strip()) == (
        1, [f"{phase}:{line_of(phase, 'submission_kind:')}: submission_kind: 'algorithms' is not one of: algorithm, "
            "predictions, training"],
        "1 problem found")


def test_every_file_and_every_problem_in_one_run(tree, capsys):
    base = tree / "challenges" / CHALLENGE
    sub = write_submission(tree, "carol", "v1", "ghcr.io/carol/algo:latest")
    sub.write_text(sub.read_text() + "titel: Mine\n")
    teams = write(base / "teams.yml", "lab: alice\n")
    registration = write(base / "registrations" / "alice.yml", "name: Alice\n")
    approvals = write(base / "approvals" / "nope.yml", "- alice\n")
    code, lines, err = run_check(tree, capsys)
    assert lines == [
        f"{approvals}: no phase 'nope' in this challenge",
        f"{approvals}:1: [0]: 'alice' is not participant/id, e.g. alice/v1",
        f"{registration}:1: accept_rules: is required",
        f"{sub}:2: image: must be pinned by digest: registry/name@sha256:<64 hex digits> (a tag alone can change)",
        f"{sub}:3: titel: unknown field; did you mean 'title'?",
        f"{teams}:1: lab: expected a list, got text ('alice')",
    ]
    assert code == 1 and err.strip() == "6 problems found"


def test_a_registration_must_accept_the_rules(tree, capsys):
    path = write(tree / "challenges" / CHALLENGE / "registrations" / "alice.yml", "name: Alice\naccept_rules: no\n")
    assert run_check(tree, capsys, str(path)) == (
        1, [f"{path}:2: accept_rules: must be true: registering means accepting the challenge's rules"],
        "1 problem found\n")


def predictions_phase(tree: Path) -> Path:
    return write(phase_file(tree).with_name("predictions.yml"), """\
        title: Predictions
        submission_kind: predictions
        score_jsonpath: aggregates.dice.mean
        """)


def test_a_predictions_file_is_checked_against_its_pinned_hash(tree, capsys):
    predictions_phase(tree)
    folder = tree / "challenges" / CHALLENGE / "submissions" / "predictions" / "alice"
    archive = folder / "masks.zip"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"not really a zip")
    right = hashlib.sha256(archive.read_bytes()).hexdigest()
    sub = write(folder / "v1.yml", f"phase: predictions\npredictions:\n  file: masks.zip\n  sha256: {right}\n")
    assert run_check(tree, capsys)[0] == 0
    sub.write_text(sub.read_text().replace(right, "f" * 64))
    assert run_check(tree, capsys) == (1, [
        f"{sub}:4: predictions.sha256: masks.zip has sha256 {right}, not the pinned one; pin the file you committed "
        "(sha256sum FILE)"], "1 problem found\n")
    sub.write_text(sub.read_text().replace("masks.zip", "gone.zip"))
    assert run_check(tree, capsys)[1] == [f"{sub}:3: predictions.file: 'gone.zip' was not found next to the submission"]


def test_a_submission_must_fit_its_phase(tree, capsys):
    predictions_phase(tree)
    sub = write_submission(tree, "alice", "v1", "ghcr.io/alice/algo@" + DIGEST, phase="predictions")
    nowhere = write_submission(tree, "alice", "v1", "ghcr.io/alice/algo@" + DIGEST, phase="validation")
    code, lines, _ = run_check(tree, capsys)
    assert code == 1
    assert lines == [f"{sub}:2: image: phase 'predictions' takes a predictions file, not an image",
                     f"{nowhere}: challenge '{CHALLENGE}' has no phase 'validation' "
                     "(phases: final-test, predictions)"]


def test_every_phase_needs_an_evaluation_container(tree, capsys):
    predictions_phase(tree)
    dockerfile = tree / "challenges" / CHALLENGE / "evaluation" / "Dockerfile"
    dockerfile.unlink()
    assert run_check(tree, capsys) == (1, [
        f"{dockerfile}: is missing, and phases final-test, predictions set no evaluation_image: add the "
        "evaluation container's Dockerfile, or set evaluation_image"], "1 problem found\n")
    phase = phase_file(tree)
    phase.write_text(phase.read_text() + f"evaluation_image: ghcr.io/org/eval@{DIGEST}\n")
    assert run_check(tree, capsys)[1][0].startswith(f"{dockerfile}: is missing, and phase predictions sets no ")


def test_a_parent_and_combined_phases_must_exist(tree, capsys):
    phase = phase_file(tree)
    phase.write_text(phase.read_text() + "parent: qualifying\n")
    assert run_check(tree, capsys)[1] == [f"{phase}:{line_of(phase, 'parent:')}: parent: no phase 'qualifying' in "
                                          "this challenge"]


def test_parents_in_a_cycle_are_one_problem(tree, capsys):
    final = phase_file(tree)
    final.write_text(final.read_text() + "parent: qualifying\n")
    qualifying = write(final.with_name("qualifying.yml"), """\
        title: Qualifying
        submission_kind: algorithm
        score_jsonpath: aggregates.dice.mean
        parent: final-test
        """)
    assert run_check(tree, capsys)[1] == [
        f"{final}:{line_of(final, 'parent:')}: parent: parents go round in a cycle: final-test -> qualifying -> "
        "final-test; no one could submit to these phases"]
    assert qualifying.is_file()


def test_score_paths_are_tried_on_the_committed_results(tree, capsys):
    add_result(tree, "alice", "v1", 0.8, cases=[0.7, 0.9])
    add_result(tree, "bob", "v1", None, status="failed", error="Algorithm failed: boom")
    phase = phase_file(tree)
    edit_yaml(phase, score_jsonpath="aggregates.dice.meen", score_case_jsonpath="cases.*.dice",  # the runner's
              extra_results_columns=[{"path": "runner.wall_time_s", "title": "Time"}])  # measurements count too
    code, lines, err = run_check(tree, capsys)
    assert (code, err) == (0, "")
    assert lines == [
        f"warning: {phase}:{line_of(phase, 'meen')}: score_jsonpath: 'aggregates.dice.meen' matches no number in "
        "the 1 succeeded result of this phase; did you mean 'aggregates.dice.mean'?",
        f"warning: {phase}:{line_of(phase, 'cases.*')}: score_case_jsonpath: 'cases.*.dice' matches no values in "
        "the 1 succeeded result of this phase",
        f"ok: {tree / 'challenges'} is valid (2 warnings)",
    ]


def test_score_paths_read_the_results_only_as_far_as_a_match(tree):
    """A phase of a million results costs one read when its first result matches every path; one that
    matches nothing still reads them all, and is told how many it tried."""
    add_result(tree, "alice", "v1", 0.8, cases=[0.7, 0.9])
    store, phase = Store(tree), phase_file(tree)
    first = store.read_result(next((tree / "challenges" / CHALLENGE / "results" / PHASE).glob("*/*.json")))

    def results(then: list[Result]) -> Iterator[Result]:
        yield first
        yield from then
        raise AssertionError("read past the first result, which matched")
    assert score_path_warnings(phase, store.phase(CHALLENGE, PHASE), results([])) == []
    edit_yaml(phase, score_jsonpath="aggregates.dice.meen")
    warnings = score_path_warnings(phase, store.phase(CHALLENGE, PHASE), iter([first, first]))
    assert [w.message for w in warnings] == [
        "'aggregates.dice.meen' matches no number in the 2 succeeded results of this phase; did you mean "
        "'aggregates.dice.mean'?"]


def test_score_paths_are_tried_only_where_the_scores_can_be_read(tree, capsys):
    """A blind phase's public records hold no scores: without the runner's copies (a workflow's checkout)
    they prove no path wrong; with them, the paths are tried on the whole results."""
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", publish_key=new_identity()[1])
    add_result(tree, "alice", "v1", 0.8, cases=[0.7, 0.9])  # before the phase withholds anything: public
    edit_yaml(phase_file(tree), blind=True)
    for participant in ("bob", "carol"):
        add_result(tree, participant, "v1", 0.7, cases=[0.6, 0.8])
    copies = tree / "build" / "withheld"
    kept = shutil.move(copies, tree / "kept")
    assert run_check(tree, capsys) == (0, [f"ok: {tree / 'challenges'} is valid"], "")
    edit_yaml(phase_file(tree), score_jsonpath="aggregates.dice.meen")
    assert run_check(tree, capsys)[1][0].endswith(
        "'aggregates.dice.meen' matches no number in the 1 succeeded result of this phase whose scores can be "
        "read (2 more withhold them); did you mean 'aggregates.dice.mean'?")
    shutil.rmtree(phase_file(tree).parents[1] / "results" / PHASE / "alice")
    assert run_check(tree, capsys)[1] == [f"ok: {tree / 'challenges'} is valid"]  # none readable: no claim
    shutil.move(kept, copies)
    assert run_check(tree, capsys)[1][0].endswith(
        "'aggregates.dice.meen' matches no number in the 2 succeeded results of this phase; did you mean "
        "'aggregates.dice.mean'?")


def test_ranking_metrics_are_tried_like_the_columns(tree, capsys):
    add_result(tree, "alice", "v1", 0.8, cases=[0.7, 0.9])
    phase = phase_file(tree)
    edit_yaml(phase, scoring_method_choice="rank-then-average", ranking_metrics=[
        {"path": "case.*.dice", "title": "Dice"}, {"path": "case.*.dise", "title": "Typo"}])
    assert run_check(tree, capsys)[1] == [
        f"warning: {phase}:{line_of(phase, 'case.*.dise')}: ranking_metrics[1].path: 'case.*.dise' matches no "
        "values in the 1 succeeded result of this phase",
        f"ok: {tree / 'challenges'} is valid (1 warning)"]


def test_runner_paths_a_phase_never_writes_are_warned_of_results_or_not(tree, capsys):
    phase = phase_file(tree)
    edit_yaml(phase, extra_results_columns=[{"path": "runner.aggregates.wall_time_s.mean", "title": "Seconds"},
                                            {"path": "runner.wall_time_s", "title": "Seconds in all"}],
              scoring_method_choice="rank-then-average", score_case_jsonpath=None,
              ranking_metrics=[{"path": "runner.cases.*.wall_time_s", "title": "Time", "order": "asc"}])
    batch = ("which only per-case runs write, but this phase runs in batch mode: set inference_mode: per-case, or "
             "read the whole run's runner.<measurement>")
    warned = [f"warning: {phase}:{line_of(phase, 'runner.aggregates')}: extra_results_columns[0].path: "
              f"'runner.aggregates.wall_time_s.mean' reads runner.aggregates, {batch}",
              f"warning: {phase}:{line_of(phase, 'runner.cases')}: ranking_metrics[0].path: "
              f"'runner.cases.*.wall_time_s' reads runner.cases, {batch}",
              f"ok: {tree / 'challenges'} is valid (2 warnings)"]
    assert run_check(tree, capsys)[1] == warned
    edit_yaml(phase, inference_mode="per-case")
    assert run_check(tree, capsys)[1] == [f"ok: {tree / 'challenges'} is valid"]
    edit_yaml(phase, inference_mode="batch")
    add_result(tree, "alice", "v1", 0.8)  # results of the mode: still one warning per path
    assert run_check(tree, capsys)[1] == warned
    shutil.rmtree(phase.parents[1] / "results")
    edit_yaml(phase, submission_kind="predictions")
    assert (f"warning: {phase}:{line_of(phase, 'runner.wall_time_s')}: extra_results_columns[1].path: "
            "'runner.wall_time_s' reads the runner's measurements, but a predictions phase runs no container to "
            "measure") in run_check(tree, capsys)[1]


def test_one_file_that_is_not_ours(tree, capsys):
    page = tree / "challenges" / CHALLENGE / "evaluation" / "Dockerfile"
    assert run_check(tree, capsys, str(page)) == (
        1, [f"{page}: is not a challenge, phase, submission, method report, result, approvals, exclusions, "
            "teams or registration file"],
        "1 problem found\n")


def test_a_withholding_phase_needs_someone_to_seal_for(tree, capsys):
    edit_yaml(phase_file(tree), blind=True)
    code, lines, _ = run_check(tree, capsys)
    assert code == 1 and lines[0].startswith(f"{phase_file(tree)}: this phase withholds part of its results, but "
                                             f"challenges/{CHALLENGE}/challenge.yml names no recipients")
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", recipients=["github:alice", "age1nope"])
    code, lines, _ = run_check(tree, capsys)
    assert code == 1 and len(lines) == 1 and "recipients[1]: not a valid public key" in lines[0]


@pytest.mark.parametrize("changes, hidden_ok", [
    ({}, False),  # open until 2027-12-31: hiding it would leave submissions open behind it
    ({"submissions_close_at": "2026-05-31T00:00:00Z"}, True),  # closed before NOW
    ({"submissions_open_at": "2026-07-01T00:00:00Z"}, False),  # opens later: it would take submissions then
    ({"submissions_limit_per_user_per_period": 0}, True),  # takes none at all
])
def test_a_hidden_phase_must_be_closed_to_submissions(tree, changes, hidden_ok):
    path = phase_file(tree)
    edit_yaml(path, public=False, **changes)
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", publish_key=new_identity()[1])
    problems = [str(p) for p in check(Store(tree), now=NOW).problems]
    expected = [] if hidden_ok else [
        f"{path}:{line_of(path, 'public:')}: public: false hides a phase that takes submissions now or later; "
        "grand-challenge hides only a closed phase: set submissions_close_at to a past time, or "
        "submissions_limit_per_user_per_period: 0"]
    assert problems == expected


def test_verified_participants_need_registration_with_approval(tree):
    path = phase_file(tree)
    edit_yaml(path, creator_must_be_verified=True)
    problems = [str(p) for p in check(Store(tree)).problems]
    assert problems == [f"{path}:{line_of(path, 'creator_must_be_verified')}: creator_must_be_verified: true needs "
                        f"verified participants, and challenges/{CHALLENGE}/challenge.yml lets anyone submit: set "
                        "registration: required there, so an organizer approves each participant by merging their "
                        "registration"]
    edit_yaml(tree / "challenges" / CHALLENGE / "challenge.yml", registration="required")
    assert check(Store(tree)).problems == []


def test_the_tree_is_listed_as_rglob_lists_it(tmp_path):
    """Files, links to files, no linked folders entered, no dangling or looping links (not an error either),
    in sorted Paths' order (where 'a.b/x' comes after 'a/b', unlike sorted strings)."""
    for rel in ("a/b", "a.b/x", "a/c/d.yml", "z", "a-b/y"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "a" / "to-file").symlink_to(tmp_path / "z")
    (tmp_path / "a" / "to-folder").symlink_to(tmp_path / "a.b", target_is_directory=True)
    (tmp_path / "a" / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "a" / "loop").symlink_to(tmp_path / "a" / "loop")  # a participant can commit either
    (tmp_path / "a" / "through-a-file").symlink_to(tmp_path / "z" / "x")
    listed = check_module._files(tmp_path)
    assert listed == sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert [p.relative_to(tmp_path).as_posix() for p in listed] == [
        "a/b", "a/c/d.yml", "a/to-file", "a-b/y", "a.b/x", "z"]


def test_pages_in_the_folder_the_site_writes_leaderboards_to_are_warned_of(tree, capsys):
    folder = tree / "challenges" / CHALLENGE / "leaderboard"
    folder.mkdir()
    (folder / "rules.md").write_text("# How we rank\n")
    assert run_check(tree, capsys)[1] == [
        f"warning: {folder}: the site writes this challenge's leaderboards here, so nothing in this folder is "
        "published: move your pages to another folder", f"ok: {tree / 'challenges'} is valid (1 warning)"]


def test_a_predictions_file_larger_than_the_phase_allows_is_a_problem(tree, capsys):
    path = predictions_phase(tree)
    path.write_text(path.read_text() + "predictions_max_size: 10m\n")
    folder = tree / "challenges" / CHALLENGE / "submissions" / "predictions" / "alice"
    folder.mkdir(parents=True)
    (folder / "masks.zip").write_bytes(b"x" * (10 * 1024**2 + 1))
    sub = write(folder / "v1.yml", f"phase: predictions\npredictions:\n  file: masks.zip\n  sha256: {'f' * 64}\n")
    assert run_check(tree, capsys)[1] == [
        f"{sub}:3: predictions.file: masks.zip is 10,485,761 bytes; the phase allows 10 MiB (predictions_max_size)"]
