"""The Type 3 example challenge (lesion-training) end to end on the real engine: its examples' training
images built from the repository, trained on the hidden training lesions through the runner's queue,
their predictions scored by the challenge's evaluation container, and ranked. The runner's own
training bookkeeping (resumes, reuse, the checkpoint cap) is tested in test_training*.py."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from runner.cli.reruns import carry
from runner.evaluation.job import RunnerConfig
from runner.evaluation.queue import run_jobs
from runner.evaluation.reruns import Choice, queue
from runner.evaluation.training import TrainingFolder
from runner.execution.images import tree_hash
from runner.ranking.leaderboard import leaderboard
from runner.tree.records import Keys, logs_path
from runner.tree.result_model import Result
from runner.tree.store import Store
from tests.evaluation.test_challenges_examples import make_data, submit_example

SLUG = "lesion-training"
BUDGET_S = 20  # the final phase's training_time_limit


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return make_data(SLUG, tmp_path_factory.mktemp("type3-data"))


def labels(data_root, phase: str) -> dict[str, int]:
    with open(data_root / SLUG / phase / "ground-truth" / "labels.csv", newline="") as handle:
        return {row["id"]: int(row["malignant"]) for row in csv.DictReader(handle)}


def train_and_score(repo, names: tuple[str, ...], *, engine, base: str, data_root, training_dir,
                    store: Store | None = None) -> dict[str, Result]:
    """The examples submitted as the demo does, run through the runner's queue; their results by example."""
    store = store or Store(repo)
    submissions = {name: store.submission(submit_example(repo, SLUG, name, engine=engine, base=base))
                   for name in names}
    config = RunnerConfig(data_root=data_root, training_dir=training_dir, allow_local_images=True)
    run_jobs(submissions.values(), store=store, executor=engine, config=config, base=base)
    results = {name: store.runner_result(submission) for name, submission in submissions.items()}
    return {name: result for name, result in results.items() if result is not None}


def kept_folder(training_dir, result: Result) -> TrainingFolder:
    """Where the runner keeps a submission's training (as runner/evaluation/job.py names it)."""
    return TrainingFolder(training_dir.joinpath(result.challenge, result.phase, result.participant, result.submission))


@pytest.mark.docker
def test_final_phase_trains_predicts_scores_and_stops_the_slow_one(repo, engine, base_image, data_root, tmp_path):
    training_dir = tmp_path / "training"
    results = train_and_score(repo, ("logistic", "prior", "slow"), engine=engine, base=base_image,
                              data_root=data_root, training_dir=training_dir)
    truth = labels(data_root, "final")

    good = results["logistic"]
    assert good.status == "succeeded", good.error
    assert good.metrics["aggregates"]["auc"] > 0.85
    assert set(good.metrics["case"]) == set(truth)
    trained = good.training
    assert trained is not None and trained.exit_code == 0 and trained.resumes == 0
    assert 0 < trained.wall_time_s < BUDGET_S and trained.peak_memory_bytes > 0
    kept = kept_folder(training_dir, good)  # the runner keeps the model and its hash for the organizers
    assert re.fullmatch(r"[0-9a-f]{64}", trained.model_sha256 or "")
    assert (kept.root / "model.sha256").read_text().strip() == trained.model_sha256 == tree_hash(kept.model)
    assert trained.last_line == "trained 300 epochs on 400 lesions"
    assert good.algorithm is not None and good.algorithm.exit_code == 0  # the predict run

    poor = results["prior"]
    assert poor.status == "succeeded", poor.error
    share = sum(truth.values()) / len(truth)
    assert poor.metrics["aggregates"]["auc"] < 0.65
    assert poor.metrics["aggregates"]["accuracy"] == pytest.approx(max(share, 1 - share))

    slow = results["slow"]
    assert (slow.status, slow.error) == ("failed", f"Training exceeded its time budget of {BUDGET_S} s "
                                                   "(resumes included) and was stopped")
    assert slow.training is not None and slow.training.timed_out and slow.training.model_sha256 is None
    assert slow.training.wall_time_s == pytest.approx(BUDGET_S, abs=3)
    assert slow.algorithm is None  # no model, so nothing predicted
    # it checkpointed as it went: a restarted runner would resume from there
    with np.load(kept_folder(training_dir, slow).checkpoints / "state.npz") as state:
        epoch = int(state["epoch"])
    assert 0 < epoch < 300 and slow.training.last_line == f"checkpoint at epoch {epoch}"  # what carol reads

    store = Store(repo)
    board = leaderboard(store.phase(SLUG, "final"), store.results(SLUG, "final"))
    assert [(r.participant, r.rank) for r in board.rows] == [("alice", 1), ("bob", 2)]
    assert [r.participant for r in board.failed] == ["carol"]

    # The organizers retrain the top 2 on the retrain phase's data (final's lesions and 400 more), as the demo does.
    carried = carry(store, SLUG, source="final", target="retrain", choice=Choice("top", 2))
    config = RunnerConfig(data_root=data_root, training_dir=training_dir, allow_local_images=True)
    run_jobs(queue(store, carried), store=store, executor=engine, config=config, base=base_image)
    retrained = {r.participant: r for r in store.results(SLUG, "retrain")}
    assert sorted(retrained) == ["alice", "bob"] and retrained["alice"].status == "succeeded"
    assert retrained["alice"].metrics["aggregates"]["auc"] > 0.85 > retrained["bob"].metrics["aggregates"]["auc"]
    assert retrained["alice"].training.model_sha256 != trained.model_sha256  # trained anew, on more lesions
    whole = store.local(store.paths.result_file(SLUG, "retrain", "alice", "logistic-v1"))
    assert whole and whole.training and whole.training.last_line == "trained 300 epochs on 800 lesions"


@pytest.mark.docker
def test_debugging_phase_keeps_the_training_log(repo, engine, base_image, data_root, tmp_path):
    store = Store(repo, keys=Keys(github_keys=lambda login: []))  # alice has no SSH key: sealed to organizers
    train_and_score(repo, ("logistic-debug",), engine=engine, base=base_image, data_root=data_root,
                    training_dir=tmp_path / "training", store=store)
    path = store.paths.result_file(SLUG, "debugging", "alice", "logistic-debug")
    public = store.read_result(path)
    assert public.status == "succeeded", public.error
    assert public.metrics["aggregates"]["auc"] > 0.8 and public.logs is None
    assert logs_path(path).is_file()  # the participant's logs, committed sealed
    whole = store.local(path)  # the runner's own copy
    assert whole is not None and whole.logs is not None
    assert "epoch 300/300 loss" in whole.logs["training"]


# --- no engine needed --------------------------------------------------------------------------


def test_hidden_data_is_deterministic_and_retrain_adds_to_final(tmp_path):
    first, second = make_data(SLUG, tmp_path / "first"), make_data(SLUG, tmp_path / "second")
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files and all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    final, retrain = (first / SLUG / phase / "training" for phase in ("final", "retrain"))
    final_x, retrain_x = np.load(final / "features.npy"), np.load(retrain / "features.npy")
    assert retrain_x.shape == (2 * len(final_x), 10)
    assert np.array_equal(retrain_x[:len(final_x)], final_x)  # final's lesions plus as many new ones
    assert np.array_equal(np.load(retrain / "labels.npy")[:len(final_x)], np.load(final / "labels.npy"))
    test_sets = [set(labels(first, phase)) for phase in ("debugging", "final", "retrain")]
    assert all(not a & b for i, a in enumerate(test_sets) for b in test_sets[i + 1:])  # each phase tests anew
