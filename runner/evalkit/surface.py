"""Surface distances with google-deepmind/surface-distance's definitions, computed faster.

The definitions are DeepMind's (surface_distance/metrics.py):

- Surface points sit at voxel corners: a corner is on the surface when its 2x2(x2) neighbourhood
  holds both foreground and background (the image is padded with background, so a mask touching
  the image border has a surface there).
- Each surface point carries the area (3D, mm^2) or length (2D, mm) of its surfel, looked up by its
  neighbour code in the marching-cubes table (see _tables.py).
- A point's distance is the Euclidean distance (mm, with the voxel spacing) to the nearest surface
  point of the other mask, as a Euclidean distance transform gives it; an empty other mask gives inf.
- Each direction's distances are sorted by (distance, area), as DeepMind sorts them, so percentiles
  pick the same element.

What differs is the cost. DeepMind already crops to the masks' bounding box; on a 512^2 x 300 pair
nearly all its time then goes to two distance transforms over that box (30 million voxels, about
10 s each) and a Python sort of a million tuples. Here: the bounding box comes from two cheap
projections per mask; neighbour codes from three vectorised shift-and-or passes; points lying on
the other surface get 0 without a search; the nearest surface point of each remaining point comes
from a k-d tree over the other surface's points (a million points cost about 1 s) unless, for
that direction, the distance transform over the box is cheaper (a speckled prediction's specks lie
far from the other surface: see _nearest); the
distance is then formed exactly as scipy's transform forms it; sorting is numpy's lexsort. Tests
check every array against a transcription of DeepMind's code; the benchmark
(benchmarks/bench_surface.py) against DeepMind's package itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import ndimage
from scipy.spatial import KDTree

from ._tables import contour_length_table, surface_area_table

FloatArray = NDArray[np.float64]
Box = tuple[slice, ...]
Points = tuple[NDArray[np.intp], ...]
Method = Literal["auto", "edt", "kdtree"]

# A k-d tree's costs, in voxels of the box's distance transform (see _tree_cost): per surface point
# built, per query, per query per voxel of distance to the surface; and the queries it samples.
TREE_BUILD, TREE_QUERY, TREE_FAR = 4, 10, 2.5
TREE_SAMPLE = 1024


@dataclass(frozen=True)
class SurfaceDistances:
    """DeepMind's compute_surface_distances result: per-point distances (mm) and surfel areas, sorted."""

    distances_gt_to_pred: FloatArray
    distances_pred_to_gt: FloatArray
    surfel_areas_gt: FloatArray
    surfel_areas_pred: FloatArray


def compute_surface_distances(
    mask_gt: NDArray[Any], mask_pred: NDArray[Any], spacing_mm: Sequence[float], *, method: Method = "auto"
) -> SurfaceDistances:
    """Distances from every surface point of each mask to the other mask's surface (2D or 3D).

    Masks are read as non-zero = foreground. Spacing is per array axis, in mm. Both masks empty
    gives four empty arrays; one empty gives inf for every point of the other. `method` picks how
    nearest surface points are found (see _nearest); "auto" takes the cheaper for these masks.
    """
    gt, pred, spacing = _validated(mask_gt, mask_pred, spacing_mm)
    box = union_box(gt, pred)
    if box is None:
        empty = np.zeros(0)
        return SurfaceDistances(empty, empty.copy(), empty.copy(), empty.copy())
    codes_gt, codes_pred = neighbour_codes(gt[box]), neighbour_codes(pred[box])
    table = _area_table(spacing)
    surface_gt, surface_pred = _on_surface(codes_gt, len(table) - 1), _on_surface(codes_pred, len(table) - 1)
    points_gt, points_pred = np.nonzero(surface_gt), np.nonzero(surface_pred)
    gt_to_pred = _distances_to_surface(points_gt, points_pred, surface_pred, spacing, method=method)
    pred_to_gt = _distances_to_surface(points_pred, points_gt, surface_gt, spacing, method=method)
    gt_to_pred, areas_gt = _sorted(gt_to_pred, table[codes_gt[points_gt]])
    pred_to_gt, areas_pred = _sorted(pred_to_gt, table[codes_pred[points_pred]])
    return SurfaceDistances(gt_to_pred, pred_to_gt, areas_gt, areas_pred)


def compute_average_surface_distance(distances: SurfaceDistances) -> tuple[float, float]:
    """Area-weighted mean distance (gt to pred, pred to gt); NaN for an empty surface, inf towards one."""
    return (
        _weighted_mean(distances.distances_gt_to_pred, distances.surfel_areas_gt),
        _weighted_mean(distances.distances_pred_to_gt, distances.surfel_areas_pred),
    )


def compute_robust_hausdorff(distances: SurfaceDistances, percent: float) -> float:
    """The larger of the two directed `percent`-th area-weighted percentile distances (100 = Hausdorff).

    An empty surface gives inf, as in DeepMind's code: also when both masks are empty.
    """
    return max(
        _percentile(distances.distances_gt_to_pred, distances.surfel_areas_gt, percent),
        _percentile(distances.distances_pred_to_gt, distances.surfel_areas_pred, percent),
    )


