"""Surface metrics against DeepMind's published values and against a transcription of their algorithm.

Reference values: ../shared/reference/README.md, "Surface metrics" table, which copies
google-deepmind/surface-distance surface_distance_test.py (SurfaceDistance3DTest and
SurfaceDistance2DTest: test_on_2_pixels_2mm_away, test_two_cubes_shifted_by_one_pixel,
test_empty_prediction_mask, test_empty_ground_truth_mask, test_both_empty_masks).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage

from runner.evalkit import (
    compute_average_surface_distance,
    compute_dice_coefficient,
    compute_robust_hausdorff,
    compute_surface_dice_at_tolerance,
    compute_surface_distances,
    compute_surface_overlap_at_tolerance,
    segmentation_metrics,
)
from runner.evalkit._tables import contour_length_table, surface_area_table
from runner.evalkit.surface import SurfaceDistances, bounding_box, neighbour_codes

METHODS = ("edt", "kdtree")


def same(actual: float, expected: float, places: int) -> bool:
    """assertAlmostEqual(places) as DeepMind's tests use it, with NaN equal to NaN and inf to inf."""
    if math.isnan(expected) or math.isinf(expected):
        return math.isnan(actual) if math.isnan(expected) else actual == expected
    return round(abs(actual - expected), places) == 0


def metrics(gt, pred, spacing, method="auto"):
    distances = compute_surface_distances(gt, pred, spacing, method=method)
    return {
        "asd": compute_average_surface_distance(distances),
        "hd": compute_robust_hausdorff(distances, 100),
        "hd95": compute_robust_hausdorff(distances, 95),
        "overlap": compute_surface_overlap_at_tolerance(distances, 1),
        "nsd1": compute_surface_dice_at_tolerance(distances, 1),
        "nsd2": compute_surface_dice_at_tolerance(distances, 2),
        "dsc": compute_dice_coefficient(gt, pred),
    }


def check(result, *, asd, hd, hd95, nsd1, dsc, places):
    assert same(result["asd"][0], asd[0], places) and same(result["asd"][1], asd[1], places), result["asd"]
    assert same(result["hd"], hd, places), result["hd"]
    assert same(result["hd95"], hd95, places), result["hd95"]
    assert same(result["nsd1"], nsd1, places), result["nsd1"]
    assert same(result["dsc"], dsc, places), result["dsc"]


def voxel_pair(shape, gt_at, pred_at):
    gt, pred = np.zeros(shape, bool), np.zeros(shape, bool)
    if gt_at:
        gt[gt_at] = True
    if pred_at:
        pred[pred_at] = True
    return gt, pred


@pytest.mark.parametrize("method", METHODS)
def test_single_voxels_2mm_apart_in_3d(method):
    # README row "3D 128^3, single voxel gt at (50,60,70), pred at (50,60,72), spacing (3,2,1)"
    gt, pred = voxel_pair((128, 128, 128), (50, 60, 70), (50, 60, 72))
    result = metrics(gt, pred, (3, 2, 1), method)
    check(result, asd=(1.5, 1.5), hd=2.0, hd95=2.0, nsd1=0.5, dsc=0.0, places=3)
    assert same(result["nsd2"], 1.0, 3)
    assert result["overlap"] == pytest.approx((0.5, 0.5))


@pytest.mark.parametrize("method", METHODS)
def test_slabs_one_voxel_apart(method):
    # README row "3D 100^3, gt = [0:50] along axis 0, pred = [0:51], spacing (2,1,1)": printed to 4 places
    gt, pred = np.zeros((100, 100, 100), bool), np.zeros((100, 100, 100), bool)
    gt[0:50], pred[0:51] = True, True
    result = metrics(gt, pred, (2, 1, 1), method)
    check(result, asd=(0.3224, 0.3394), hd=2.0, hd95=2.0, nsd1=0.8361, dsc=0.9901, places=4)
    # surface_distance_test.py: surface overlap at 1 mm (0.842, 0.830), to 3 places
    assert same(result["overlap"][0], 0.842, 3) and same(result["overlap"][1], 0.830, 3)


@pytest.mark.parametrize("method", METHODS)
def test_single_pixels_2mm_apart_in_2d(method):
    # README row "2D 128^2, single pixel gt (50,70), pred (50,72), spacing (2,1)"
    gt, pred = voxel_pair((128, 128), (50, 70), (50, 72))
    distances = compute_surface_distances(gt, pred, (2, 1), method=method)
    diag = 0.5 * math.sqrt(2**2 + 1**2)  # surface_distance_test.py: four diagonal contour pieces per pixel
    np.testing.assert_array_equal(distances.surfel_areas_gt, [diag] * 4)
    np.testing.assert_array_equal(distances.distances_gt_to_pred, [1.0, 1.0, 2.0, 2.0])
    np.testing.assert_array_equal(distances.distances_pred_to_gt, [1.0, 1.0, 2.0, 2.0])
    check(metrics(gt, pred, (2, 1), method), asd=(1.5, 1.5), hd=2.0, hd95=2.0, nsd1=0.5, dsc=0.0, places=3)


