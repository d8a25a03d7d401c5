"""How predictions.csv was made: the training set's prevalence for every patient (the benchmark to beat).

Run on the public test scans (python predict.py SCANS_DIR > predictions.csv).
"""

import sys
from pathlib import Path

PREVALENCE = 0.3

print("id,cancer")
for path in sorted(Path(sys.argv[1]).glob("*.npy")):
    print(f"{path.stem},{PREVALENCE}")
