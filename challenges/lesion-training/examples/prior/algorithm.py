"""A baseline that learns nothing about lesions: training stores the share of malignant lesions, and
predict gives every lesion that probability. Every lesion ties, so its AUC is 0.5 exactly.

`train`: /opt/ml/model/prior.json, {"malignant": share}. `predict`: /output/<case>.json,
{"malignancy": share}, for every /input/<case>/.
"""

import json
import sys
from pathlib import Path

import numpy as np

TRAINING, MODEL = Path("/opt/ml/input/data/training"), Path("/opt/ml/model")
INPUT, OUTPUT = Path("/input"), Path("/output")


def train() -> None:
    share = float(np.load(TRAINING / "labels.npy").mean())
    (MODEL / "prior.json").write_text(json.dumps({"malignant": share}))
    print(f"prior {share:.3f}", file=sys.stderr)


def predict() -> None:
    share = json.loads((MODEL / "prior.json").read_text())["malignant"]
    for case in sorted(p for p in INPUT.iterdir() if p.is_dir()):
        (OUTPUT / f"{case.name}.json").write_text(json.dumps({"malignancy": share}))


if __name__ == "__main__":
    if sys.argv[1:] not in (["train"], ["predict"]):
        sys.exit("usage: algorithm.py train|predict")
    elif sys.argv[1] == "train":
        train()
    else:
        predict()
