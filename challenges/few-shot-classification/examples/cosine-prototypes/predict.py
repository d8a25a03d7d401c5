"""Class means compared by angle: each query image takes the class whose mean support image points
the most the same way (cosine similarity), which ignores contrast altogether.

Contract: /input/<instance>/{support_images.npy, support_labels.npy, query_images.npy}, one folder
per instance given in this run; /output/<instance>.csv with id,label for each query image.
"""

import csv
from pathlib import Path

import numpy as np

INPUT, OUTPUT = Path("/input"), Path("/output")


def unit(rows: np.ndarray) -> np.ndarray:
    rows = rows.reshape(len(rows), -1)
    return rows / (np.linalg.norm(rows, axis=1, keepdims=True) + 1e-6)


def predict(support: np.ndarray, labels: np.ndarray, query: np.ndarray) -> np.ndarray:
    classes = np.unique(labels)
    means = unit(np.stack([unit(support[labels == c]).mean(axis=0) for c in classes]))
    return classes[(unit(query) @ means.T).argmax(axis=1)]


for instance in sorted(p for p in INPUT.iterdir() if p.is_dir()):
    support, labels, query = (np.load(instance / f"{name}.npy", allow_pickle=False)
                              for name in ("support_images", "support_labels", "query_images"))
    with open(OUTPUT / f"{instance.name}.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([("id", "label"), *enumerate(predict(support, labels, query).tolist())])
