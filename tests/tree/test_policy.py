"""The phase window and the visibility rule, decided in one place (runner/tree/policy.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from runner.tree.policy import (
    EVALUATION_FAILED,
    not_by_form,
    not_runnable,
    public_record,
    shown_details,
    visibility,
    window,
)
from runner.tree.result_model import Result, RunRecord
from runner.tree.store import Store
from runner.tree.submission_model import SubmissionDetails
from tests.helpers import CHALLENGE, NOW, PHASE, UTC, Tree, edit_yaml, phase_file

CLOSES = dt.datetime(2027, 12, 31, 23, 59, 59, tzinfo=UTC)


@pytest.fixture
def phase(tree):
    return lambda **changes: (edit_yaml(phase_file(tree), **changes), Store(tree).phase(CHALLENGE, PHASE))[1]


def test_window_says_when_a_phase_opens_or_closed(phase):
    assert window(phase(), NOW).open
    opens = phase(submissions_open_at=NOW + dt.timedelta(days=1))
    assert window(opens, NOW).reason == "phase 'Final test' opens on 2026-06-02 12:00 UTC (in 1 day)"
    closed = phase(submissions_open_at=None, submissions_close_at=NOW - dt.timedelta(days=3))
    assert window(closed, NOW).reason == "phase 'Final test' closed on 2026-05-29 12:00 UTC (3 days ago)"
    assert not window(phase(submissions_limit_per_user_per_period=0), NOW).open
    hidden = window(phase(public=False), NOW)  # nobody sees it: nobody submits to it
    assert not hidden.open
    assert hidden.reason == "phase 'Final test' is not public (public: false): it takes no submissions"


@pytest.mark.parametrize("changes, approved, expected", [
    ({}, True, (True, True, "")),
    ({"public": False}, True, (False, False, "phase 'Final test' is not public")),
    ({"auto_publish_new_results": False}, False,
     (False, False, "results are published once an organizer approves them")),
    ({"auto_publish_new_results": False}, True, (True, True, "")),
    ({"blind": True}, True, (True, False, "scores withheld until 2027-12-31 23:59 UTC")),
    ({"blind": True, "submissions_close_at": None}, True, (True, False, "scores withheld until the phase closes")),
])
def test_visibility_follows_the_phase(phase, changes, approved, expected):
    shown = visibility(phase(**changes), now=NOW, approved=approved)
    assert (shown.listed, shown.scores, shown.note) == expected


def test_a_blind_phase_shows_its_scores_once_closed(phase):
    assert visibility(phase(blind=True), now=CLOSES + dt.timedelta(seconds=1)).scores


def test_phases_come_in_the_order_participants_meet_them(tree):
    # A qualifying phase opens in March, its final phase (the child) in February, a sanity check in January.
    for slug, opens, parent in (("qualifying", "2026-03-01", None), ("final", "2026-02-01", "qualifying"),
                                ("sanity", "2026-01-15", None)):
        Tree(tree).phase(slug, submissions_open_at=dt.datetime.fromisoformat(f"{opens}T00:00:00+00:00"),
                         parent=parent)
    assert list(Store(tree).phases(CHALLENGE)) == [PHASE, "sanity", "qualifying", "final"]


@pytest.mark.parametrize("changes", [{"blind": True}, {"display_all_metrics": False}])
def test_a_training_record_is_withheld_with_the_scores(phase, changes):
    """What training printed last and the model's hash are measurements too: withheld with the scores."""
    training = RunRecord(image="ghcr.io/a/b@sha256:" + "1" * 64, image_id="sha256:" + "2" * 64, wall_time_s=12.5,
                         last_line="epoch 8 auc 0.71", model_sha256="3" * 64, resumes=1)
    result = Result(challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status="succeeded",
                    created_at="", started_at="", finished_at="", metrics={"aggregates": {"dice": {"mean": 0.5}}},
                    training=training)
    shown = phase(submission_kind="training", **changes)
    public = public_record(result, shown, visibility(shown, now=NOW))
    assert public.training == RunRecord(image=training.image, image_id=training.image_id)
    assert "epoch 8" not in public.to_json() and "3" * 64 not in public.to_json()
    plain = phase(blind=False, display_all_metrics=True)
    shown = public_record(result, plain, visibility(plain, now=NOW)).training
    assert shown == replace(training, last_line=None)  # a piece of the logs: never public



