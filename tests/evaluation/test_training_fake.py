"""Type 3 bookkeeping on the fake executor: train, then predict with the model, then evaluate; the
time budget across attempts, the model's hash, reuse, the checkpoint cap and what becomes a failure.
The real engine (and a runner killed mid-training) is in test_training.py."""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from runner.evaluation import training
from runner.evaluation.job import RunnerConfig
from runner.evaluation.queue import run_jobs
from runner.evaluation.training import BLOCK, MAX_CHECKPOINT_DEPTH, Remover, TrainingFolder, TrainingState
from runner.execution.images import tree_hash
from runner.execution.sandbox import RunAs, SandboxError
from runner.tree.store import Store
from tests.evaluation import test_job_fake
from tests.evaluation.test_job_fake import ALGORITHM, KEY, edit_phase, evaluate_all, result_of, submit
from tests.fake_executor import Behaviour, FakeExecutor
from tests.helpers import CHALLENGE, PHASE, as_runner_user, write_submission

TRAINING = "/opt/ml/input/data/training"
MODEL, CHECKPOINTS = "/opt/ml/model", "/opt/ml/checkpoints"
fake, data_root = test_job_fake.fake, test_job_fake.data_root  # the same fixtures as the algorithm phases'


def fit(mounts: Mapping[str, Path], model: Path) -> None:
    """A training: the model is the sum of the training bytes; a checkpoint says it got there."""
    total = sum(sum(p.read_bytes()) for p in sorted(mounts[TRAINING].iterdir()))
    (mounts[CHECKPOINTS] / "epoch.json").write_text(json.dumps({"epoch": 3}))
    (model / "weights.json").write_text(json.dumps({"bias": total}))


def fit_or_predict(mounts: Mapping[str, Path], output: Path) -> None:
    """One image that trains or predicts, as its run is mounted."""
    (fit if TRAINING in mounts else predict)(mounts, output)


def predict(mounts: Mapping[str, Path], output: Path) -> None:
    """Predict runs: one file per case, carrying the model's weights (read from its read-only mount)."""
    weights = (mounts[MODEL] / "weights.json").read_text()
    for path in sorted(mounts["/input"].rglob("case-*")):
        (output / path.name).write_text(weights)


@pytest.fixture
def training_phase(repo: Path, data_root: Path) -> Path:
    edit_phase(repo, "submission_kind: algorithm", "submission_kind: training\ntraining_time_limit: 100\n"
                                                   "algorithm_command: predict")
    folder = data_root / CHALLENGE / PHASE / "training"
    folder.mkdir()
    (folder / "rows.bin").write_bytes(bytes(range(10)))
    return repo


@pytest.fixture
def config(data_root: Path, tmp_path: Path) -> RunnerConfig:
    return RunnerConfig(data_root=data_root, training_dir=tmp_path / "training")


def folder_of(config: RunnerConfig) -> TrainingFolder:
    assert config.training_dir is not None
    return TrainingFolder(config.training_dir.joinpath(*KEY.split("/")))


def test_trains_then_predicts_with_the_model_read_only(training_phase, fake: FakeExecutor, config):
    submit(training_phase, fake, Behaviour(write=fit, stderr="epoch 3 loss 0.1\n"), Behaviour(write=predict))
    evaluate_all(training_phase, fake, config)
    result = result_of(training_phase, whole=True)
    assert result.status == "succeeded", result.error
    train, run = [spec for spec in fake.runs if spec.image == fake.image_id(ALGORITHM)]
    assert train.command == ("train",) and run.command == ("predict",)
    assert {(m.target, m.read_only) for m in train.mounts} == {(TRAINING, True), (CHECKPOINTS, False)}
    assert train.output_path == MODEL and train.time_limit == 100
    assert (MODEL, True) in {(m.target, m.read_only) for m in run.mounts}
    folder = folder_of(config)
    assert result.training is not None
    assert result.training.model_sha256 == tree_hash(folder.model) == (folder.root / "model.sha256").read_text().strip()
    assert result.training.last_line == "epoch 3 loss 0.1" and result.training.resumes == 0
    assert json.loads((folder.checkpoints / "epoch.json").read_text()) == {"epoch": 3}  # kept on the runner
    assert folder.root.stat().st_mode & 0o777 == 0o700  # no other host user reaches what the container wrote


def test_a_trained_model_is_reused_when_the_submission_runs_again(training_phase, fake, config):
    submit(training_phase, fake, Behaviour(write=fit), Behaviour(write=predict))
    evaluate_all(training_phase, fake, config)
    first = result_of(training_phase).training
    store = Store(training_phase)
    run_jobs([store.submission(p) for p in store.submission_paths()], store=store, executor=fake, config=config,
             rerun=True)
    commands = [spec.command for spec in fake.runs if spec.image == fake.image_id(ALGORITHM)]
    assert commands == [("train",), ("predict",), ("predict",)]
    assert result_of(training_phase).training == first


