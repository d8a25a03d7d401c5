"""Write this challenge's data: DATA_ROOT/lung-cancer-prediction/stage1/{inputs,ground-truth}.

A Type 1 challenge publishes its test scans and keeps their labels: `--public` writes the scans
alone, which is what participants download (in this synthetic edition, what they generate). The
runner host runs it without `--public` and also gets ground-truth/labels.csv (id,cancer).

Each patient is a 16 x 32 x 32 volume (1 mm voxels, float32, [z, y, x]) of noisy lung
parenchyma, with one solid nodule in most patients. The diagnosis is drawn from the nodule's size
(larger nodules are more often malignant) with a second random stream, `--label-seed`, which only
the runner's copy uses: the public scans never determine the labels.

`--sample DIR` writes the public sample `challenge try` scores a predictions file on instead:
DIR/inputs (scans) and DIR/ground-truth/labels.csv, from seeds of their own, so run your method
on DIR/inputs and try the file it writes.

Usage: python make_data.py DATA_ROOT [--patients N] [--seed S] [--label-seed S] [--public] | --sample DIR
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
SAMPLE = (6, 7, 8)  # the public sample: patients, the scans' seed, the diagnoses' seed


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


def write_patients(folder: Path, *, patients: int, seed: int, label_seed: int, truth: bool) -> None:
    """`patients` scans under folder/inputs and, with `truth`, their diagnoses in ground-truth/labels.csv."""
    rng, label_rng = np.random.default_rng(seed), np.random.default_rng(label_seed)
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    labels = []
    for _ in range(patients):
        patient = f"{rng.integers(2**48):012x}"  # anonymous ids, as the DSB's were
        diameter = 0.0 if rng.uniform() < NO_NODULE else float(rng.uniform(3.0, 13.0))
        np.save(folder / "inputs" / f"{patient}.npy", scan(rng, diameter))
        labels.append((patient, int(label_rng.uniform() < malignancy(diameter))))
    if truth:
        (folder / "ground-truth").mkdir(parents=True, exist_ok=True)
        with open(folder / "ground-truth" / "labels.csv", "w", newline="") as handle:
            csv.writer(handle).writerows([("id", "cancer"), *labels])
    print(f"wrote {patients} scans under {folder / 'inputs'}" + (" and their labels" if truth else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_root", type=Path, nargs="?")
    parser.add_argument("--patients", type=int, default=24)
    parser.add_argument("--seed", type=int, default=2017, help="the scans' seed (public)")
    parser.add_argument("--label-seed", type=int, default=71, help="the diagnoses' seed (the runner's alone)")
    parser.add_argument("--public", action="store_true", help="write the scans only, as participants get them")
    parser.add_argument("--sample", type=Path, metavar="DIR", help="write the public sample here instead")
    args = parser.parse_args()
    if args.sample:
        patients, seed, label_seed = SAMPLE
        write_patients(args.sample, patients=patients, seed=seed, label_seed=label_seed, truth=True)
    elif args.data_root is None:
        parser.error("give DATA_ROOT or --sample DIR")
    else:
        write_patients(args.data_root / CHALLENGE / PHASE, patients=args.patients, seed=args.seed,
                       label_seed=args.label_seed, truth=not args.public)


if __name__ == "__main__":
    main()