@pytest.mark.parametrize("status", ["succeeded", "failed"])
def test_a_phase_showing_only_its_columns_shows_no_measurement_of_any_result(phase, status):
    """Time and memory are the runner's measurements, withheld with every value but the columns: of a failed
    result too (it kept them all)."""
    algorithm = RunRecord(image="ghcr.io/a/b@sha256:" + "1" * 64, image_id="sha256:" + "2" * 64, wall_time_s=12.5,
                          peak_memory_bytes=3 * 1024**3)
    result = Result(challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status=status,
                    created_at="", started_at="", finished_at="", algorithm=algorithm,
                    metrics={"aggregates": {"dice": {"mean": 0.5}}} if status == "succeeded" else None,
                    error=None if status == "succeeded" else "Algorithm failed: The container exited with code 1")
    shown = phase(display_all_metrics=False)
    public = public_record(result, shown, visibility(shown, now=NOW))
    assert public.algorithm == RunRecord(image=algorithm.image, image_id=algorithm.image_id)
    assert public.withheld and public.error == result.error

@pytest.mark.parametrize(("changes", "public"), [({"blind": True}, False), ({"display_all_metrics": False}, False),
                                                 ({"give_algorithm_editors_job_view_permissions": True}, True),
                                                 ({}, True)])
def test_an_evaluations_failure_line_is_public_only_where_every_value_is(phase, changes, public):
    """The evaluation reads the ground truth and the values a phase may withhold: its last line (an
    assert, a traceback) is public only where the phase withholds no score and no per-case value."""
    line = "AssertionError: case-3 dice 0.8123 != truth 0.7"
    result = Result(challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status="failed",
                    created_at="", started_at="", finished_at="", error=f"Evaluation failed: {line}",
                    evaluation=RunRecord(image="challenge-eval/x", last_line=line))
    shown = phase(**changes)
    record = public_record(result, shown, visibility(shown, now=NOW))
    assert (line in record.to_json()) is public
    assert (record.error == EVALUATION_FAILED) is not public


def test_only_a_result_whose_algorithm_ran_outside_training_can_be_run_again(tree):
    store = Store(tree)
    ran = Result(challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status="succeeded",
                 created_at="2026-03-01T10:00:00+00:00", started_at="2026-03-01T10:00:00+00:00",
                 finished_at="2026-03-01T10:00:00+00:00", algorithm=RunRecord(image="x@sha256:" + "a" * 64))
    assert not_runnable(store.phase(CHALLENGE, PHASE), ran) is None
    assert "never ran" in (not_runnable(store.phase(CHALLENGE, PHASE), replace(ran, algorithm=None)) or "")
    Tree(tree).phase("stage1", submission_kind="predictions")
    Tree(tree).phase("final", submission_kind="training")
    assert "takes predictions" in (not_runnable(store.phase(CHALLENGE, "stage1"), ran) or "")
    assert "trained model stays on the runner" in (not_runnable(store.phase(CHALLENGE, "final"), ran) or "")


def test_a_submissions_comment_link_and_pdf_show_where_the_phase_shows_them(phase):
    details = SubmissionDetails(title="T", comment="fold 2", supplementary_url="https://arxiv.org/abs/1",
                                supplementary="method.pdf", supplementary_sha256="ab" * 32)
    hidden = shown_details(phase(), details)  # grand-challenge's defaults, but the PDF's link (shown as before)
    assert (hidden.comment, hidden.supplementary_url, hidden.supplementary) == ("", None, "method.pdf")
    shown = shown_details(phase(display_submission_comments=True, show_supplementary_url=True,
                                show_supplementary_file_link=False), details)
    assert (shown.comment, shown.supplementary_url, shown.supplementary, shown.supplementary_sha256) == (
        "fold 2", "https://arxiv.org/abs/1", None, None)
    assert shown.title == "T"


def test_the_issue_form_carries_an_image_and_nothing_a_phase_requires_beside_it(tree, phase):
    assert not_by_form(phase()) is None
    assert not_by_form(phase(supplementary_file_choice="required")) == "a PDF describing the method beside the file"
    assert not_by_form(phase(supplementary_file_choice="off", supplementary_url_choice="required",
                             supplementary_url_label="your preprint")) == \
        "a link to your preprint"
    Tree(tree).phase("stage1", submission_kind="predictions")
    assert not_by_form(Store(tree).phase(CHALLENGE, "stage1")) == "a predictions or metrics file"
