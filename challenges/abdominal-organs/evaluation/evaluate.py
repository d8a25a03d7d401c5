"""Score abdominal organ label maps the FLARE way: DSC and NSD per organ, per case.

grand-challenge's contract: the label maps under /input/ (from the algorithm's per-case runs, or
unpacked from a participant's zip), the ground truth read-only under
/opt/ml/input/data/ground_truth/, metrics to /output/metrics.json. The evaluation kit does the
work: pairing each case with its prediction (a missing, extra or doubled file is refused with one
line naming the case), reading NIfTI with its spacing and checking the grids agree, and DSC and
NSD exactly as DeepMind's surface-distance computes them, with FLARE's rule for empty masks (both
empty scores 1, one empty scores 0). NSD uses FLARE's tolerance per organ.

Per case: <organ>_dsc and <organ>_nsd for liver, kidney, spleen and pancreas, and dsc and nsd,
their means over the four organs: the two segmentation metrics FLARE ranks each case on (running
time and GPU memory are the runner's own measurements, beside the metrics in each result).
"""

import sys
from statistics import fmean

import numpy as np
from evalkit import EvaluationError, load_case, match_cases, segmentation_metrics, write_metrics

PREDICTIONS = "/input"
GROUND_TRUTH = "/opt/ml/input/data/ground_truth"
OUTPUT = "/output/metrics.json"
# FLARE21's labels; NSD tolerances (mm) are FLARE22's for these organs (FLARE21 used 1 mm for all)
ORGANS = {1: ("liver", 5.0), 2: ("kidney", 3.0), 3: ("spleen", 3.0), 4: ("pancreas", 5.0)}


def score(prediction, truth) -> dict[str, float]:
    values = {}
    for label, (organ, tolerance) in ORGANS.items():
        found = segmentation_metrics(truth.array == label, prediction.array == label, truth.spacing,
                                     tolerance_mm=tolerance, empty="flare")
        values[f"{organ}_dsc"], values[f"{organ}_nsd"] = found["dsc"], found["nsd"]
    values["dsc"] = fmean(values[f"{organ}_dsc"] for organ, _ in ORGANS.values())
    values["nsd"] = fmean(values[f"{organ}_nsd"] for organ, _ in ORGANS.values())
    return values


def main() -> None:
    cases = {}
    for case in match_cases(PREDICTIONS, GROUND_TRUTH):
        prediction, truth = load_case(case)
        unknown = sorted(set(np.unique(prediction.array).astype(int).tolist()) - {0, *ORGANS})
        if unknown:
            raise EvaluationError(f"Case {case.name}: label {unknown[0]} is not an organ; use 1 liver, 2 kidney, "
                                  "3 spleen, 4 pancreas (0 elsewhere)")
        cases[case.name] = score(prediction, truth)
    metrics = write_metrics(cases, OUTPUT)
    print(f"scored {len(cases)} cases: mean DSC {metrics['aggregates']['dsc']['mean']:.4f}, "
          f"mean NSD {metrics['aggregates']['nsd']['mean']:.4f}")


if __name__ == "__main__":
    try:
        main()
    except EvaluationError as exc:
        sys.exit(str(exc))  # the message alone is the last stderr line, the one the participant reads
