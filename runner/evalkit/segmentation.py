"""Segmentation metrics for one binary mask pair: DSC, IoU, NSD, HD, HD95 and ASSD in one call.

Empty masks follow DeepMind's surface-distance by default (the reference table in
../shared/reference/README.md): both empty gives DSC = IoU = NSD = NaN and HD = inf; an empty
prediction gives DSC = NSD = 0 and HD = inf. `empty="flare"` applies FLARE's convention instead
(JunMa11/FLARE): both empty scores DSC = IoU = NSD = 1, exactly one empty scores 0. FLARE defines
nothing for distances, so HD, HD95 and ASSD keep DeepMind's values in both conventions.

ASSD here is the mean of DeepMind's two directed average surface distances (gt to pred, pred to
gt), each weighted by surfel area; it is inf when exactly one mask is empty (every distance to an
empty surface is inf) and NaN when both are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from .surface import (
    compute_average_surface_distance,
    compute_robust_hausdorff,
    compute_surface_dice_at_tolerance,
    compute_surface_distances,
    union_box,
)

EmptyConvention = Literal["deepmind", "flare"]


def dice(mask_gt: NDArray[Any], mask_pred: NDArray[Any], *, empty: EmptyConvention = "deepmind") -> float:
    """2|A∩B| / (|A| + |B|); both empty: NaN (deepmind) or 1 (flare)."""
    inter, size_gt, size_pred = _counts(np.asarray(mask_gt, dtype=bool), np.asarray(mask_pred, dtype=bool))
    return _overlap(2 * inter, size_gt + size_pred, empty=empty)


def iou(mask_gt: NDArray[Any], mask_pred: NDArray[Any], *, empty: EmptyConvention = "deepmind") -> float:
    """|A∩B| / |A∪B| (Jaccard); both empty: NaN (deepmind) or 1 (flare)."""
    inter, size_gt, size_pred = _counts(np.asarray(mask_gt, dtype=bool), np.asarray(mask_pred, dtype=bool))
    return _overlap(inter, size_gt + size_pred - inter, empty=empty)


def segmentation_metrics(
    mask_gt: NDArray[Any],
    mask_pred: NDArray[Any],
    spacing_mm: Sequence[float],
    *,
    tolerance_mm: float,
    percent: float = 95.0,
    empty: EmptyConvention = "deepmind",
) -> dict[str, float]:
    """{"dsc", "iou", "nsd", "hd", "hd95", "assd"} for one mask pair (non-zero = foreground).

    `tolerance_mm` is NSD's tolerance (FLARE22 uses 2 to 7 mm per organ); `percent` sets the
    robust Hausdorff's percentile, reported under "hd95" whatever its value. Everything is computed
    inside the masks' joint bounding box, so a small organ in a large scan stays cheap.
    """
    gt, pred = np.asarray(mask_gt).astype(bool, copy=False), np.asarray(mask_pred).astype(bool, copy=False)
    box = union_box(gt, pred) if gt.shape == pred.shape and gt.ndim > 0 else None
    if box is not None:
        gt, pred = gt[box], pred[box]
    inter, size_gt, size_pred = _counts(gt, pred)
    distances = compute_surface_distances(gt, pred, spacing_mm)
    nsd = compute_surface_dice_at_tolerance(distances, tolerance_mm)
    if empty == "flare" and (size_gt == 0 or size_pred == 0):
        nsd = 1.0 if size_gt == size_pred else 0.0
    return {
        "dsc": _overlap(2 * inter, size_gt + size_pred, empty=empty),
        "iou": _overlap(inter, size_gt + size_pred - inter, empty=empty),
        "nsd": nsd,
        "hd": compute_robust_hausdorff(distances, 100),
        "hd95": compute_robust_hausdorff(distances, percent),
        "assd": _assd(compute_average_surface_distance(distances)),
    }


def _counts(gt: NDArray[np.bool_], pred: NDArray[np.bool_]) -> tuple[int, int, int]:
    if gt.shape != pred.shape:
        raise ValueError(f"Masks differ in shape: mask_gt {gt.shape}, mask_pred {pred.shape}")
    return int(np.count_nonzero(gt & pred)), int(np.count_nonzero(gt)), int(np.count_nonzero(pred))


def _overlap(numerator: int, denominator: int, *, empty: EmptyConvention) -> float:
    if denominator == 0:  # both masks empty
        return 1.0 if empty == "flare" else float("nan")
    return numerator / denominator


def _assd(distances_pair: tuple[float, float]) -> float:
    gt_to_pred, pred_to_gt = distances_pair
    if math.isnan(gt_to_pred) and math.isnan(pred_to_gt):
        return float("nan")
    if math.isinf(gt_to_pred) or math.isinf(pred_to_gt):
        return float("inf")
    return (gt_to_pred + pred_to_gt) / 2
