"""Prototypical classification: each class is the mean of its support images, and each query
image takes the class of the nearest mean. Images are standardised first, so contrast differences
between examples do not count. Learns every task instance under /input from its support set alone.

Contract: /input/<instance>/{support_images.npy, support_labels.npy, query_images.npy}, one folder
per instance given in this run; /output/<instance>.csv with id,label for each query image.
"""

import csv
from pathlib import Path

import numpy as np

INPUT, OUTPUT = Path("/input"), Path("/output")


def standardised(images: np.ndarray) -> np.ndarray:
    flat = images.reshape(len(images), -1)
    return (flat - flat.mean(axis=1, keepdims=True)) / (flat.std(axis=1, keepdims=True) + 1e-6)


def predict(support: np.ndarray, labels: np.ndarray, query: np.ndarray) -> np.ndarray:
    classes = np.unique(labels)
    support, query = standardised(support), standardised(query)
    means = np.stack([support[labels == c].mean(axis=0) for c in classes])
    distances = ((query[:, None, :] - means[None, :, :]) ** 2).sum(axis=2)
    return classes[distances.argmin(axis=1)]


for instance in sorted(p for p in INPUT.iterdir() if p.is_dir()):
    support, labels, query = (np.load(instance / f"{name}.npy", allow_pickle=False)
                              for name in ("support_images", "support_labels", "query_images"))
    predicted = predict(support, labels, query)
    with open(OUTPUT / f"{instance.name}.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([("id", "label"), *enumerate(predicted.tolist())])