def test_another_trained_model_is_not_served_from_the_output_cache(training_phase, fake, config, tmp_path):
    config = RunnerConfig(data_root=config.data_root, training_dir=config.training_dir,
                          cache_dir=tmp_path / "cache")
    submit(training_phase, fake, Behaviour(write=fit_or_predict))
    evaluate_all(training_phase, fake, config)
    rows = config.training_data(Store(training_phase).phase(CHALLENGE, PHASE)) / "rows.bin"
    rows.write_bytes(bytes(range(20)))  # other training data: another model from the same image
    write_submission(training_phase, "alice", "v2", ALGORITHM)
    evaluate_all(training_phase, fake, config)
    predicts = [spec for spec in fake.runs if spec.command == ("predict",)]
    assert len(predicts) == 2  # not reused


def test_a_resume_gets_only_what_is_left_of_the_budget(training_phase, fake, config):
    folder = folder_of(config)
    submit(training_phase, fake, Behaviour(write=fit), Behaviour(write=predict))
    image_id = fake.image_id(ALGORITHM)
    folder.reset(image_id)
    # A runner died 60 s into training, after writing down 58 s; its container wrote a checkpoint since.
    folder.save(TrainingState(image_id=image_id, used_s=58.0, attempts=1, heartbeat_at=time.time() - 2))
    (folder.checkpoints / "epoch.json").write_text("{}")
    evaluate_all(training_phase, fake, config)
    train = next(spec for spec in fake.runs if spec.command == ("train",))
    # The dead runner's time counts, up to its container's last checkpoint (2 s after its last note).
    assert 100 - 58 - 3 < train.time_limit <= 100 - 58 - 2
    result = result_of(training_phase)
    assert result.status == "succeeded" and result.training and result.training.resumes == 1


def test_a_budget_spent_before_the_runner_died_fails_without_running(training_phase, fake, config):
    folder = folder_of(config)
    submit(training_phase, fake, Behaviour(write=fit))
    folder.reset(fake.image_id(ALGORITHM))
    folder.save(TrainingState(image_id=fake.image_id(ALGORITHM), used_s=100.0, attempts=2, heartbeat_at=0.0))
    evaluate_all(training_phase, fake, config)
    result = result_of(training_phase)
    assert result.status == "failed" and "time budget of 100 s" in (result.error or "")
    assert not [spec for spec in fake.runs if spec.image == fake.image_id(ALGORITHM)]


@pytest.mark.parametrize(("behaviour", "reason"), [
    (Behaviour(timed_out=True, write=fit), "Training exceeded its time budget of 100 s (resumes included)"),
    (Behaviour(write=lambda mounts, model: None), "Training failed: it wrote no model into /opt/ml/model"),
    (Behaviour(exit_code=3, stderr="ValueError: no rows\n"), "Training failed: ValueError: no rows"),
    (Behaviour(links={"model.bin": "/etc/passwd"}), "Training output refused"),
])
def test_what_fails_a_training(training_phase, fake, config, behaviour, reason):
    submit(training_phase, fake, behaviour)
    evaluate_all(training_phase, fake, config)
    result = result_of(training_phase)
    assert result.status == "failed" and (result.error or "").startswith(reason), result.error
    assert result.training is not None and result.algorithm is None and result.evaluation is None
    assert folder_of(config).load().status == "failed"


def test_checkpoints_past_their_cap_stop_the_training(training_phase, fake, config):
    training_phase.joinpath("challenges", CHALLENGE, "phases", f"{PHASE}.yml").open("a").write(
        "checkpoint_max_size: 1024\n")

    def hoard(mounts: Mapping[str, Path], model: Path) -> None:
        (mounts[CHECKPOINTS] / "big.bin").write_bytes(b"x" * 4096)
        (model / "weights.json").write_text("{}")

    submit(training_phase, fake, Behaviour(write=hoard))
    evaluate_all(training_phase, fake, config)
    result = result_of(training_phase)
    assert result.status == "failed" and "checkpoints exceeded" in (result.error or "")


