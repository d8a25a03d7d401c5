"""Write this challenge's data: DATA_ROOT/lung-cancer-prediction/stage1/{inputs,ground-truth}.

A Type 1 challenge publishes its test scans and keeps their labels: `--public` writes the scans
alone, which is what participants download (in this synthetic edition, what they generate). The
runner host runs it without `--public` and also gets ground-truth/labels.csv (id,cancer).

Each patient is a 16 x 32 x 32 volume (1 mm voxels, float32, [z, y, x]) of noisy lung
parenchyma, with one solid nodule in most patients. The diagnosis is drawn from the nodule's size
(larger nodules are more often malignant) with a second random stream, `--label-seed`, which only
the runner's copy uses: the public scans never determine the labels.

Usage: python make_data.py DATA_ROOT [--patients N] [--seed S] [--label-seed S] [--public]
"""

import argparse
import csv
import math
from pathlib import Path

import numpy as np

CHALLENGE, PHASE = "lung-cancer-prediction", "stage1"
SHAPE = (16, 32, 32)
NOISE = 0.35
NO_NODULE = 0.3  # share of patients whose scan shows no nodule


def malignancy(diameter_mm: float) -> float:
    """P(cancer) given the nodule's diameter: the rule the labels are drawn with (0 mm: no nodule)."""
    if diameter_mm <= 0:
        return 0.05
    return 1 / (1 + math.exp(-0.8 * (diameter_mm - 8.0)))


def scan(rng: np.random.Generator, diameter_mm: float) -> np.ndarray:
    volume = rng.normal(0.0, NOISE, SHAPE).astype(np.float32)
    if diameter_mm > 0:
        radius = diameter_mm / 2
        centre = [rng.uniform(radius + 1, size - radius - 1) for size in SHAPE]
        grid = np.indices(SHAPE, dtype=np.float32)
        distance = np.sqrt(sum((grid[i] - centre[i]) ** 2 for i in range(3)))
        volume += np.clip(radius + 0.5 - distance, 0.0, 1.0).astype(np.float32)  # a solid ball, soft at its edge
    return volume


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_root", type=Path)
    parser.add_argument("--patients", type=int, default=24)
    parser.add_argument("--seed", type=int, default=2017, help="the scans' seed (public)")
    parser.add_argument("--label-seed", type=int, default=71, help="the diagnoses' seed (the runner's alone)")
    parser.add_argument("--public", action="store_true", help="write the scans only, as participants get them")
    args = parser.parse_args()
    rng, label_rng = np.random.default_rng(args.seed), np.random.default_rng(args.label_seed)
    phase = args.data_root / CHALLENGE / PHASE
    (phase / "inputs").mkdir(parents=True, exist_ok=True)
    labels = []
    for _ in range(args.patients):
        patient = f"{rng.integers(2**48):012x}"  # anonymous ids, as the DSB's were
        diameter = 0.0 if rng.uniform() < NO_NODULE else float(rng.uniform(3.0, 13.0))
        np.save(phase / "inputs" / f"{patient}.npy", scan(rng, diameter))
        labels.append((patient, int(label_rng.uniform() < malignancy(diameter))))
    if not args.public:
        (phase / "ground-truth").mkdir(parents=True, exist_ok=True)
        with open(phase / "ground-truth" / "labels.csv", "w", newline="") as handle:
            csv.writer(handle).writerows([("id", "cancer"), *labels])
    print(f"wrote {args.patients} scans under {phase / 'inputs'}" + ("" if args.public else " and their labels"))


if __name__ == "__main__":
    main()