def compute_surface_overlap_at_tolerance(distances: SurfaceDistances, tolerance_mm: float) -> tuple[float, float]:
    """Share of each surface's area within `tolerance_mm` of the other (gt, pred); NaN for an empty surface."""
    return (
        _share_within(distances.distances_gt_to_pred, distances.surfel_areas_gt, tolerance_mm),
        _share_within(distances.distances_pred_to_gt, distances.surfel_areas_pred, tolerance_mm),
    )


def compute_surface_dice_at_tolerance(distances: SurfaceDistances, tolerance_mm: float) -> float:
    """Normalised surface Dice (NSD): area of both surfaces within tolerance over their total area.

    One mask empty gives 0; both empty give NaN (0/0), as DeepMind's.
    """
    near_gt = distances.surfel_areas_gt[distances.distances_gt_to_pred <= tolerance_mm]
    near_pred = distances.surfel_areas_pred[distances.distances_pred_to_gt <= tolerance_mm]
    total = np.sum(distances.surfel_areas_gt) + np.sum(distances.surfel_areas_pred)
    return _ratio(np.sum(near_gt) + np.sum(near_pred), total)


def compute_dice_coefficient(mask_gt: NDArray[Any], mask_pred: NDArray[Any]) -> float:
    """Volumetric Dice 2|A∩B| / (|A| + |B|); NaN when both masks are empty, as DeepMind's."""
    gt, pred = np.asarray(mask_gt, dtype=bool), np.asarray(mask_pred, dtype=bool)
    total = np.count_nonzero(gt) + np.count_nonzero(pred)
    return _ratio(2 * np.count_nonzero(gt & pred), total)


def union_box(gt: NDArray[np.bool_], pred: NDArray[np.bool_]) -> Box | None:
    """Slices of the smallest box holding both masks' foreground, or None when both are empty."""
    boxes = [b for b in (bounding_box(gt), bounding_box(pred)) if b is not None]
    if not boxes:
        return None
    return tuple(slice(min(b[i].start for b in boxes), max(b[i].stop for b in boxes)) for i in range(gt.ndim))


def bounding_box(mask: NDArray[np.bool_]) -> Box | None:
    """Slices of the smallest box holding the mask's foreground, or None when it is empty.

    Projects onto axis 0 first, then works inside that slab only, so a small object in a large
    volume costs about one pass over the data.
    """
    rows = np.flatnonzero(mask.reshape(mask.shape[0], -1).any(axis=1))
    if rows.size == 0:
        return None
    first = slice(int(rows[0]), int(rows[-1]) + 1)
    if mask.ndim == 1:
        return (first,)
    rest = bounding_box(np.asarray(mask[first].any(axis=0)))
    assert rest is not None  # the slab holds foreground
    return (first, *rest)


def neighbour_codes(mask: NDArray[np.bool_]) -> NDArray[np.uint8]:
    """The 2x2(x2) neighbour code of every voxel corner of `mask`, padded with background.

    The result has one more element than `mask` along each axis: corner i lies between voxels
    i - 1 and i. Bits follow DeepMind's kernel: in 3D the voxel at offset (a, b, c) sets bit
    7 - (4a + 2b + c). Built axis by axis: pairing neighbours along the last axis gives 2-bit
    codes, pairing those along the next axis 4-bit codes, and so on, each a shift and an or.
    """
    padded = np.pad(mask.astype(np.uint8), 1)
    codes = padded
    for axis in reversed(range(mask.ndim)):
        bits = mask.ndim - 1 - axis  # bits already packed per element along later axes
        low = [slice(None)] * mask.ndim
        high = [slice(None)] * mask.ndim
        low[axis], high[axis] = slice(None, -1), slice(1, None)
        shifted = np.left_shift(codes[tuple(low)], 1 << bits)
        codes = np.bitwise_or(shifted, codes[tuple(high)], out=shifted)
    return codes


def _validated(
    mask_gt: NDArray[Any], mask_pred: NDArray[Any], spacing_mm: Sequence[float]
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], tuple[float, ...]]:
    gt, pred = np.asarray(mask_gt).astype(bool, copy=False), np.asarray(mask_pred).astype(bool, copy=False)
    spacing = tuple(float(s) for s in spacing_mm)
    if not gt.ndim == pred.ndim == len(spacing) or gt.shape != pred.shape:
        raise ValueError(
            f"The arguments must be of compatible shape: mask_gt {gt.shape}, mask_pred {pred.shape}, "
            f"spacing_mm of {len(spacing)} elements"
        )
    if gt.ndim not in (2, 3):
        raise ValueError(f"Only 2D and 3D masks are supported, not {gt.ndim}D.")
    return gt, pred, spacing


def _area_table(spacing: tuple[float, ...]) -> NDArray[np.float64]:
    if len(spacing) == 3:
        return surface_area_table((spacing[0], spacing[1], spacing[2]))
    return contour_length_table((spacing[0], spacing[1]))


