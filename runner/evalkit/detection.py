"""FROC and CPM for lesion detection, as LUNA16 scores nodule candidates (noduleCADEvaluationLUNA16.py).

Hit criterion (LUNA16's): a candidate hits a lesion when the Euclidean distance between the
candidate's position and the lesion's centre, both in mm, is strictly less than the lesion's
radius (diameter / 2). Each lesion hit by one or more candidates is one true positive, scored by
the highest of their scores; the other candidates hitting it are ignored, neither true nor false
positives. A candidate may hit two lesions and then counts for both. Candidates hitting an
excluded lesion (LUNA16's "irrelevant findings") are ignored too. Every other candidate is a false
positive. A missed lesion lowers the sensitivity at every threshold.

The FROC curve has one point per distinct score threshold (the ROC curve's points), false
positives counted per scan over `n_scans`, which includes scans with no lesion and no candidate.
CPM is the mean sensitivity at 1/8, 1/4, 1/2, 1, 2, 4 and 8 false positives per scan, linearly
interpolated along the curve (numpy.interp, flat beyond its ends), as LUNA16 computes it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

CPM_FP_RATES = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True)
class Lesion:
    """A ground-truth lesion: its case, centre (mm, world coordinates) and diameter (mm)."""

    case: str
    center: tuple[float, ...]
    diameter: float
    excluded: bool = False


@dataclass(frozen=True)
class Candidate:
    """A participant's detection: its case, position (mm, same coordinates as the lesions) and score."""

    case: str
    center: tuple[float, ...]
    score: float


@dataclass(frozen=True)
class Froc:
    """The FROC curve: false positives per scan and sensitivity at each threshold, loosest last."""

    fps_per_scan: NDArray[np.float64]
    sensitivity: NDArray[np.float64]
    thresholds: NDArray[np.float64]


def froc(lesions: Iterable[Lesion], candidates: Iterable[Candidate], *, n_scans: int) -> Froc:
    """The FROC curve of `candidates` against `lesions` over `n_scans` scans (see the module docstring)."""
    if n_scans <= 0:
        raise ValueError("n_scans must be positive")
    lesions, candidates = list(lesions), list(candidates)
    n_lesions = sum(not lesion.excluded for lesion in lesions)
    if n_lesions == 0:
        raise ValueError("FROC needs at least one (not excluded) lesion")
    hits, false_positives = _match(lesions, candidates)
    return _curve(np.asarray(hits, dtype=np.float64), np.asarray(false_positives, dtype=np.float64),
                  n_lesions=n_lesions, n_scans=n_scans)


def sensitivity_at(curve: Froc, fp_rates: Sequence[float] = CPM_FP_RATES) -> NDArray[np.float64]:
    """Sensitivity at each false-positive rate, interpolated linearly along the curve."""
    return np.interp(np.asarray(fp_rates, dtype=np.float64), curve.fps_per_scan, curve.sensitivity)


def cpm(
    lesions: Iterable[Lesion],
    candidates: Iterable[Candidate],
    *,
    n_scans: int,
    fp_rates: Sequence[float] = CPM_FP_RATES,
) -> float:
    """Competition performance metric: mean sensitivity at `fp_rates` false positives per scan."""
    return float(np.mean(sensitivity_at(froc(lesions, candidates, n_scans=n_scans), fp_rates)))


def _match(lesions: list[Lesion], candidates: list[Candidate]) -> tuple[list[float], list[float]]:
    """(score of each hit lesion, score of each false-positive candidate), case by case."""
    lesions_by_case: defaultdict[str, list[Lesion]] = defaultdict(list)
    for lesion in lesions:
        lesions_by_case[lesion.case].append(lesion)
    candidates_by_case: defaultdict[str, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        candidates_by_case[candidate.case].append(candidate)
    hits: list[float] = []
    false_positives: list[float] = []
    for case, found in candidates_by_case.items():
        case_hits, case_fps = _match_case(lesions_by_case.get(case, []), found)
        hits += case_hits
        false_positives += case_fps
    return hits, false_positives


def _match_case(lesions: list[Lesion], candidates: list[Candidate]) -> tuple[list[float], list[float]]:
    scores = np.array([c.score for c in candidates], dtype=np.float64)
    if not lesions:
        return [], scores.tolist()
    centers = np.array([lesion.center for lesion in lesions], dtype=np.float64)
    positions = np.array([c.center for c in candidates], dtype=np.float64)
    squared = ((centers[:, None, :] - positions[None, :, :]) ** 2).sum(axis=2)
    radius = np.array([lesion.diameter / 2 for lesion in lesions])
    hit = squared < (radius**2)[:, None]
    included = ~np.array([lesion.excluded for lesion in lesions])
    found = hit.any(axis=1) & included
    tp_scores = np.where(hit[found], scores[None, :], -np.inf).max(axis=1)
    return tp_scores.tolist(), scores[~hit.any(axis=0)].tolist()


def _curve(hits: NDArray[np.float64], false_positives: NDArray[np.float64], *, n_lesions: int, n_scans: int) -> Froc:
    """One point per distinct score, from the strictest threshold (inf: nothing accepted) down."""
    scores = np.concatenate([hits, false_positives])
    is_hit = np.concatenate([np.ones(hits.size), np.zeros(false_positives.size)])
    order = np.argsort(-scores, kind="stable")
    scores, is_hit = scores[order], is_hit[order]
    last_of_threshold = np.flatnonzero(np.diff(scores, append=-np.inf) != 0)
    true_count = np.cumsum(is_hit)[last_of_threshold]
    false_count = (last_of_threshold + 1) - true_count
    return Froc(
        fps_per_scan=np.concatenate([[0.0], false_count / n_scans]),
        sensitivity=np.concatenate([[0.0], true_count / n_lesions]),
        thresholds=np.concatenate([[np.inf], scores[last_of_threshold]]),
    )