@pytest.mark.parametrize("shape, spacing", [((128, 128), (3, 2)), ((128, 128, 128), (3, 2, 1))])
def test_empty_prediction(shape, spacing):
    # README row "empty prediction": ASD (inf, NaN), HD inf, NSD 0, DSC 0
    gt, pred = voxel_pair(shape, (50, 60, 70)[: len(shape)], None)
    result = metrics(gt, pred, spacing)
    check(result, asd=(math.inf, math.nan), hd=math.inf, hd95=math.inf, nsd1=0.0, dsc=0.0, places=3)
    assert same(result["overlap"][0], 0.0, 3) and math.isnan(result["overlap"][1])


@pytest.mark.parametrize("shape, spacing", [((128, 128), (3, 2)), ((128, 128, 128), (3, 2, 1))])
def test_empty_ground_truth(shape, spacing):
    # surface_distance_test.py test_empty_ground_truth_mask: the mirror image of the row above
    gt, pred = voxel_pair(shape, None, (50, 60, 72)[: len(shape)])
    check(metrics(gt, pred, spacing), asd=(math.nan, math.inf), hd=math.inf, hd95=math.inf, nsd1=0.0, dsc=0.0, places=3)


@pytest.mark.parametrize("shape, spacing", [((128, 128), (3, 2)), ((128, 128, 128), (3, 2, 1))])
def test_both_empty(shape, spacing):
    # README row "both empty": ASD (NaN, NaN), HD inf, NSD NaN, DSC NaN
    gt, pred = voxel_pair(shape, None, None)
    result = metrics(gt, pred, spacing)
    check(result, asd=(math.nan, math.nan), hd=math.inf, hd95=math.inf, nsd1=math.nan, dsc=math.nan, places=3)
    assert all(math.isnan(v) for v in result["overlap"])


def test_flare_convention_scores_empty_masks():
    # README, FLARE: both masks empty -> DSC = NSD = 1; exactly one empty -> 0
    gt, pred = voxel_pair((16, 16, 16), None, None)
    both = segmentation_metrics(gt, pred, (1, 1, 1), tolerance_mm=2, empty="flare")
    assert (both["dsc"], both["iou"], both["nsd"]) == (1.0, 1.0, 1.0)
    gt[4, 4, 4] = True
    one = segmentation_metrics(gt, pred, (1, 1, 1), tolerance_mm=2, empty="flare")
    assert (one["dsc"], one["iou"], one["nsd"], one["hd"], one["assd"]) == (0.0, 0.0, 0.0, math.inf, math.inf)
    deepmind = segmentation_metrics(gt * False, pred, (1, 1, 1), tolerance_mm=2)
    assert all(math.isnan(deepmind[k]) for k in ("dsc", "iou", "nsd", "assd")) and deepmind["hd"] == math.inf


def test_segmentation_metrics_on_the_slabs():
    gt, pred = np.zeros((100, 100, 100), np.uint8), np.zeros((100, 100, 100), np.uint8)
    gt[0:50], pred[0:51] = 3, 7  # labels: non-zero is foreground
    result = segmentation_metrics(gt, pred, (2, 1, 1), tolerance_mm=1)
    assert result["dsc"] == pytest.approx(100 / 101) and result["iou"] == pytest.approx(50 / 51)
    assert result["nsd"] == pytest.approx(0.8361, abs=5e-5) and result["hd"] == result["hd95"] == 2.0
    assert result["assd"] == pytest.approx((0.3224 + 0.3394) / 2, abs=1e-4)


def test_surfel_tables_equal_deepminds():
    # Sums of DeepMind's create_table_neighbour_code_to_surface_area / _contour_length (lookup_tables.py)
    assert float(surface_area_table((1.0, 1.0, 1.0)).sum()) == 241.34313970553745
    assert float(surface_area_table((3.0, 2.0, 1.0)).sum()) == 950.4895895094023
    assert float(contour_length_table((2.0, 1.0)).sum()) == 19.41640786499874
    assert (surface_area_table((1.0, 1.0, 1.0))[1:255] > 0).all()  # every surface code has an area


