"""One nearest neighbour on raw pixels: each query image takes the label of the closest support
image. A common few-shot baseline; noise and contrast hurt it more than class means.

Contract: /input/<instance>/{support_images.npy, support_labels.npy, query_images.npy}, one folder
per instance given in this run; /output/<instance>.csv with id,label for each query image.
"""

import csv
from pathlib import Path

import numpy as np

INPUT, OUTPUT = Path("/input"), Path("/output")


def predict(support: np.ndarray, labels: np.ndarray, query: np.ndarray) -> np.ndarray:
    support, query = support.reshape(len(support), -1), query.reshape(len(query), -1)
    distances = ((query[:, None, :] - support[None, :, :]) ** 2).sum(axis=2)
    return labels[distances.argmin(axis=1)]


for instance in sorted(p for p in INPUT.iterdir() if p.is_dir()):
    support, labels, query = (np.load(instance / f"{name}.npy", allow_pickle=False)
                              for name in ("support_images", "support_labels", "query_images"))
    predicted = predict(support, labels, query)
    with open(OUTPUT / f"{instance.name}.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([("id", "label"), *enumerate(predicted.tolist())])
