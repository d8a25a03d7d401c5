"""Classification metrics with scikit-learn's definitions, on numpy alone.

Evaluation images should not need scikit-learn for four formulas; the tests check these against
hand-computed values (and against scikit-learn where it is installed).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import rankdata

LOG_LOSS_EPS = 1e-15


def accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Share of samples whose predicted label equals the true one."""
    truth, pred = _pair(y_true, y_pred)
    return float(np.mean(truth == pred))


def balanced_accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Mean recall over the classes present in y_true (sklearn's balanced_accuracy_score).

    Labels predicted but absent from y_true add no class, as in scikit-learn; this keeps the score
    at 1.0 for a perfect prediction whatever labels a participant invents.
    """
    truth, pred = _pair(y_true, y_pred)
    recalls = [np.mean(pred[truth == label] == label) for label in np.unique(truth)]
    return float(np.mean(recalls))


def auroc(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve for binary labels (1 / True = positive), from ranks.

    The Mann-Whitney form, with tied scores given their average rank, counts each tied
    positive-negative pair as one half: the same value as the trapezoidal area under the ROC curve
    (sklearn's roc_auc_score). Raises ValueError when y_true holds a single class.
    """
    truth, score = _pair(y_true, scores)
    positive = _binary(truth)
    n_pos = int(np.count_nonzero(positive))
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("AUROC needs both classes in y_true; it holds only one")
    ranks = rankdata(score.astype(np.float64), method="average")
    return float((np.sum(ranks[positive]) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def log_loss(y_true: ArrayLike, probabilities: ArrayLike, *, eps: float = LOG_LOSS_EPS) -> float:
    """Mean negative log-likelihood, probabilities clipped to [eps, 1 - eps] (sklearn's log_loss, eps=1e-15).

    Binary: y_true in {0, 1} and a 1-D array of P(class 1). Multiclass: integer labels 0..k-1 and
    an (n, k) array, whose rows are renormalised to sum to 1 after clipping, as scikit-learn does.
    """
    truth = np.asarray(y_true)
    probs = np.clip(np.asarray(probabilities, dtype=np.float64), eps, 1 - eps)
    if probs.ndim == 1:  # clip first, then complete the pair, in scikit-learn's order
        probs = np.column_stack([1 - probs, probs])
        truth = _binary(truth)
    if probs.ndim != 2 or probs.shape[0] != truth.shape[0]:
        raise ValueError(f"probabilities of shape {probs.shape} do not match {truth.shape[0]} labels")
    labels = truth.astype(np.intp)
    if labels.min(initial=0) < 0 or labels.max(initial=0) >= probs.shape[1]:
        raise ValueError(f"labels must lie in 0..{probs.shape[1] - 1}")
    probs /= probs.sum(axis=1, keepdims=True)
    return float(-np.mean(np.log(probs[np.arange(labels.size), labels])))


def _pair(first: ArrayLike, second: ArrayLike) -> tuple[NDArray[Any], NDArray[Any]]:
    a, b = np.asarray(first), np.asarray(second)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"expected two 1-D arrays of equal length, got shapes {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("no samples")
    return a, b


def _binary(labels: NDArray[Any]) -> NDArray[np.bool_]:
    values = set(np.unique(labels).tolist())
    if not values <= {0, 1}:
        raise ValueError(f"binary labels must be 0/1 or False/True, got {sorted(values)[:5]}")
    return labels.astype(bool)
