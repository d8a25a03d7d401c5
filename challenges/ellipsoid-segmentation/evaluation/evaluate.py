"""Score /input/case-*.npy masks against the ground truth with Dice and Jaccard.

grand-challenge.org's contract: predictions under /input/, ground truth mounted read-only, metrics
written to /output/metrics.json as {"case": ..., "aggregates": ...}. Any exception's message is
the one line the participant sees, so each check raises with a message they can act on.
"""

import json
import sys
from pathlib import Path

import numpy as np

PREDICTIONS = Path("/input")
GROUND_TRUTH = Path("/opt/ml/input/data/ground_truth")
OUTPUT = Path("/output/metrics.json")


def overlap(pred: np.ndarray, truth: np.ndarray) -> dict:
    inter = float(np.logical_and(pred, truth).sum())
    total = float(pred.sum() + truth.sum())
    union = total - inter
    if total == 0:  # both empty: a perfect answer, as FLARE scores it
        return {"dice": 1.0, "jaccard": 1.0}
    return {"dice": 2 * inter / total, "jaccard": inter / union}


def load_prediction(name: str, shape: tuple) -> np.ndarray:
    path = PREDICTIONS / name
    if not path.is_file():
        found = len(list(PREDICTIONS.glob("case-*.npy")))
        cases = len(list(GROUND_TRUTH.glob("*.npy")))
        raise FileNotFoundError(f"Expected a prediction {name} in /output; found {found} of {cases} cases")
    try:
        pred = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise ValueError(f"{name} is not a numpy array file: {exc}") from None
    if pred.shape != shape:
        raise ValueError(f"{name} has shape {pred.shape}, expected {shape}")
    return pred.astype(bool)


def summary(values: list) -> dict:
    arr = np.asarray(values)
    return {"mean": float(arr.mean()), "std": float(arr.std()), "min": float(arr.min()), "max": float(arr.max())}


def main() -> None:
    cases = {}
    for truth_path in sorted(GROUND_TRUTH.glob("*.npy")):
        truth = np.load(truth_path, allow_pickle=False).astype(bool)
        cases[truth_path.stem] = overlap(load_prediction(truth_path.name, truth.shape), truth)
    if not cases:
        raise RuntimeError("No ground truth found: the runner's data root is misconfigured")
    metrics = {name: summary([c[name] for c in cases.values()]) for name in ("dice", "jaccard")}
    OUTPUT.write_text(json.dumps({"case": cases, "aggregates": metrics}, indent=2))
    print(f"scored {len(cases)} cases: mean Dice {metrics['dice']['mean']:.4f}", file=sys.stdout)


if __name__ == "__main__":
    main()