def test_a_job_asks_the_executor_as_its_images_user_and_logs_what_even_that_leaves(training_phase, fake, config,
                                                                                  monkeypatch):
    """The job's part: checkpoints past their cap that its runner may not remove (played here: the runner's
    own removal refused) go to the executor as the user the image runs as, and what even that leaves is
    one line of the queue's log; the result is the training's failure alone."""
    training_phase.joinpath("challenges", CHALLENGE, "phases", f"{PHASE}.yml").open("a").write(
        "checkpoint_max_size: 1024\n")

    def hoard(mounts: Mapping[str, Path], model: Path) -> None:
        (mounts[CHECKPOINTS] / "big.bin").write_bytes(b"x" * 4096)

    def refused(path: Path) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    fake.users[fake.image_id(submit(training_phase, fake, Behaviour(write=hoard)))] = RunAs("1000:1000")
    monkeypatch.setattr(training, "remove_tree", refused)
    fake.fail("remove_as", SandboxError("emptying it: the engine did not answer", transient=True))
    lines: list[str] = []
    evaluate_all(training_phase, fake, config, log=lines.append)
    assert "checkpoints exceeded" in (result_of(training_phase).error or "")
    [aside] = folder_of(config).root.glob(".discarded-*")
    assert lines == [f"training checkpoints left on this runner's disk in {aside}: the runner could not remove them "
                     "(Permission denied), nor could a container running as 1000:1000 (emptying it: the engine did not "
                     "answer); remove them as root"]


def test_a_failed_training_asked_to_run_again_starts_over(training_phase, fake, config):
    submit(training_phase, fake, Behaviour(exit_code=1, stderr="boom\n"), Behaviour(write=fit),
           Behaviour(write=predict))
    evaluate_all(training_phase, fake, config)
    assert result_of(training_phase).status == "failed"
    store = Store(training_phase)
    run_jobs(store.pending() or [store.submission(p) for p in store.submission_paths()], store=store,
             executor=fake, config=config, rerun=True)
    result = result_of(training_phase)
    assert result.status == "succeeded" and result.training and result.training.resumes == 0


def test_missing_training_data_leaves_the_submission_pending(training_phase, fake, config, data_root):
    (data_root / CHALLENGE / PHASE / "training" / "rows.bin").unlink()
    (data_root / CHALLENGE / PHASE / "training").rmdir()
    submit(training_phase, fake, Behaviour(write=fit))
    _, reports = evaluate_all(training_phase, fake, config)
    assert reports[0].status == "error" and "hidden training data missing" in reports[0].detail


def test_a_debugging_phase_shows_the_participant_every_attempt_log(training_phase, fake, config):
    edit_phase(training_phase, "submission_kind: training", "submission_kind: training\n"
                                                             "give_algorithm_editors_job_view_permissions: true")
    submit(training_phase, fake, Behaviour(write=fit, stderr="epoch 1\nepoch 2\n"), Behaviour(write=predict))
    evaluate_all(training_phase, fake, config)
    store = Store(training_phase)
    whole = store.local(store.result_path(store.submission(
        store.paths.submission_file(CHALLENGE, PHASE, "alice", "v1"))))
    assert whole is not None and "epoch 2" in (whole.logs or {}).get("training", "")
    assert result_of(training_phase).logs is None  # the public record never carries logs


def test_one_runner_at_a_time_trains_a_submission(training_phase, fake, config):
    """Checkouts sharing a state folder share the training folder: the second runner leaves it pending."""
    submit(training_phase, fake, Behaviour(write=fit_or_predict))
    with folder_of(config).locked():
        _, reports = evaluate_all(training_phase, fake, config)
    assert reports[0].status == "error" and "another runner is training" in reports[0].detail
    _, reports = evaluate_all(training_phase, fake, config)
    assert reports[0].status == "succeeded"


def test_a_fresh_start_moves_checkpoints_the_runner_cannot_delete_aside(tmp_path):
    folder = TrainingFolder(tmp_path / "t")
    folder.reset("sha256:1")
    stuck = folder.checkpoints / "epoch-3"
    stuck.mkdir()
    (stuck / "weights.bin").write_bytes(b"w")
    folder.reset("sha256:2")  # as root nothing is stuck; the rename is what a non-root runner relies on
    assert list(folder.checkpoints.iterdir()) == [] and folder.load() == TrainingState(image_id="sha256:2")
    scan = folder.scan()
    assert (scan.bytes, scan.entries, scan.unreadable) == (0, 0, None)


def closed_checkpoints(folder: TrainingFolder) -> None:
    """What a training may leave: checkpoints, alone and in folders, and a folder it closed (chmod 0500)
    with another in it. The runner goes on past the closed one, whichever it meets first."""
    (folder.checkpoints / "epoch-1.pt").write_bytes(b"w" * 1000)
    for i in range(8):
        (folder.checkpoints / f"run-{i}").mkdir()
        (folder.checkpoints / f"run-{i}" / "epoch-1.pt").write_bytes(b"w" * 1000)
    closed = folder.checkpoints / "closed"
    closed.mkdir()
    (closed / "epoch-2.pt").write_bytes(b"w" * 1000)
    closed.chmod(0o500)


