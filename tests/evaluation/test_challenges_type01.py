"""The Type 1 (DSB2017-style) and Type 0 (LUNA16-style) challenges end to end on the real engine:
their examples' files committed, their evaluation containers built from the repository with the
evaluation kit, scored, and ranked."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from runner.evalkit import auroc, log_loss
from runner.pullrequests.review import result_comment
from runner.ranking.leaderboard import leaderboard
from runner.site import pages
from runner.site.build import SiteConfig
from runner.site.pages import ranking_method
from runner.tree.policy import Visibility
from runner.tree.store import Store
from tests.evaluation.test_challenges_examples import make_data, run_example

pytestmark = pytest.mark.docker
DSB, LUNA = "lung-cancer-prediction", "lung-nodule-detection"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("type01-data")
    make_data(DSB, root)
    make_data(LUNA, root)
    return root


def table(path) -> dict[str, str]:
    with open(path, newline="") as handle:
        return {row["id"]: row["cancer"] for row in csv.DictReader(handle)}


def test_dsb_predictions_are_scored_by_log_loss(repo, engine, base_image, data_root):
    truth = {k: int(v) for k, v in table(data_root / DSB / "stage1" / "ground-truth" / "labels.csv").items()}
    results = {name: run_example(repo, DSB, name, engine=engine, base=base_image, data_root=data_root)
               for name in ("nodule-size", "prevalence", "missing-rows")}
    good = results["nodule-size"]
    assert good.status == "succeeded", good.error
    predicted = {k: float(v) for k, v in table(repo / "challenges" / DSB / "examples" / "nodule-size"
                                               / "predictions.csv").items()}
    labels, probs = [truth[k] for k in truth], [predicted[k] for k in truth]
    aggregates = good.metrics["aggregates"]
    assert aggregates["log_loss"]["mean"] == pytest.approx(log_loss(labels, probs), abs=1e-12)
    assert aggregates["auroc"] == pytest.approx(auroc(labels, probs))
    assert set(good.metrics["case"]) == set(truth) and good.algorithm is None
    assert results["prevalence"].metrics["aggregates"]["log_loss"]["mean"] > aggregates["log_loss"]["mean"]
    failed = results["missing-rows"]
    assert failed.status == "failed"
    assert failed.error.startswith("Evaluation failed: Missing predictions for 2 of 24 cases: ")

    store = Store(repo)
    board = leaderboard(store.phase(DSB, "stage1"), store.results(DSB, "stage1"))
    assert [(r.participant, r.rank) for r in board.rows] == [("alice", 1), ("organizers", 2)]
    assert [r.participant for r in board.failed] == ["bob"]


def test_luna_self_reported_metrics_are_checked_not_recomputed(repo, engine, base_image, data_root):
    results = {name: run_example(repo, LUNA, name, engine=engine, base=base_image, data_root=data_root)
               for name in ("cnn-3d", "classic-cad", "wrong-cpm")}
    good = results["cnn-3d"]
    assert good.status == "succeeded", good.error
    aggregates = good.metrics["aggregates"]
    sensitivities = [aggregates[f"sensitivity_fp_{rate}"] for rate in ("1_8", "1_4", "1_2", "1", "2", "4", "8")]
    assert sensitivities == [0.734, 0.804, 0.861, 0.902, 0.931, 0.948, 0.957]
    assert aggregates["cpm"] == pytest.approx(sum(sensitivities) / 7)
    assert aggregates["folds"] == 10
    assert good.details is None or good.details.code_url == "https://github.com/alice/nodule-cnn"
    wrong = results["wrong-cpm"]
    assert (wrong.status, wrong.error) == ("failed", "Evaluation failed: metrics.json: cpm 0.94 is not the mean of "
                                                     "the seven sensitivities (0.8543)")
    store = Store(repo)
    phase = store.phase(LUNA, "cross-validation")
    assert phase.self_reported
    board = leaderboard(phase, store.results(LUNA, "cross-validation"))
    assert [(r.participant, r.rank) for r in board.rows] == [("alice", 1), ("organizers", 2)]
    assert "ordered on CPM alone" in ranking_method(phase)

    # marked self-reported wherever the metrics are shown: leaderboard, result viewer, pull-request comment
    config = SiteConfig.read(repo)
    pages.generate(store, config.stage, config.templates, config.assets)
    board_page = (config.stage / LUNA / "leaderboard" / "cross-validation.md").read_text()
    assert '!!! warning "Self-reported metrics"' in board_page
    assert 'data-self-reported="true"' in (config.stage / LUNA / "results" / "cross-validation" / "view.md").read_text()
    assert "These metrics are self-reported" in result_comment(good, phase, Visibility(True, True))
    assert "self-reported" not in result_comment(good, replace(phase, self_reported=False), Visibility(True, True))
