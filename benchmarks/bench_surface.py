"""Surface metrics of runner.evalkit against DeepMind's surface-distance on a 512 x 512 x 300 volume pair.

Two overlapping ellipsoids with slightly perturbed, different boundaries (about a million surface
points each), anisotropic spacing. Checks HD, HD95, ASSD, NSD and DSC against the reference to
1e-6 and prints both timings and the speed ratio (target: evalkit at least 3x faster). Exits 1 if
any value disagrees, 2 if no reference implementation could be installed.

The reference is installed on first run with pip (`surface-distance` from PyPI, DeepMind's code).
PyPI's 0.1 release predates NumPy 2 and reads np.Inf / np.NaN; the aliases are restored for it
(the GitHub version has the same code with np.inf / np.nan). If it cannot be installed, medpy is
tried: its surfaces sit at voxel centres, not corners, so only DSC is compared and the timing
is indicative only.

Run: .venv/bin/python benchmarks/bench_surface.py [--repeats 3] [--shape 512 512 300]
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
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # scipy.ndimage.filters in the reference
    name, reference = load_reference()
    gt, pred = volume_pair(tuple(args.shape))
    print(f"volume {'x'.join(map(str, args.shape))}, spacing {SPACING} mm, "
          f"{int(gt.sum())} / {int(pred.sum())} foreground voxels; reference {name}")
    ref_time, expected = timed(reference, gt, pred, args.repeats)
    our_time, actual = timed(ours, gt, pred, args.repeats)
    compared = [m for m in METRICS if m in expected]
    wrong = [m for m in compared if not abs(actual[m] - expected[m]) <= ATOL]
    for metric in METRICS:
        print(f"  {metric:5s} evalkit {actual[metric]:.9f}   {name} {expected.get(metric, float('nan')):.9f}"
              f"{'   MISMATCH' if metric in wrong else ''}")
    ratio = ref_time / our_time
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    worst = max(abs(actual[m] - expected[m]) for m in compared)
    agreement = f"{'agree' if not wrong else 'DISAGREE'} (max |difference| {worst:.1e})"
    print(f"RESULT evalkit {our_time:.2f} s, {name} {ref_time:.2f} s, speed-up {ratio:.1f}x ({verdict} the "
          f"{TARGET_RATIO:g}x target); values {agreement} to {ATOL:g} on {', '.join(compared)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