def test_neighbour_codes_follow_deepminds_kernel():
    rng = np.random.default_rng(1)
    for shape, kernel in (((5, 6, 7), [[[128, 64], [32, 16]], [[8, 4], [2, 1]]]), ((6, 7), [[8, 4], [2, 1]])):
        mask = rng.random(shape) < 0.5
        padded = np.pad(mask, [(0, 1)] * mask.ndim).astype(np.uint8)
        expected = ndimage.correlate(padded, np.array(kernel), mode="constant", cval=0)
        np.testing.assert_array_equal(neighbour_codes(mask), expected)


def test_bounding_box():
    mask = np.zeros((6, 7, 8), bool)
    assert bounding_box(mask) is None
    mask[1, 5, 2] = mask[3, 2, 6] = True
    assert bounding_box(mask) == (slice(1, 4), slice(2, 6), slice(2, 7))


def deepmind_surface_distances(gt, pred, spacing):
    """A line-by-line transcription of DeepMind's compute_surface_distances (full-volume correlate and EDT)."""
    kernel, full, table = (
        (np.array([[[128, 64], [32, 16]], [[8, 4], [2, 1]]]), 255, surface_area_table(tuple(map(float, spacing))))
        if gt.ndim == 3
        else (np.array([[8, 4], [2, 1]]), 15, contour_length_table(tuple(map(float, spacing))))
    )
    pad = [(0, 1)] * gt.ndim
    codes = [ndimage.correlate(np.pad(m, pad).astype(np.uint8), kernel, mode="constant", cval=0) for m in (gt, pred)]
    borders = [(c != 0) & (c != full) for c in codes]
    maps = [
        ndimage.distance_transform_edt(~b, sampling=spacing) if b.any() else np.full(b.shape, np.inf) for b in borders
    ]
    out = {}
    for name, mine, theirs in (("gt", 0, 1), ("pred", 1, 0)):
        d, a = maps[theirs][borders[mine]], table[codes[mine][borders[mine]]]
        order = np.lexsort((a, d))
        out[name] = (d[order], a[order])
    return SurfaceDistances(out["gt"][0], out["pred"][0], out["gt"][1], out["pred"][1])


@pytest.mark.parametrize("method", METHODS)
def test_random_masks_match_the_transcription(method):
    rng = np.random.default_rng(7)
    for trial in range(60):
        ndim = 2 + trial % 2
        shape = tuple(rng.integers(1, 10, ndim))
        spacing = tuple(rng.uniform(0.3, 3.0, ndim))
        gt, pred = rng.random(shape) < rng.uniform(0, 0.6), rng.random(shape) < rng.uniform(0, 0.6)
        ours = compute_surface_distances(gt, pred, spacing, method=method)
        theirs = deepmind_surface_distances(gt, pred, spacing)
        for field in ("distances_gt_to_pred", "distances_pred_to_gt", "surfel_areas_gt", "surfel_areas_pred"):
            np.testing.assert_allclose(getattr(ours, field), getattr(theirs, field), rtol=1e-12, err_msg=field)


def test_incompatible_or_unsupported_shapes_raise():
    with pytest.raises(ValueError, match="compatible shape"):
        compute_surface_distances(np.zeros((2, 2, 2), bool), np.zeros((2, 2), bool), (1, 1))
    with pytest.raises(ValueError, match="compatible shape"):
        compute_surface_distances(np.zeros((2, 2), bool), np.zeros((2, 2), bool), (1, 1, 1))
    with pytest.raises(ValueError, match="Only 2D and 3D"):
        compute_surface_distances(np.zeros((2,) * 4, bool), np.zeros((2,) * 4, bool), (1,) * 4)


def test_a_speckled_prediction_matches_the_transcription():
    # Specks far from the ground truth make "auto" search one direction by distance transform and the
    # other by k-d tree (the cost model of _nearest); both must give DeepMind's arrays.
    z, y, x = np.ogrid[:30, :48, :48]
    gt = ((z - 15) / 11) ** 2 + ((y - 24) / 17) ** 2 + ((x - 24) / 16) ** 2 <= 1
    pred = np.roll(gt, 2, axis=2) ^ (np.random.default_rng(3).random(gt.shape) < 0.005)
    spacing = (2.5, 0.8, 0.8)
    ours = compute_surface_distances(gt, pred, spacing)
    theirs = deepmind_surface_distances(gt, pred, spacing)
    for field in ("distances_gt_to_pred", "distances_pred_to_gt", "surfel_areas_gt", "surfel_areas_pred"):
        np.testing.assert_allclose(getattr(ours, field), getattr(theirs, field), rtol=1e-12, err_msg=field)
