"""Write this challenge's runner data: DATA_ROOT/lung-nodule-detection/cross-validation/{inputs,ground-truth}.

A Type 0 challenge hides nothing: the scans and annotations are public (LUNA16 published them as
ten subsets for its 10-fold cross-validation). What the runner keeps is the protocol the
evaluation checks a metrics file against, ground-truth/protocol.json; `inputs/` stays empty, since
no algorithm runs here. `--sample DIR` writes the same two folders straight into DIR, for
`challenge try` to check a metrics file against: the protocol is public, so the sample is it.

Usage: python make_data.py DATA_ROOT [--folds N] | --sample DIR
"""

import argparse
import json
from pathlib import Path

CHALLENGE, PHASE = "lung-nodule-detection", "cross-validation"


def write_protocol(folder: Path, folds: int) -> None:
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    (folder / "ground-truth").mkdir(parents=True, exist_ok=True)
    protocol = {"folds": folds, "cpm_tolerance": 0.0005}
    (folder / "ground-truth" / "protocol.json").write_text(json.dumps(protocol, indent=2) + "\n")
    print(f"wrote the {folds}-fold protocol under {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_root", type=Path, nargs="?")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--sample", type=Path, metavar="DIR", help="write the public sample here instead")
    args = parser.parse_args()
    if args.sample:
        write_protocol(args.sample, args.folds)
    elif args.data_root is None:
        parser.error("give DATA_ROOT or --sample DIR")
    else:
        write_protocol(args.data_root / CHALLENGE / PHASE, args.folds)


if __name__ == "__main__":
    main()
