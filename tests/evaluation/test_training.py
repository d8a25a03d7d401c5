"""Type 3 on the real engine: a training image trained on hidden training data, then run with its
model; a runner killed mid-training resumes from the checkpoints within the same budget; checkpoints
past their cap stop the training, and what a training closed to the runner goes all the same. (The
bookkeeping in detail: test_training_fake.py.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runner.evaluation.job import RunnerConfig
from runner.evaluation.queue import run_jobs
from runner.evaluation.training import Remover, TrainingFolder
from runner.execution.sandbox import Mount, RunAs, RunSpec
from runner.tree.result_model import Result
from runner.tree.store import Store
from tests.evaluation.test_resilience import labelled, wait_until
from tests.helpers import CHALLENGE, IMAGES, PHASE, as_runner_user, edit_yaml, phase_file, write_submission

pytestmark = pytest.mark.docker
KEY = f"{CHALLENGE}/{PHASE}/alice/v1"


@pytest.fixture(scope="module")
def trainer(engine, base_image) -> str:
    return engine.build(IMAGES / "trainer", name="challenge-test/trainer", base=base_image)


@pytest.fixture
def hidden(data_root, tmp_path) -> Path:
    """The example's hidden data plus training data (what the trainer reads is only listed)."""
    root = tmp_path / "data"
    shutil.copytree(data_root, root)
    training = root / CHALLENGE / PHASE / "training"
    training.mkdir()
    for name in ("row-1.csv", "row-2.csv"):
        (training / name).write_text("0.1,0.9\n")
    return root


def training_phase(repo: Path, trainer: str, **changes) -> Path:
    edit_yaml(phase_file(repo), submission_kind="training", training_time_limit=60, algorithm_command="predict",
              **changes)
    write_submission(repo, "alice", "v1", trainer)
    return repo


def whole_result(repo: Path) -> Result:
    """The result as the runner keeps it (its public record lacks the last stderr lines)."""
    store = Store(repo)
    result = store.runner_result(store.submission(store.paths.submission_file(CHALLENGE, PHASE, "alice", "v1")))
    assert result is not None
    return result


def evaluate_here(repo: Path, hidden: Path, engine, base_image: str, training_dir: Path) -> Result:
    store = Store(repo)
    config = RunnerConfig(data_root=hidden, allow_local_images=True, training_dir=training_dir)
    [report] = run_jobs(store.pending(), store=store, executor=engine, config=config, base=base_image)
    assert report.status in ("succeeded", "failed"), report.detail
    return whole_result(repo)


def test_trains_then_predicts_with_its_model(repo, hidden, engine, base_image, trainer, tmp_path):
    result = evaluate_here(training_phase(repo, trainer), hidden, engine, base_image, tmp_path / "training")
    assert result.status == "succeeded", result.error
    training = result.training
    assert training is not None and training.exit_code == 0 and training.resumes == 0
    assert 8 <= (training.wall_time_s or 0) < 30 and (training.peak_memory_bytes or 0) > 1024**2
    assert training.last_line == "trained 8 epochs"
    folder = TrainingFolder(tmp_path.joinpath("training", *KEY.split("/")))
    model = json.loads((folder.model / "model.json").read_text())
    assert model["rows"] == ["row-1.csv", "row-2.csv"] and model["starts"] == [0]
    assert (folder.root / "model.sha256").read_text().strip() == training.model_sha256
    assert "epoch 8 done" in folder.log.read_text()  # the full log stays on the runner
    assert result.metrics and result.metrics["aggregates"]["dice"]["mean"] > 0  # predicted with the model


