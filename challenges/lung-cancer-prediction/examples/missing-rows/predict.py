"""How predictions.csv was made: a first try that stopped early and skipped the last two scans, so
the evaluation refuses the file and names the patients it lacks.

Run on the public test scans (python predict.py SCANS_DIR > predictions.csv).
"""

import sys
from pathlib import Path

print("id,cancer")
for path in sorted(Path(sys.argv[1]).glob("*.npy"))[:-2]:
    print(f"{path.stem},0.5")
