"""Hostile and broken submissions on the real engine: each ends as a failed result with a reason a
participant understands, the host is untouched, nothing is left running, and the next one runs."""

from __future__ import annotations

import os
import socket

import orjson
import pytest

from runner.evaluation.job import RunnerConfig, evaluate
from runner.evaluation.queue import evaluation_image
from runner.execution.docker_engine import LABEL, OWNER
from runner.tree.result_model import Result
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, write_submission

pytestmark = pytest.mark.docker

ALGORITHM_FAILURES = {
    "network": "Algorithm failed: OSError: [Errno 101] Network is unreachable",
    "write-root": "Algorithm failed: OSError: [Errno 30] Read-only file system: '/opt/owned'",
    "spin": "Algorithm failed: The container exceeded its time limit of 3 s and was stopped",
    "sleep": "Algorithm failed: The container exceeded its time limit of 3 s and was stopped",
    "memory": "Algorithm failed: The container was killed as it exceeded its memory limit",
    "fork-bomb": "Algorithm failed: BlockingIOError: [Errno 11] Resource temporarily unavailable",
    "disk-filler": "Algorithm failed: OSError: [Errno 28] No space left on device "
                   "(/output is limited to 16 MiB, /tmp to 256 MiB)",
    "symlink": "Algorithm output refused: /output/case-000.npy is a link; only regular files are accepted",
    "look-for-truth": "Algorithm failed: no ground truth visible",
    "huge-stderr": "Algorithm failed: the real reason comes last",
    "strange-name": "Algorithm output refused: /output/\\xff\\x0a\\x1b[1mx is a link; only regular files are "
                    "accepted",
    "sparse": "Algorithm output refused: /output holds more than 16777216 bytes (each file counted by its apparent "
              "size, sparse ones too)",
}


@pytest.fixture(scope="module")
def hostile_repo(tmp_path_factory):
    from runner.evaluation.examples import prepare_workspace
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("hostile") / "repo")
    phase = repo / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml"
    text = phase.read_text().replace("algorithm_time_limit: 120", "algorithm_time_limit: 3")
    text = text.replace("algorithm_resources:\n  memory: 1g", "algorithm_resources:\n  memory: 256m\n  output: 16m")
    phase.write_text(text)
    return repo


@pytest.fixture(scope="module")
def evaluator(hostile_repo, engine, base_image, data_root, tmp_path_factory):
    store = Store(hostile_repo)
    logs = tmp_path_factory.mktemp("logs")
    config = RunnerConfig(data_root=data_root, allow_local_images=True, log_dir=logs)
    image = evaluation_image(store.phase(CHALLENGE, PHASE), store, executor=engine, base=base_image)

    def run(algorithm: str, participant: str, sub_id: str = "v1", evaluation: str = image):
        submission = store.submission(write_submission(hostile_repo, participant, sub_id, algorithm))
        return evaluate(submission, store=store, executor=engine, config=config, evaluation_image=evaluation)

    run.logs = logs
    return run


@pytest.mark.parametrize("mode", sorted(ALGORITHM_FAILURES))
def test_hostile_algorithm_is_a_failed_result(evaluator, behave, mode):
    result = evaluator(behave(mode), participant=mode)
    assert (result.status, result.error) == ("failed", ALGORITHM_FAILURES[mode])
    assert result.metrics is None
    assert Result.from_dict(orjson.loads(result.to_json())) == result  # every reader takes the record


def test_an_image_whose_command_does_not_exist_is_a_failed_result(evaluator, engine, base_image, tmp_path):
    """The engine refuses to start it: the image's fault, a failed result that can be run again, never a
    submission left pending as though the engine were down."""
    (tmp_path / "Dockerfile").write_text('ARG BASE\nFROM ${BASE}\nENTRYPOINT ["/no/such/program"]\n')
    image = engine.build(tmp_path, name="challenge-test/no-command", base=base_image)
    result = evaluator(image, participant="no-command")
    assert (result.status, result.error) == ("failed", 'Algorithm failed: The container could not start: exec: '
                                                       '"/no/such/program": stat /no/such/program: no such file or '
                                                       'directory')
    assert result.algorithm.exit_code == 127


def test_huge_stderr_is_capped_in_the_runner_log(evaluator, behave):
    evaluator(behave("huge-stderr"), participant="noisy")
    log = evaluator.logs / CHALLENGE / PHASE / "noisy" / "v1" / "algorithm.log"
    size = log.stat().st_size
    assert 100_000 < size <= 1024**2 + 64 * 1024, size  # 24 MB written, about 1 MiB kept


@pytest.mark.parametrize("mode, reason", [
    ("bad-metrics", "Evaluation failed: metrics.json is not valid JSON "
                    "(Expecting property name enclosed in double quotes, line 1)"),
    ("nan-metrics", "Evaluation failed: metrics.json has no number at aggregates.dice.mean "
                    "(missing, NaN or not a number)"),
    ("network", "Evaluation failed: OSError: [Errno 101] Network is unreachable"),
    ("symlink", "Evaluation output refused: /output/case-000.npy is a link; only regular files are accepted"),
])
def test_hostile_evaluation_is_a_failed_result(evaluator, behave, engine, base_image, mode, reason):
    baseline = engine.build(REPO / "challenges" / CHALLENGE / "examples" / "baseline",
                            name="challenge-test/baseline", base=base_image)
    result = evaluator(baseline, participant=f"eval-{mode}", evaluation=behave(mode))
    assert (result.status, result.error) == ("failed", reason)


def test_next_submission_runs_normally_and_nothing_is_left(evaluator, engine, docker_client, base_image, behave):
    for mode in ("fork-bomb", "disk-filler", "spin"):
        assert evaluator(behave(mode), participant=f"again-{mode}").status == "failed"
    baseline = engine.build(REPO / "challenges" / CHALLENGE / "examples" / "baseline",
                            name="challenge-test/baseline", base=base_image)
    result = evaluator(baseline, participant="normal")
    assert result.status == "succeeded", result.error
    assert result.metrics["aggregates"]["dice"]["mean"] > 0
    engine.drain()
    mine = f"{OWNER}={socket.gethostname()}:{os.getpid()}"  # other processes may be using the engine meanwhile
    assert docker_client.containers.list(all=True, filters={"label": [LABEL, mine]}) == []
