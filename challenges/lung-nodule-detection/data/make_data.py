"""Write this challenge's runner data: DATA_ROOT/lung-nodule-detection/cross-validation/{inputs,ground-truth}.

A Type 0 challenge hides nothing: the scans and annotations are public (LUNA16 published them as
ten subsets for its 10-fold cross-validation). What the runner keeps is the protocol the
evaluation checks a metrics file against, ground-truth/protocol.json; `inputs/` stays empty, since
no algorithm runs here.

Usage: python make_data.py DATA_ROOT [--folds N]
"""

import argparse
import json
from pathlib import Path

CHALLENGE, PHASE = "lung-nodule-detection", "cross-validation"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_root", type=Path)
    parser.add_argument("--folds", type=int, default=10)
    args = parser.parse_args()
    phase = args.data_root / CHALLENGE / PHASE
    (phase / "inputs").mkdir(parents=True, exist_ok=True)
    (phase / "ground-truth").mkdir(parents=True, exist_ok=True)
    protocol = {"folds": args.folds, "cpm_tolerance": 0.0005}
    (phase / "ground-truth" / "protocol.json").write_text(json.dumps(protocol, indent=2) + "\n")
    print(f"wrote the {args.folds}-fold protocol under {phase}")


if __name__ == "__main__":
    main()
