"""Surface metrics of runner.evalkit against DeepMind's surface-distance on 512 x 512 x 300 volume pairs.

Three cases, anisotropic spacing:
- smooth: two overlapping ellipsoids with slightly perturbed, different boundaries (about a million
  surface points each);
- speckled: the same pair with 0.5 % of the prediction's voxels flipped at random (seeded) across the
  whole volume, as a noisy network leaves it: specks far from the other surface;
- empty-vs-full: an empty ground truth against a prediction that fills the volume.
Checks HD, HD95, ASSD, NSD and DSC against the reference to 1e-6 (ASSD is left out where exactly
one mask is empty: evalkit documents inf there, where DeepMind's mean of inf and NaN is NaN) and
prints both timings and the speed ratio of each case (target: evalkit at least 3x faster on every
case). Exits 1 if any value disagrees, 2 if no reference implementation could be installed.

The reference is installed on first run with pip (`surface-distance` from PyPI, DeepMind's code).
PyPI's 0.1 release predates NumPy 2 and reads np.Inf / np.NaN; the aliases are restored for it
(the GitHub version has the same code with np.inf / np.nan). If it cannot be installed, medpy is
tried: its surfaces sit at voxel centres, not corners, so only DSC is compared and the timing
is indicative only.

Run: .venv/bin/python benchmarks/bench_surface.py [--repeats 3] [--shape 300 512 512] [--cases smooth ...]
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.evalkit import segmentation_metrics

SPACING = (2.5, 0.8, 0.8)  # slice thickness first: arrays are [z, y, x]
TOLERANCE_MM = 2.0
TARGET_RATIO = 3.0
SPECKLE = 0.005  # share of the prediction's voxels flipped
ATOL = 1e-6
METRICS = ("hd", "hd95", "assd", "nsd", "dsc")
Metrics = Callable[[Any, Any], dict[str, float]]


def ellipsoid(shape: tuple[int, ...], center: tuple[float, ...], radii: tuple[float, ...], wobble: float) -> Any:
    """A filled ellipsoid whose boundary is perturbed by a smooth, separable wave of relative size `wobble`."""
    z, y, x = (np.arange(n, dtype=np.float32) for n in shape)
    dz = ((z - center[0]) / radii[0])[:, None, None]
    dy = ((y - center[1]) / radii[1])[None, :, None]
    dx = ((x - center[2]) / radii[2])[None, None, :]
    level = dz**2 + dy**2 + dx**2
    level -= wobble * np.sin(z / 9.0)[:, None, None] * np.cos(y / 13.0)[None, :, None]
    level -= wobble * np.sin(x / 7.0)[None, None, :]
    return level <= 1.0


def volume_pair(shape: tuple[int, ...]) -> tuple[Any, Any]:
    zc, yc, xc = (n / 2 for n in shape)
    gt = ellipsoid(shape, (zc, yc, xc), (0.38 * shape[0], 0.36 * shape[1], 0.34 * shape[2]), 0.03)
    pred = ellipsoid(shape, (zc + 3, yc - 4, xc + 5), (0.37 * shape[0], 0.37 * shape[1], 0.33 * shape[2]), 0.05)
    return gt, pred


def speckled_pair(shape: tuple[int, ...]) -> tuple[Any, Any]:
    gt, pred = volume_pair(shape)
    return gt, pred ^ (np.random.default_rng(0).random(shape, dtype=np.float32) < SPECKLE)


def empty_vs_full(shape: tuple[int, ...]) -> tuple[Any, Any]:
    return np.zeros(shape, dtype=bool), np.ones(shape, dtype=bool)


CASES: dict[str, Callable[[tuple[int, ...]], tuple[Any, Any]]] = {
    "smooth": volume_pair, "speckled": speckled_pair, "empty-vs-full": empty_vs_full,
}


def load_reference() -> tuple[str, Metrics]:
    """(name, metrics function) of the first reference that imports or installs."""
    candidates = (("surface-distance", "surface_distance", _deepmind), ("medpy", "medpy.metric", _medpy))
    for package, module, make in candidates:
        try:
            return package, make(_import_or_install(package, module))
        except (ImportError, subprocess.CalledProcessError) as exc:
            print(f"reference {package} unavailable: {exc}", file=sys.stderr)
    raise SystemExit(2)


def _import_or_install(package: str, module: str) -> Any:
    if not hasattr(np, "Inf"):  # surface-distance 0.1 on PyPI predates NumPy 2's removal of the aliases
        np.Inf, np.NaN = np.inf, np.nan  # type: ignore[attr-defined]
    try:
        return importlib.import_module(module)
    except ImportError:
        print(f"installing {package} with pip ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", package], check=True)
        importlib.invalidate_caches()
        return importlib.import_module(module)


def _deepmind(sd: Any) -> Metrics:
    def metrics(gt: Any, pred: Any) -> dict[str, float]:
        distances = sd.compute_surface_distances(gt, pred, SPACING)
        gt_to_pred, pred_to_gt = sd.compute_average_surface_distance(distances)
        return {
            "hd": float(sd.compute_robust_hausdorff(distances, 100)),
            "hd95": float(sd.compute_robust_hausdorff(distances, 95)),
            "assd": float((gt_to_pred + pred_to_gt) / 2),
            "nsd": float(sd.compute_surface_dice_at_tolerance(distances, TOLERANCE_MM)),
            "dsc": float(sd.compute_dice_coefficient(gt, pred)),
        }

    return metrics


def _medpy(mm: Any) -> Metrics:
    def metrics(gt: Any, pred: Any) -> dict[str, float]:
        return {
            "hd": float(mm.hd(pred, gt, SPACING)),
            "hd95": float(mm.hd95(pred, gt, SPACING)),
            "assd": float(mm.assd(pred, gt, SPACING)),
            "dsc": float(mm.dc(pred, gt)),
        }

    return metrics


def ours(gt: Any, pred: Any) -> dict[str, float]:
    return segmentation_metrics(gt, pred, SPACING, tolerance_mm=TOLERANCE_MM)


def timed(function: Metrics, gt: Any, pred: Any, repeats: int) -> tuple[float, dict[str, float]]:
    """Best wall time of `repeats` calls (the machine is shared: the minimum is the least disturbed)."""
    best, result = float("inf"), {}
    for _ in range(repeats):
        start = time.perf_counter()
        result = function(gt, pred)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each implementation (best is kept)")
    parser.add_argument("--shape", type=int, nargs=3, default=(300, 512, 512), metavar=("Z", "Y", "X"))
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # scipy.ndimage.filters in the reference
    warnings.filterwarnings("ignore", category=RuntimeWarning)  # the reference's 0/0 on an empty surface
    name, reference = load_reference()
    print(f"volume {'x'.join(map(str, args.shape))}, spacing {SPACING} mm, best of {args.repeats}; reference {name}; "
          "timed: the metrics call on arrays in memory (not reading files)")
    failed = [case for case in args.cases if not compare(case, tuple(args.shape), name, reference, args.repeats)]
    return 1 if failed else 0


def compare(case: str, shape: tuple[int, ...], name: str, reference: Metrics, repeats: int) -> bool:
    """Times both on one case and prints its RESULT line; False when a value disagrees."""
    gt, pred = CASES[case](shape)
    ref_time, expected = timed(reference, gt, pred, repeats)
    our_time, actual = timed(ours, gt, pred, repeats)
    one_empty = (not gt.any()) != (not pred.any())
    compared = [m for m in METRICS if m in expected and not (m == "assd" and one_empty)]
    wrong = [m for m in compared if not _same(actual[m], expected[m])]
    print(f"{case}: {int(gt.sum())} / {int(pred.sum())} foreground voxels")
    for metric in METRICS:
        print(f"  {metric:5s} evalkit {actual[metric]:.9f}   {name} {expected.get(metric, float('nan')):.9f}"
              f"{'   MISMATCH' if metric in wrong else ''}")
    ratio = ref_time / our_time
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    finite = [abs(actual[m] - expected[m]) for m in compared if np.isfinite(expected[m])]
    agreement = f"{'agree' if not wrong else 'DISAGREE'} (max |difference| {max(finite, default=0.0):.1e})"
    print(f"RESULT {case}: evalkit {our_time:.2f} s, {name} {ref_time:.2f} s, speed-up {ratio:.1f}x ({verdict} the "
          f"{TARGET_RATIO:g}x target); values {agreement} to {ATOL:g} on {', '.join(compared)}")
    return not wrong


def _same(actual: float, expected: float) -> bool:
    """Equal to ATOL, or the same non-finite value (inf, -inf or NaN)."""
    if np.isnan(expected) or np.isinf(expected):
        return bool(np.isnan(actual) if np.isnan(expected) else actual == expected)
    return abs(actual - expected) <= ATOL


if __name__ == "__main__":
    sys.exit(main())
