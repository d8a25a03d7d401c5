"""Classification metrics against values worked out by hand (and scikit-learn where installed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runner.evalkit import accuracy, auroc, balanced_accuracy, log_loss


def test_accuracy_and_balanced_accuracy():
    truth, pred = [0, 0, 0, 1], [0, 0, 1, 1]
    assert accuracy(truth, pred) == 0.75
    assert balanced_accuracy(truth, pred) == pytest.approx((2 / 3 + 1) / 2)  # recalls 2/3 and 1
    assert balanced_accuracy([0, 0, 1], [0, 2, 1]) == pytest.approx(0.75)  # class 2 is not in y_true


def test_auroc_without_ties():
    # positives 0.35, 0.8 against negatives 0.1, 0.4: 3 of 4 pairs ranked right
    assert auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75


def test_auroc_counts_a_tied_pair_as_half():
    # pairs (pos, neg): (0.5, 0.5) = 1/2, (0.5, 0.2), (0.9, 0.5), (0.9, 0.2) = 1 each -> 3.5 / 4
    assert auroc([0, 1, 0, 1], [0.5, 0.5, 0.2, 0.9]) == 0.875
    assert auroc([True, False], [0.3, 0.3]) == 0.5


def test_auroc_needs_both_classes():
    with pytest.raises(ValueError, match="both classes"):
        auroc([1, 1], [0.2, 0.4])


def test_binary_log_loss():
    assert log_loss([1, 0], [0.8, 0.3]) == pytest.approx(-(math.log(0.8) + math.log(0.7)) / 2, rel=1e-12)
    # a confident wrong answer is clipped at 1e-15, not infinite
    assert log_loss([1], [0.0]) == pytest.approx(-math.log(1e-15), rel=1e-12)


def test_multiclass_log_loss_renormalises_rows():
    probs = [[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]
    assert log_loss([0, 2], probs) == pytest.approx(-(math.log(0.7) + math.log(0.8)) / 2, rel=1e-12)
    assert log_loss([0], [[2.0, 2.0]]) == pytest.approx(math.log(2), rel=1e-12)  # rows scaled to sum to 1


def test_agrees_with_scikit_learn_where_installed():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, 200)
    scores = np.round(rng.random(200), 2)  # rounding makes ties
    pred = (scores > 0.5).astype(int)
    assert auroc(truth, scores) == pytest.approx(metrics.roc_auc_score(truth, scores), rel=1e-12)
    clipped = np.clip(scores, 1e-15, 1 - 1e-15)  # recent scikit-learn clips at machine epsilon instead
    assert log_loss(truth, scores) == pytest.approx(metrics.log_loss(truth, clipped), rel=1e-9)
    assert balanced_accuracy(truth, pred) == pytest.approx(metrics.balanced_accuracy_score(truth, pred))
    assert accuracy(truth, pred) == pytest.approx(metrics.accuracy_score(truth, pred))
