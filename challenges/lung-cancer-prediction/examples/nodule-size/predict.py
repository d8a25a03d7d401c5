"""How predictions.csv was made: measure the largest nodule, then map its size to a probability.

Run on the public test scans (python predict.py SCANS_DIR > predictions.csv). A 3 x 3 x 3 mean
filter averages the noise out, a threshold keeps nodule voxels, and the nodule's volume gives its
diameter; larger solid nodules are more often malignant (as in the Fleischner guidelines).
"""

import math
import sys
from pathlib import Path

import numpy as np


def box_mean(volume: np.ndarray, radius: int = 1) -> np.ndarray:
    padded = np.pad(volume, radius, mode="edge")
    total = np.zeros_like(volume)
    span = range(2 * radius + 1)
    for dz in span:
        for dy in span:
            for dx in span:
                total += padded[dz:dz + volume.shape[0], dy:dy + volume.shape[1], dx:dx + volume.shape[2]]
    return total / len(span) ** 3


def probability(volume: np.ndarray) -> float:
    voxels = int((box_mean(volume) > 0.5).sum())
    if voxels < 8:  # no nodule worth the name
        return 0.06
    diameter = (6 * voxels / math.pi) ** (1 / 3)
    return min(max(1 / (1 + math.exp(-0.8 * (diameter - 8.0))), 0.03), 0.97)


print("id,cancer")
for path in sorted(Path(sys.argv[1]).glob("*.npy")):
    print(f"{path.stem},{probability(np.load(path, allow_pickle=False)):.4f}")