def start_runner(repo: Path, hidden: Path, base_image: str, training_dir: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "runner.cli", "--root", str(repo), "evaluate", "--pending", "--data-root", str(hidden),
           "--allow-local-images", "--base-image", base_image, "--training-dir", str(training_dir)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def checkpointed_epoch(folder: TrainingFolder) -> int:
    try:
        return int(json.loads((folder.checkpoints / "state.json").read_text())["epoch"])
    except (FileNotFoundError, ValueError):
        return 0


@pytest.mark.parametrize("restart_after_s", [0, 8])
def test_a_runner_killed_mid_training_resumes_from_its_checkpoint(repo, hidden, engine, base_image, trainer,
                                                                   docker_client, tmp_path, restart_after_s):
    """Killed after epoch 3. Restarted at once, training goes on from the checkpoint; restarted after
    its orphaned container trained on alone, that container's epochs count against the budget too."""
    training_phase(repo, trainer)
    folder = TrainingFolder(tmp_path.joinpath("training", *KEY.split("/")))
    runner = start_runner(repo, hidden, base_image, tmp_path / "training")
    try:
        wait_until(lambda: checkpointed_epoch(folder) >= 3, seconds=120)
        os.kill(runner.pid, signal.SIGKILL)
    finally:
        runner.wait()
    assert labelled(docker_client, runner, trainer), "the dead runner's training container runs on"
    killed_at = checkpointed_epoch(folder)
    if restart_after_s:
        wait_until(lambda: checkpointed_epoch(folder) == 8, seconds=restart_after_s + 5)
    result = evaluate_here(repo, hidden, engine, base_image, tmp_path / "training")
    assert result.status == "succeeded", result.error
    assert not labelled(docker_client, runner)  # the orphan was removed before training resumed
    starts = json.loads((folder.model / "model.json").read_text())["starts"]
    assert starts[0] == 0 and starts[-1] >= killed_at >= 3 and len(starts) == 2  # resumed, not started over
    training = result.training
    assert training is not None and training.resumes == 1
    # What the first attempt and its orphan trained is charged: 8 one-second epochs in all, whoever ran them.
    assert 8 <= (training.wall_time_s or 0) < 60


def test_checkpoints_past_their_cap_stop_the_training(repo, hidden, engine, base_image, trainer, tmp_path):
    repo = training_phase(repo, trainer, training_command="train hog", checkpoint_max_size="6m")
    result = evaluate_here(repo, hidden, engine, base_image, tmp_path / "training")
    assert result.status == "failed"
    assert result.error == "Training was stopped: its checkpoints exceeded 6 MiB (/opt/ml/checkpoints)"
    assert result.training is not None and (result.training.wall_time_s or 0) < 15


def test_checkpoints_nested_past_path_max_stop_the_training_and_go(repo, hidden, engine, base_image, trainer,
                                                                   tmp_path):
    """Nested past the host's PATH_MAX, checkpoints once could not be measured (ENAMETOOLONG, swallowed):
    1 GiB against a 64 MiB cap in 13 s, and every later job failed the same way, pending forever."""
    repo = training_phase(repo, trainer, training_command="train deep", checkpoint_max_size="64m")
    result = evaluate_here(repo, hidden, engine, base_image, tmp_path / "training")
    assert (result.status, result.error) == ("failed", f"Training was stopped: /opt/ml/checkpoints/{'d' * 100}/"
                                                       f"{'d' * 100}/... nests folders more than 32 deep, so the size "
                                                       "of its checkpoints is unknown")
    folder = TrainingFolder(tmp_path / "training" / KEY)
    assert not folder.checkpoints.exists() and not list(folder.root.glob(".discarded-*"))
    assert Store(repo).pending() == []


TRAINER = "4343:4343"  # the training container's user: neither root nor the runner's
CLOSE = """
import os
os.makedirs("/ckpt/closed/deeper")
for name in ("closed/epoch.pt", "closed/deeper/epoch.pt"):
    with open("/ckpt/" + name, "wb") as out:
        out.write(b"w" * 1024**2)
os.chmod("/ckpt/closed/deeper", 0o500)
os.chmod("/ckpt/closed", 0o000)
"""


def close_checkpoints(engine, image: str, folder: TrainingFolder) -> None:
    """A training-like container, running as TRAINER, leaves checkpoints in folders it closed."""
    spec = RunSpec(image=image, command=("python3", "-c", CLOSE), user=RunAs(TRAINER), time_limit=60,
                   mounts=(Mount(folder.checkpoints, "/ckpt", read_only=False),))
    outcome = engine.run(spec)
    assert outcome.ok, outcome.stderr_tail


def test_what_a_training_closed_to_the_runner_is_removed_as_its_user(engine, base_image, runner_home):
    """A runner that is not root (this one acts as RUNNER_UID while it handles the folder) may not enter a
    folder the training's container closed: a container of the base image running as the training's user
    empties it, when the checkpoints are discarded and, for what a runner before this change left aside,
    at the next reset. Before, such a folder stayed on the runner's disk for good, however large."""
    lines: list[str] = []
    helped: list[str] = []

    def remove_as(aside: Path, user: str) -> bool:
        helped.append(aside.name)
        return engine.remove_as(aside, user)

    folder = TrainingFolder(runner_home / "training", Remover(remove_as, TRAINER, lines.append))
    with as_runner_user():
        folder.reset("sha256:1")
    close_checkpoints(engine, base_image, folder)
    folder.checkpoints.rename(folder.root / ".discarded-1")  # what a runner before this change left aside
    with as_runner_user():
        folder.reset("sha256:1")
        after_reset = sorted(p.name for p in folder.root.iterdir())
    close_checkpoints(engine, base_image, folder)
    with as_runner_user():
        folder.discard_checkpoints()  # a failed training's
    assert after_reset == ["checkpoints", "state.json"]
    assert sorted(p.name for p in folder.root.iterdir()) == ["state.json"] and lines == []
    assert helped[0] == ".discarded-1" and len(helped) == 2  # the runner alone could remove neither
