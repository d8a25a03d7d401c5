"""Baseline: threshold each voxel at 0.5, halfway between background and object means."""

from pathlib import Path

import numpy as np

for path in sorted(Path("/input").glob("*.npy")):
    image = np.load(path, allow_pickle=False)
    np.save(Path("/output") / path.name, (image > 0.5).astype(np.uint8))
