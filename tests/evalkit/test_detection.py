"""FROC and CPM on a hand-made example that exercises every rule of LUNA16's matching."""

from __future__ import annotations

import numpy as np
import pytest

from runner.evalkit import Candidate, Lesion, cpm, froc, sensitivity_at

LESIONS = [
    Lesion("A", (0.0, 0.0, 0.0), diameter=10.0),  # radius 5
    Lesion("B", (10.0, 10.0, 10.0), diameter=4.0),  # radius 2
    Lesion("B", (30.0, 30.0, 30.0), diameter=6.0, excluded=True),  # an irrelevant finding
]
CANDIDATES = [
    Candidate("A", (1.0, 0.0, 0.0), 0.9),  # hits A: the lesion's true positive, score 0.9
    Candidate("A", (3.0, 0.0, 0.0), 0.5),  # hits A again: ignored
    Candidate("A", (0.0, 0.0, 5.0), 0.8),  # exactly one radius away: not "within", a false positive
    Candidate("B", (10.0, 10.0, 11.0), 0.4),  # hits B: true positive, score 0.4
    Candidate("B", (0.0, 0.0, 0.0), 0.4),  # false positive tied with B's hit
    Candidate("B", (10.0, 13.0, 10.0), 0.4),  # 3 mm from B (radius 2): false positive, tied too
    Candidate("B", (30.0, 31.0, 30.0), 0.95),  # hits the excluded lesion: ignored
    Candidate("B", (50.0, 50.0, 50.0), 0.1),  # false positive
    Candidate("C", (0.0, 0.0, 0.0), 0.05),  # a scan without lesions: false positive
]


def test_froc_curve_by_hand():
    # 4 scans (one has neither lesions nor candidates); true positives 0.9, 0.4; false positives 0.8, 0.4, 0.4, 0.1,
    # 0.05. Thresholds 0.9 -> (0 FP/scan, 1/2), 0.8 -> (1/4, 1/2), 0.4 -> (3/4, 1), 0.1 -> (1, 1), 0.05 -> (5/4, 1)
    curve = froc(LESIONS, CANDIDATES, n_scans=4)
    np.testing.assert_allclose(curve.fps_per_scan, [0, 0, 0.25, 0.75, 1.0, 1.25])
    np.testing.assert_allclose(curve.sensitivity, [0, 0.5, 0.5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(curve.thresholds, [np.inf, 0.9, 0.8, 0.4, 0.1, 0.05])


def test_cpm_by_hand():
    # at 1/8 and 1/4: 0.5; at 1/2: halfway from (1/4, 0.5) to (3/4, 1) = 0.75; from 1 on: 1
    np.testing.assert_allclose(sensitivity_at(froc(LESIONS, CANDIDATES, n_scans=4)), [0.5, 0.5, 0.75, 1, 1, 1, 1])
    assert cpm(LESIONS, CANDIDATES, n_scans=4) == pytest.approx(5.75 / 7)


def test_missed_lesion_caps_sensitivity():
    only_a = [c for c in CANDIDATES if c.case == "A"]
    curve = froc(LESIONS, only_a, n_scans=2)
    assert curve.sensitivity.max() == 0.5
    assert cpm(LESIONS, only_a, n_scans=2) == pytest.approx(0.5)


def test_no_false_positives():
    perfect = [Candidate("A", (0.0, 0.0, 0.0), 0.7), Candidate("B", (10.0, 10.0, 10.0), 0.6)]
    assert cpm(LESIONS, perfect, n_scans=2) == 1.0


def test_needs_lesions_and_scans():
    with pytest.raises(ValueError, match="lesion"):
        froc([], CANDIDATES, n_scans=3)
    with pytest.raises(ValueError, match="n_scans"):
        froc(LESIONS, CANDIDATES, n_scans=0)
