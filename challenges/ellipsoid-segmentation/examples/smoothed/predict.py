"""Average over each voxel's 5x5x5 neighbourhood before thresholding: noise averages out."""

from pathlib import Path

import numpy as np

RADIUS = 2


def box_mean(image: np.ndarray) -> np.ndarray:
    padded = np.pad(image, RADIUS, mode="edge")
    total = np.zeros_like(image)
    size = image.shape
    span = range(2 * RADIUS + 1)
    for dz in span:
        for dy in span:
            for dx in span:
                total += padded[dz:dz + size[0], dy:dy + size[1], dx:dx + size[2]]
    return total / len(span) ** 3


for path in sorted(Path("/input").glob("*.npy")):
    image = np.load(path, allow_pickle=False)
    np.save(Path("/output") / path.name, (box_mean(image) > 0.5).astype(np.uint8))
