"""Trains for EPOCHS one-second epochs, checkpointing after each and resuming from the last one;
`train hog` also fills its checkpoints folder; `predict` thresholds each case at the model's threshold."""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

EPOCHS = 8
DATA, MODEL, CHECKPOINTS = Path("/opt/ml/input/data/training"), Path("/opt/ml/model"), Path("/opt/ml/checkpoints")


def train(hog: bool) -> None:
    state = CHECKPOINTS / "state.json"
    saved = json.loads(state.read_text()) if state.is_file() else {"epoch": 0, "starts": []}
    saved["starts"].append(saved["epoch"])
    print(f"starting at epoch {saved['epoch']}", file=sys.stderr, flush=True)
    rows = sorted(p.name for p in DATA.iterdir())
    for epoch in range(saved["epoch"] + 1, EPOCHS + 1):
        time.sleep(1)
        if hog:
            (CHECKPOINTS / f"hog-{epoch}.bin").write_bytes(b"x" * 4 * 1024**2)
        saved["epoch"] = epoch
        temporary = CHECKPOINTS / "state.json.tmp"
        temporary.write_text(json.dumps(saved))
        os.replace(temporary, state)  # atomic: a kill leaves the old checkpoint or the new one
        print(f"epoch {epoch} done", file=sys.stderr, flush=True)
    (MODEL / "model.json").write_text(json.dumps({"threshold": 0.5, "rows": rows, "starts": saved["starts"]}))
    print(f"trained {EPOCHS} epochs", file=sys.stderr)


def predict() -> None:
    threshold = json.loads((MODEL / "model.json").read_text())["threshold"]
    for path in sorted(Path("/input").glob("*.npy")):
        np.save(Path("/output") / path.name, (np.load(path, allow_pickle=False) > threshold).astype(np.uint8))


def train_deep() -> None:
    """Checkpoint folders nested past the host's PATH_MAX (made one level at a time, as a relative path
    has no such limit), then data written at the bottom: the runner once could not measure it at all."""
    os.chdir(CHECKPOINTS)
    for _ in range(60):
        os.mkdir("d" * 100)
        os.chdir("d" * 100)
    while True:
        with open(f"weights-{time.time_ns()}.bin", "wb") as out:
            out.write(b"x" * 16 * 1024**2)


if sys.argv[1:] == ["train", "deep"]:
    train_deep()
elif sys.argv[1] == "train":
    train(hog=sys.argv[2:] == ["hog"])
else:
    predict()
