"""Write this challenge's hidden data: DATA_ROOT/ellipsoid-segmentation/final-test/{inputs,ground-truth}.

Run on the runner host only; the data never enters the repository. Deterministic for a seed.
Usage: python make_data.py DATA_ROOT [--cases N] [--seed S]
"""

import argparse
from pathlib import Path

import numpy as np

SHAPE = (48, 48, 48)
NOISE = 0.7


def ellipsoids(rng: np.random.Generator) -> np.ndarray:
    grid = np.indices(SHAPE).astype(np.float32)
    mask = np.zeros(SHAPE, dtype=bool)
    for _ in range(rng.integers(1, 4)):
        centre = rng.uniform(12, 36, size=3)
        radii = rng.uniform(4, 10, size=3)
        dist = sum(((grid[i] - centre[i]) / radii[i]) ** 2 for i in range(3))
        mask |= dist <= 1.0
    return mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data_root", type=Path)
    parser.add_argument("--cases", type=int, default=6)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    phase = args.data_root / "ellipsoid-segmentation" / "final-test"
    (phase / "inputs").mkdir(parents=True, exist_ok=True)
    (phase / "ground-truth").mkdir(parents=True, exist_ok=True)
    for case in range(args.cases):
        mask = ellipsoids(rng)
        image = mask.astype(np.float32) + rng.normal(0, NOISE, SHAPE).astype(np.float32)
        np.save(phase / "inputs" / f"case-{case:03d}.npy", image)
        np.save(phase / "ground-truth" / f"case-{case:03d}.npy", mask.astype(np.uint8))
    print(f"wrote {args.cases} cases under {phase}")


if __name__ == "__main__":
    main()
