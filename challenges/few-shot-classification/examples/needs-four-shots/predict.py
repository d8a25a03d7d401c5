"""A method that holds out one support image per class to tune itself, so it needs at least four
shots: on a 3-shot task instance it stops with an error, and the runner records the submission as
failed on that instance, with this error as the reason.

Contract: /input/<instance>/{support_images.npy, support_labels.npy, query_images.npy}, one folder
per instance given in this run; /output/<instance>.csv with id,label for each query image.
"""

import csv
from pathlib import Path

import numpy as np

INPUT, OUTPUT = Path("/input"), Path("/output")
MIN_SHOTS = 4


def predict(support: np.ndarray, labels: np.ndarray, query: np.ndarray) -> np.ndarray:
    shots = int(np.bincount(labels).min())
    if shots < MIN_SHOTS:
        raise ValueError(f"needs at least {MIN_SHOTS} support images per class, got {shots}")
    classes = np.unique(labels)
    means = np.stack([support[labels == c].reshape((labels == c).sum(), -1).mean(axis=0) for c in classes])
    distances = ((query.reshape(len(query), -1)[:, None, :] - means[None, :, :]) ** 2).sum(axis=2)
    return classes[distances.argmin(axis=1)]


for instance in sorted(p for p in INPUT.iterdir() if p.is_dir()):
    support, labels, query = (np.load(instance / f"{name}.npy", allow_pickle=False)
                              for name in ("support_images", "support_labels", "query_images"))
    predicted = predict(support, labels, query)
    with open(OUTPUT / f"{instance.name}.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([("id", "label"), *enumerate(predicted.tolist())])
