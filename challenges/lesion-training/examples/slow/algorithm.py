"""The logistic example (examples/logistic), each epoch made to take EPOCH_SECONDS as a heavy model's would.

300 epochs need a minute: the final phase's 20 s budget stops it. It checkpoints every 10 epochs, so
training started again after the runner stopped resumes where it was, and the time it spent counts.
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

TRAINING, MODEL, CHECKPOINTS = Path("/opt/ml/input/data/training"), Path("/opt/ml/model"), Path("/opt/ml/checkpoints")
INPUT, OUTPUT = Path("/input"), Path("/output")
EPOCHS, CHECKPOINT_EVERY, LEARNING_RATE, L2 = 300, 10, 0.5, 1e-3
EPOCH_SECONDS = 0.2


def save(path: Path, **arrays: np.ndarray) -> None:
    """Write the .npz beside its final name, then rename: a kill mid-write leaves the previous file whole."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as handle:
        np.savez(handle, **arrays)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


def start(features: np.ndarray) -> dict[str, np.ndarray]:
    """The last checkpoint's state, or a fresh one (zero weights, the training set's scaling)."""
    checkpoint = CHECKPOINTS / "state.npz"
    if checkpoint.is_file():
        with np.load(checkpoint) as saved:
            state = dict(saved)
        print(f"resuming from the checkpoint at epoch {int(state['epoch'])}", file=sys.stderr)
        return state
    return {"weights": np.zeros(features.shape[1]), "bias": np.zeros(()), "epoch": np.array(0),
            "mean": features.mean(axis=0), "scale": features.std(axis=0) + 1e-9}


def train() -> None:
    features = np.load(TRAINING / "features.npy").astype(np.float64)
    labels = np.load(TRAINING / "labels.npy").astype(np.float64)
    state = start(features)
    z = (features - state["mean"]) / state["scale"]
    weights, bias = state["weights"], float(state["bias"])
    for epoch in range(int(state["epoch"]), EPOCHS):
        error = sigmoid(z @ weights + bias) - labels
        weights = weights - LEARNING_RATE * (z.T @ error / len(labels) + L2 * weights)
        bias -= LEARNING_RATE * float(error.mean())
        time.sleep(EPOCH_SECONDS)
        if (epoch + 1) % CHECKPOINT_EVERY == 0:
            save(CHECKPOINTS / "state.npz", weights=weights, bias=np.array(bias), epoch=np.array(epoch + 1),
                 mean=state["mean"], scale=state["scale"])
            print(f"checkpoint at epoch {epoch + 1}", file=sys.stderr)
    save(MODEL / "model.npz", weights=weights, bias=np.array(bias), mean=state["mean"], scale=state["scale"])
    print(f"trained {EPOCHS} epochs on {len(labels)} lesions", file=sys.stderr)


def predict() -> None:
    with np.load(MODEL / "model.npz") as model:
        weights, bias, mean, scale = (model[k] for k in ("weights", "bias", "mean", "scale"))
    cases = sorted(p for p in INPUT.iterdir() if p.is_dir())
    for case in cases:
        features = np.load(case / "features.npy").astype(np.float64)
        probability = float(sigmoid((features - mean) / scale @ weights + bias))
        (OUTPUT / f"{case.name}.json").write_text(json.dumps({"malignancy": probability}))
    print(f"predicted {len(cases)} lesions", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:] not in (["train"], ["predict"]):
        sys.exit("usage: algorithm.py train|predict")
    elif sys.argv[1] == "train":
        train()
    else:
        predict()