def _on_surface(codes: NDArray[np.uint8], full: int) -> NDArray[np.bool_]:
    """Corners whose neighbourhood mixes foreground and background."""
    return np.asarray((codes != 0) & (codes != full))


def _distances_to_surface(
    points: Points, surface: Points, on_surface: NDArray[np.bool_], spacing: tuple[float, ...], *, method: Method
) -> FloatArray:
    """Distance (mm) from each of `points` to the nearest of `surface` (whose mask is `on_surface`).

    The distance is formed as scipy's distance transform forms it: per-axis index difference times
    spacing, squared, summed in axis order, square root. Points lying on the other surface are 0
    without a search: for a good segmentation that is most of them.
    """
    if points[0].size == 0:
        return np.zeros(0)
    if surface[0].size == 0:
        return np.full(points[0].size, np.inf)
    distances = np.zeros(points[0].size)
    away = np.flatnonzero(~on_surface[points])
    if away.size == 0:
        return distances
    queries = tuple(axis[away] for axis in points)
    nearest = _nearest(queries, surface, on_surface, spacing, method=method)
    squared = np.zeros(away.size)
    for axis, step in enumerate(spacing):
        offset = (nearest[axis] - queries[axis]).astype(np.float64) * step
        squared += offset * offset
    distances[away] = np.sqrt(squared)
    return distances


def _nearest(
    queries: Points, surface: Points, on_surface: NDArray[np.bool_], spacing: tuple[float, ...], *, method: Method
) -> Points:
    """Index of the surface point nearest (in mm) to each query, per axis.

    Both methods find an exact Euclidean nearest point: the distance transform over the box
    (scipy.ndimage.distance_transform_edt with sampling=spacing, DeepMind's choice) or a k-d tree
    over the surface points. "auto" takes whichever `_tree_cost` expects to be cheaper, for each
    direction apart: a speckled prediction makes one direction far (its specks are far from the
    other surface) and the other near. Where two surface points are equally near, the methods may
    pick different ones; the distance then agrees to the last bit or two.
    """
    step = np.asarray(spacing)
    if method != "edt" and (method == "kdtree" or _tree_cost(queries[0].size, surface[0].size) < on_surface.size):
        tree = KDTree(np.column_stack(surface) * step, balanced_tree=False, compact_nodes=False)
        located = np.column_stack(queries) * step
        if method == "kdtree" or _tree_cost(queries[0].size, surface[0].size, tree=tree, located=located,
                                            voxel=float(np.mean(step))) < on_surface.size:
            _, index = tree.query(located)
            return tuple(axis[index] for axis in surface)
    features = ndimage.distance_transform_edt(
        ~on_surface, sampling=spacing, return_distances=False, return_indices=True
    )
    return tuple(features[axis][queries] for axis in range(len(spacing)))


def _tree_cost(queries: int, points: int, *, tree: KDTree | None = None, located: FloatArray | None = None,
               voxel: float = 1.0) -> float:
    """What the k-d tree is expected to cost, in voxels of the box's distance transform (about 0.1 µs
    each, measured on 512^2 x 300 pairs): building it and a query near the surface cost a few voxels
    each, and a query costs more the farther it is from the surface (about 2.5 voxels per voxel of
    distance). Given the tree, the distance is that of evenly spaced sample queries; without it,
    queries count as near (a lower bound that spares building a tree that cannot win).
    """
    cost = TREE_BUILD * points + TREE_QUERY * queries
    if tree is None or located is None or queries == 0:
        return cost
    sample = located[np.linspace(0, queries - 1, min(queries, TREE_SAMPLE)).astype(np.intp)]
    distance, _ = tree.query(sample)
    return cost + TREE_FAR * queries * float(np.mean(distance)) / voxel


def _sorted(distances: FloatArray, areas: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Both arrays ordered by (distance, area): the order of DeepMind's sorted(zip(distances, areas))."""
    order = np.lexsort((areas, distances))
    return distances[order], areas[order]


def _weighted_mean(distances: FloatArray, areas: FloatArray) -> float:
    if distances.size == 0:
        return float("nan")
    return float(np.sum(distances * areas) / np.sum(areas))


def _percentile(distances: FloatArray, areas: FloatArray, percent: float) -> float:
    """DeepMind's percentile: the first sorted distance whose cumulative area share reaches `percent`."""
    if distances.size == 0:
        return float("inf")
    cumulative = np.cumsum(areas) / np.sum(areas)
    index = int(np.searchsorted(cumulative, percent / 100.0))
    return float(distances[min(index, distances.size - 1)])


def _share_within(distances: FloatArray, areas: FloatArray, tolerance_mm: float) -> float:
    return _ratio(np.sum(areas[distances <= tolerance_mm]), np.sum(areas))


def _ratio(numerator: Any, denominator: Any) -> float:
    """numerator / denominator as a float, NaN for 0/0 without numpy's warning."""
    if denominator == 0:
        return float("nan") if numerator == 0 else float("inf")
    return float(numerator / denominator)
