"""Write this challenge's hidden data: DATA_ROOT/lesion-training/<phase>/{training,inputs,ground-truth}.

A Type 3 challenge publishes nothing: training data, test inputs and test labels stay on the runner.
Participants learn the layout from submit.md and from what this script writes, never the data.

Each lesion is ten radiomics features measured on a CT scan (FEATURES, in their own units, so a model
has to scale them). Malignancy is drawn from a logistic rule over five of them (larger, spiculated,
irregular, growing lesions in older patients are more often malignant); the other five carry no
signal. Per phase:

- training/features.npy (n x 10, float32), training/labels.npy (n, uint8: 1 malignant),
  training/features.txt (the column names, one a line);
- inputs/<case>/features.npy (10, float32), one folder per test lesion, named by an anonymous id;
- ground-truth/labels.csv (id,malignant).

retrain's training set is final's plus as many rows again (the organizers' additional secret data),
and it has its own test set. Deterministic: the same seeds write the same bytes. `--sample DIR`
writes the public sample `challenge try` trains and runs on instead, DIR/{training,inputs,ground-truth},
from seeds of its own.

Usage: python make_data.py DATA_ROOT | --sample DIR
"""

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CHALLENGE = "lesion-training"
FEATURES = ("diameter_mm", "volume_ml", "mean_hu", "std_hu", "sphericity", "margin_sharpness", "spiculation",
            "growth_pct_per_year", "age_years", "location_z_mm")
# The rule labels are drawn with: weights on the standardised latent features, and the intercept.
WEIGHTS = {"diameter_mm": 1.6, "spiculation": 1.2, "sphericity": -1.0, "growth_pct_per_year": 1.0, "age_years": 0.5}
INTERCEPT = -0.4


@dataclass(frozen=True)
class Split:
    """One phase's data: training rows (seeds of its parts), test lesions and their seed."""

    phase: str
    training: tuple[tuple[int, int], ...]  # (seed, rows) parts, concatenated
    test: tuple[int, int]  # (seed, lesions)


SPLITS = (
    Split("debugging", training=((11, 120),), test=(12, 40)),
    Split("final", training=((21, 400),), test=(22, 100)),
    Split("retrain", training=((21, 400), (31, 400)), test=(32, 100)),  # final's rows plus 400 more
)
SAMPLE = Split("sample", training=((41, 80),), test=(42, 12))  # the public sample: its own seeds, small


def lesions(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n lesions' features (n x 10, float32, in FEATURES' units) and their malignancy (0/1)."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, len(FEATURES)))
    latent[:, 1] = 0.9 * latent[:, 0] + 0.45 * latent[:, 1]  # volume follows diameter
    named = dict(zip(FEATURES, latent.T))
    logit = INTERCEPT + sum(weight * named[name] for name, weight in WEIGHTS.items())
    labels = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(np.uint8)
    diameter = 12.0 * np.exp(0.35 * named["diameter_mm"])
    features = np.stack([
        diameter,
        np.pi / 6 * (diameter * np.exp(0.1 * named["volume_ml"])) ** 3 / 1000,
        20.0 + 35.0 * named["mean_hu"],
        45.0 + 10.0 * named["std_hu"],
        1 / (1 + np.exp(-(1.0 + 0.8 * named["sphericity"]))),
        3.0 + 1.5 * named["margin_sharpness"],
        np.clip(2.0 + 1.2 * named["spiculation"], 0.0, None),
        15.0 + 12.0 * named["growth_pct_per_year"],
        63.0 + 9.0 * named["age_years"],
        150.0 + 60.0 * named["location_z_mm"],
    ], axis=1)
    return features.astype(np.float32), labels


def write_phase(folder: Path, split: Split) -> tuple[int, int]:
    parts = [lesions(seed, n) for seed, n in split.training]
    training = folder / "training"
    training.mkdir(parents=True, exist_ok=True)
    np.save(training / "features.npy", np.concatenate([features for features, _ in parts]))
    np.save(training / "labels.npy", np.concatenate([labels for _, labels in parts]))
    (training / "features.txt").write_text("".join(f"{name}\n" for name in FEATURES))
    seed, n = split.test
    features, labels = lesions(seed, n)
    ids = [f"lesion-{value:08x}" for value in np.random.default_rng(seed + 1000).choice(16**8, n, replace=False)]
    for case, row in zip(ids, features):
        (folder / "inputs" / case).mkdir(parents=True, exist_ok=True)
        np.save(folder / "inputs" / case / "features.npy", row)
    (folder / "ground-truth").mkdir(parents=True, exist_ok=True)
    with open(folder / "ground-truth" / "labels.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([("id", "malignant"), *zip(ids, labels.tolist())])
    return sum(n for _, n in split.training), n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_root", type=Path, nargs="?")
    parser.add_argument("--sample", type=Path, metavar="DIR", help="write the public sample here instead")
    args = parser.parse_args()
    if args.sample:
        rows, cases = write_phase(args.sample, SAMPLE)
        print(f"sample: {rows} training lesions, {cases} test lesions under {args.sample}")
    elif args.data_root is None:
        parser.error("give DATA_ROOT or --sample DIR")
    else:
        for split in SPLITS:
            rows, cases = write_phase(args.data_root / CHALLENGE / split.phase, split)
            print(f"{split.phase}: {rows} training lesions, {cases} test lesions")


if __name__ == "__main__":
    main()
