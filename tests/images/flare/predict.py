"""Threshold each case found in the input folder into the output folder (FLARE's folders, given as arguments)."""

import sys
from pathlib import Path

import numpy as np

inputs, outputs = Path(sys.argv[1]), Path(sys.argv[2])
cases = sorted(inputs.glob("*.npy"))
for path in cases:
    np.save(outputs / path.name, (np.load(path) > 0.5).astype(np.uint8))
print(f"segmented {len(cases)} cases", file=sys.stderr)
