"""Nothing a participant sends can jam the queue or the runner (issue 9, item 6), on the real engine.

Each attack was found by trying it as a hostile participant would: a folder /output cannot empty,
metrics.json that crashes a JSON reader, a flood of files or a FIFO in /output, a runner killed
while its container runs on, outputs that fill memory, an error line used as a channel out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import docker
import pytest

from runner.cli import main
from runner.evaluation.job import RunnerConfig, evaluate
from runner.evaluation.queue import evaluation_image
from runner.execution.docker_engine import LABEL, OWNER, DockerEngine
from runner.execution.outputs import OutputLimits
from runner.execution.sandbox import RunSpec
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, phase_file, write_submission

pytestmark = pytest.mark.docker


def cli_evaluate(repo: Path, data_root: Path, base_image: str, *extra: str) -> int:
    return main(["--root", str(repo), "evaluate", "--pending", "--data-root", str(data_root),
                 "--allow-local-images", "--base-image", base_image, "--cache-dir", str(repo / "cache"), *extra])


def result(repo: Path, participant: str, sub_id: str = "v1") -> dict:
    path = repo / "challenges" / CHALLENGE / "results" / PHASE / participant / f"{sub_id}.json"
    return json.loads(path.read_text())


def test_a_folder_left_read_only_in_output_does_not_jam_the_queue(repo, data_root, base_image, behave, capsys):
    """It used to read "/output could not be emptied between runs after 3 attempts (left pending)",
    run the algorithm three times and exit 1, on every later run too."""
    phase_file(repo).write_text(phase_file(repo).read_text() + "inference_mode: per-case\n")
    write_submission(repo, "mallory", "v1", behave("locked-dir"))
    assert cli_evaluate(repo, data_root, base_image) == 0
    found = result(repo, "mallory")
    assert found["status"] == "succeeded", found["error"]
    assert len(found["algorithm"]["cases"]) == 3  # every case ran, each after the area was emptied
    assert "retry" not in capsys.readouterr().err
    assert cli_evaluate(repo, data_root, base_image) == 0
    assert "nothing to evaluate" in capsys.readouterr().out


def test_outputs_made_unreadable_by_their_writer_are_collected_all_the_same(repo, data_root, base_image, behave):
    """The keeper reads /output as the area's user, not as root as Docker's archive did: what the
    participant made unreadable (chmod 0, a folder included) gets its read permission back."""
    phase_file(repo).write_text(phase_file(repo).read_text() + "inference_mode: per-case\n")
    write_submission(repo, "shy", "v1", behave("unreadable"))
    assert cli_evaluate(repo, data_root, base_image) == 0
    found = result(repo, "shy")
    assert found["status"] == "succeeded", found["error"]
    assert len(found["algorithm"]["cases"]) == 3


@pytest.fixture
def passing_evaluation(repo: Path) -> Path:
    """The challenge's evaluation replaced by one that passes the algorithm's metrics.json on."""
    folder = repo / "challenges" / CHALLENGE / "evaluation"
    for path in folder.iterdir():
        path.unlink()
    (folder / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nENV MODE=pass-metrics\n"
                                       "COPY behave.py /opt/behave.py\nENTRYPOINT [\"python3\", \"/opt/behave.py\"]\n")
    (folder / "behave.py").write_bytes((Path(__file__).parents[1] / "images" / "behave" / "behave.py").read_bytes())
    return repo


def test_metrics_that_crash_a_json_reader_are_failed_results_and_the_queue_goes_on(passing_evaluation, data_root,
                                                                                   base_image, behave):
    repo = passing_evaluation
    for participant, mode in (("deep", "deep-metrics"), ("wide", "huge-int-metrics"), ("fine", "good-metrics")):
        write_submission(repo, participant, "v1", behave(mode))
    assert cli_evaluate(repo, data_root, base_image) == 0
    assert result(repo, "deep")["error"] == "Evaluation failed: metrics.json is nested more than 32 levels deep"
    assert result(repo, "wide")["error"] == ("Evaluation failed: metrics.json holds an integer of 5000 digits "
                                             "(at most 30)")
    assert result(repo, "fine")["status"] == "succeeded"
    assert Store(repo).pending() == []


@pytest.fixture
def own_engine(docker_client, base_image):
    """A Docker executor of this test alone, so what it leaves can be counted (it shares this process's
    owner label with the session's engine, whose pooled areas stay)."""
    engine = DockerEngine(docker_client, keeper_image=base_image)
    yield engine
    engine.close()


def owned_volumes(docker_client, owner: str) -> list:
    return [v for v in docker_client.volumes.list(filters={"label": OWNER})
            if (v.attrs.get("Labels") or {}).get(OWNER) == owner]


@pytest.mark.parametrize("mode, reason", [
    ("many-files", "Algorithm output refused: more than 1000 files in /output"),
    ("fifo", "Algorithm output refused: /output/case-000.npy is not a regular file or folder"),
])
def test_a_flood_of_files_or_a_fifo_is_refused_at_once_and_leaks_nothing(repo, own_engine, docker_client, data_root,
                                                                         base_image, behave, mode, reason):
    """200,000 files (a million in the report) or a FIFO used to stall the runner for about a minute
    and leak a volume: the abandoned archive stream blocked removing the keeper."""
    store = Store(repo)
    submission = store.submission(write_submission(repo, mode, "v1", behave(mode)))
    image = evaluation_image(store.phase(CHALLENGE, PHASE), store, executor=own_engine, base=base_image)
    config = RunnerConfig(data_root=data_root, allow_local_images=True, output_limits=OutputLimits(max_files=1000))
    before = {v.name for v in owned_volumes(docker_client, own_engine._owner)}  # the session engine's, pooled
    found = evaluate(submission, store=store, executor=own_engine, config=config, evaluation_image=image)
    assert (found.status, found.error) == ("failed", reason)
    # A refused output keeps what was measured of the run.
    assert found.algorithm.exit_code == 0 and found.algorithm.wall_time_s > 0
    started = time.monotonic()
    own_engine.close()
    assert time.monotonic() - started < 15
    assert {v.name for v in owned_volumes(docker_client, own_engine._owner)} <= before


def test_outputs_have_their_own_budget_not_the_containers_memory(repo, engine, data_root, base_image, behave):
    """/output is a tmpfs, charged to the memory of the container writing it: 400 MiB written with 256 MiB
    of memory used to read "exceeded its memory limit"; now /output's size is added to the limit."""
    text = phase_file(repo).read_text().replace("algorithm_resources:\n  memory: 1g",
                                                "algorithm_resources:\n  memory: 256m\n  output: 400m")
    phase_file(repo).write_text(text)
    store = Store(repo)
    submission = store.submission(write_submission(repo, "filler", "v1", behave("disk-filler")))
    image = evaluation_image(store.phase(CHALLENGE, PHASE), store, executor=engine, base=base_image)
    found = evaluate(submission, store=store, executor=engine, evaluation_image=image,
                     config=RunnerConfig(data_root=data_root, allow_local_images=True))
    assert found.error == ("Algorithm failed: OSError: [Errno 28] No space left on device "
                           "(/output is limited to 400 MiB, /tmp to 256 MiB)")


def test_the_public_error_line_is_short_and_plain(engine, behave):
    outcome = engine.run(RunSpec(image=behave("long-error")))
    line = outcome.error_line(300)
    assert len(line) == 300 and line.startswith("secret:sss") and "\x1b" not in line


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_runners_sweeping_at_once_remove_a_dead_runners_containers_without_failing(docker_client, engine, behave):
    """Four runners used to fail each other with "No such container ... left pending"."""
    owner = f"{os.uname().nodename}:{dead_pid()}"
    left = [docker_client.containers.run(behave("sleep"), detach=True, network_mode="none",
                                         labels={OWNER: owner, LABEL: f"c/p/x/v{i}"}) for i in range(6)]
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            DockerEngine(docker_client).remove_orphans()
        except BaseException as exc:  # any failure fails the test below
            errors.append(exc)

    threads = [threading.Thread(target=sweep) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for container in left:
        with pytest.raises(docker.errors.NotFound):
            container.reload()


def test_a_killed_runners_algorithm_is_stopped_when_any_runner_starts(repo, data_root, base_image, behave,
                                                                      docker_client):
    """It used to run on past its time limit until the same submission was evaluated again."""
    write_submission(repo, "sleeper", "v1", behave("sleep"))
    cmd = [sys.executable, "-m", "runner.cli", "--root", str(repo), "evaluate", "--data-root", str(data_root),
           "--allow-local-images", "--base-image", base_image]
    runner = subprocess.Popen([*cmd, "--pending"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not docker_client.containers.list(filters={"label": f"{LABEL}={CHALLENGE}/{PHASE}/sleeper/v1"}):
        assert time.monotonic() < deadline, "the algorithm never started"
        time.sleep(0.1)
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    other = write_submission(repo, "other", "v1", behave("noop"))
    done = subprocess.run([*cmd, str(other)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert docker_client.containers.list(all=True, filters={"label": f"{LABEL}={CHALLENGE}/{PHASE}/sleeper/v1"}) == []
    dead = [c for c in docker_client.containers.list(all=True, filters={"label": OWNER})
            if c.labels[OWNER].endswith(f":{runner.pid}")]
    assert dead == []
    assert owned_volumes(docker_client, f"{os.uname().nodename}:{runner.pid}") == []
