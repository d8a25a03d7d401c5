"""Write this challenge's hidden data: DATA_ROOT/ellipsoid-segmentation/<phase>/{inputs,ground-truth}.

Two phases: final-test, and new-scanner (the living benchmark's data: as if from another scanner,
noisier and with smaller ellipsoids, from its own seed).
Run on the runner host only; the data never enters the repository. Deterministic for a seed.
`--sample DIR` writes the public sample cases `challenge try` runs on instead: DIR/{inputs,ground-truth},
as final-test's scanner makes them, from a seed of their own, so they reveal nothing hidden.
Usage: python make_data.py DATA_ROOT [--cases N] [--seed S] | --sample DIR
"""

import argparse
from pathlib import Path
from typing import NamedTuple

import numpy as np

SHAPE = (48, 48, 48)


class Scanner(NamedTuple):
    noise: float  # the standard deviation of the Gaussian noise added to the 0/1 volume
    radii: tuple[float, float]  # the range the ellipsoids' radii are drawn from
    seed_offset: int


PHASES = {"final-test": Scanner(0.7, (4, 10), 0), "new-scanner": Scanner(0.85, (3, 8), 1)}
SAMPLE = (3, 7)  # the public sample: (cases, seed)


def ellipsoids(rng: np.random.Generator, radii: tuple[float, float]) -> np.ndarray:
    grid = np.indices(SHAPE).astype(np.float32)
    mask = np.zeros(SHAPE, dtype=bool)
    for _ in range(rng.integers(1, 4)):
        centre = rng.uniform(12, 36, size=3)
        sizes = rng.uniform(*radii, size=3)
        dist = sum(((grid[i] - centre[i]) / sizes[i]) ** 2 for i in range(3))
        mask |= dist <= 1.0
    return mask


def write_phase(folder: Path, scanner: Scanner, *, cases: int, seed: int) -> None:
    rng = np.random.default_rng(seed + scanner.seed_offset)
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    (folder / "ground-truth").mkdir(parents=True, exist_ok=True)
    for case in range(cases):
        mask = ellipsoids(rng, scanner.radii)
        image = mask.astype(np.float32) + rng.normal(0, scanner.noise, SHAPE).astype(np.float32)
        np.save(folder / "inputs" / f"case-{case:03d}.npy", image)
        np.save(folder / "ground-truth" / f"case-{case:03d}.npy", mask.astype(np.uint8))
    print(f"wrote {cases} cases under {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data_root", type=Path, nargs="?")
    parser.add_argument("--cases", type=int, default=6)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--sample", type=Path, metavar="DIR", help="write the public sample cases here instead")
    args = parser.parse_args()
    if args.sample:
        cases, seed = SAMPLE
        write_phase(args.sample, PHASES["final-test"], cases=cases, seed=seed)
    elif args.data_root is None:
        parser.error("give DATA_ROOT or --sample DIR")
    else:
        for phase, scanner in PHASES.items():
            write_phase(args.data_root / "ellipsoid-segmentation" / phase, scanner, cases=args.cases, seed=args.seed)


if __name__ == "__main__":
    main()
