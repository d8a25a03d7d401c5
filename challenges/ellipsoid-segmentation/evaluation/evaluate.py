"""Score /input/case-*.npy masks against the ground truth with Dice and Jaccard.

grand-challenge.org's contract: predictions under /input/, ground truth mounted read-only, metrics
written to /output/metrics.json as {"case": ..., "aggregates": ...}. Any exception's message is
the one line the participant sees, so each check raises with a message they can act on.

The metrics and the file come from the evaluation kit (runner/evalkit, copied into the image as
/opt/evaluation/evalkit by the runner): Dice and Jaccard with FLARE's convention for empty masks
(both empty scores 1), aggregates as mean, std, min, max and median over the cases.
"""

import sys
from pathlib import Path

import numpy as np
from evalkit import dice, iou, write_metrics

PREDICTIONS = Path("/input")
GROUND_TRUTH = Path("/opt/ml/input/data/ground_truth")
OUTPUT = Path("/output/metrics.json")


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


def main() -> None:
    cases = {}
    for truth_path in sorted(GROUND_TRUTH.glob("*.npy")):
        truth = np.load(truth_path, allow_pickle=False).astype(bool)
        pred = load_prediction(truth_path.name, truth.shape)
        cases[truth_path.stem] = {"dice": dice(truth, pred, empty="flare"), "jaccard": iou(truth, pred, empty="flare")}
    if not cases:
        raise RuntimeError("No ground truth found: the runner's data root is misconfigured")
    metrics = write_metrics(cases, OUTPUT)
    print(f"scored {len(cases)} cases: mean Dice {metrics['aggregates']['dice']['mean']:.4f}", file=sys.stdout)


if __name__ == "__main__":
    main()
