"""The result comment on a pull request, for a training phase: its figures, and where its logs are."""

from __future__ import annotations

from runner.pullrequests.review import result_comment
from runner.tree.policy import Visibility
from runner.tree.result_model import Result, RunRecord
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, edit_yaml, phase_file

TRAINING = RunRecord(image="sha256:" + "1" * 64, wall_time_s=812.4, peak_memory_bytes=3 * 1024**3, resumes=1,
                     last_line="epoch 40 loss 0.12", model_sha256="2" * 64)


def result(status: str, **fields) -> Result:
    return Result(challenge=CHALLENGE, phase=PHASE, participant="alice", submission="v1", status=status,
                  created_at="", started_at="", finished_at="", training=TRAINING, **fields)


def test_a_training_result_says_how_training_went(tree):
    edit_yaml(phase_file(tree), submission_kind="training")
    phase = Store(tree).phase(CHALLENGE, PHASE)
    comment = result_comment(result("succeeded", metrics={"aggregates": {"dice": {"mean": 0.9}}}), phase,
                             Visibility(True, True))
    assert "Training took 812 s, peak memory 3072 MiB, resumed 1 time(s) after the runner restarted." in comment


def test_a_failed_training_in_a_debugging_phase_points_to_its_sealed_logs(tree):
    edit_yaml(phase_file(tree), submission_kind="training", give_algorithm_editors_job_view_permissions=True)
    phase = Store(tree).phase(CHALLENGE, PHASE)
    comment = result_comment(result("failed", error="Training failed: ValueError: no rows"), phase,
                             Visibility(True, True))
    assert "Training failed: ValueError: no rows" in comment and "challenge logs" in comment