def test_what_the_runner_may_not_remove_alone_is_removed_as_the_trainings_user(runner_home, fake):
    """The runner, not root, removes what it may, and asks the executor (as the training's user) for the
    closed folder alone: here the fake, acting as the runner's user, which made it. Before, a runner that
    is not root left such a folder on its disk for good."""
    lines: list[str] = []
    folder = TrainingFolder(runner_home / "t", Remover(fake.remove_as, "1000:1000", lines.append))
    with as_runner_user():
        folder.reset("sha256:1")
        (folder.checkpoints / "epoch-1.pt").write_bytes(b"w")
        folder.discard_checkpoints()
        assert fake.emptied == []  # nothing the runner could not remove: no helper
        folder.reset("sha256:1")
        closed_checkpoints(folder)
        folder.discard_checkpoints()
        left = sorted(p.name for p in folder.root.iterdir())
    [(aside, user, found)] = fake.emptied
    assert aside.name.startswith(".discarded-") and (user, found) == ("1000:1000", ["closed", "closed/epoch-2.pt"])
    assert left == ["state.json"] and lines == []


def test_what_even_the_executor_cannot_remove_is_said_in_a_line_and_removed_at_the_next_reset(runner_home, fake):
    lines: list[str] = []
    folder = TrainingFolder(runner_home / "t", Remover(fake.remove_as, "1000:1000", lines.append))
    fake.fail("remove_as", SandboxError("emptying it: the engine did not answer", transient=True))
    with as_runner_user():
        folder.reset("sha256:1")
        closed_checkpoints(folder)
        folder.discard_checkpoints()  # a failed training's: it raises nothing
        [aside] = folder.root.glob(".discarded-*")
        folder.reset("sha256:1")  # asked to run again
        left = sorted(p.name for p in folder.root.iterdir())
    assert lines == [f"training checkpoints left on this runner's disk in {aside}: the runner could not remove them "
                     "(Permission denied), nor could a container running as 1000:1000 (emptying it: the engine did not "
                     "answer); remove them as root"]
    assert left == ["checkpoints", "state.json"]
    assert [found for *_, found in fake.emptied] == [["closed", "closed/epoch-2.pt"]]


def nested(top: Path, depth: int, name: str = "d" * 100) -> Path:
    """Folders nested `depth` deep, made one level at a time (relative paths have no PATH_MAX)."""
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=here)
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = below
        with open(os.open("weights.bin", os.O_WRONLY | os.O_CREAT, dir_fd=here), "wb") as out:
            out.write(b"w" * 1000)
    finally:
        os.close(here)
    return top


def test_a_scan_measures_past_path_max_and_stops_past_its_depth(tmp_path):
    folder = TrainingFolder(tmp_path / "t")
    folder.reset("sha256:1")
    nested(folder.checkpoints, MAX_CHECKPOINT_DEPTH)
    scan = folder.scan()
    assert (scan.entries, scan.unreadable) == (MAX_CHECKPOINT_DEPTH + 1, None)
    assert scan.bytes == MAX_CHECKPOINT_DEPTH * BLOCK + BLOCK
    folder.reset("sha256:2")
    nested(folder.checkpoints, 60)  # 6,060 characters below checkpoints/
    deep = folder.scan()
    assert deep.unreadable == "/".join(["d" * 100] * (MAX_CHECKPOINT_DEPTH + 1))
    assert deep.why == f"nests folders more than {MAX_CHECKPOINT_DEPTH} deep"


def test_a_scan_that_cannot_read_a_folder_says_where_and_never_raises(tmp_path):
    folder = TrainingFolder(tmp_path / "t")
    folder.reset("sha256:1")
    folder.checkpoints.rename(tmp_path / "gone")
    folder.checkpoints.symlink_to(tmp_path / "gone")  # never followed: not a folder of its own
    assert (folder.scan().unreadable, folder.scan().why) == (".", "cannot be read (Not a directory)")


def test_discarded_checkpoints_go_however_deep_and_wide(tmp_path):
    folder = TrainingFolder(tmp_path / "t")
    folder.reset("sha256:1")
    nested(folder.checkpoints, 3000, name="x")  # past PATH_MAX and past Python's recursion limit
    for i in range(300):
        (folder.checkpoints / f"wide-{i}").mkdir()
        (folder.checkpoints / f"wide-{i}" / "file").write_bytes(b"")
    (folder.checkpoints / "link").symlink_to(tmp_path)  # removed as a link, its target untouched
    folder.discard_checkpoints()
    assert sorted(p.name for p in folder.root.iterdir()) == ["state.json"]
