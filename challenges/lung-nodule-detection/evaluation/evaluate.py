"""Check a self-reported FROC (a LUNA16-style metrics file) and publish it as metrics.json.

A Type 0 challenge cannot recompute a participant's numbers: its data and labels are public, so
participants report their own 10-fold cross-validation. What the organizers can check is the
file's shape, in the evaluation kit's FROC vocabulary (LUNA16's): a sensitivity at each of the
seven false-positive rates of `CPM_FP_RATES`, each between 0 and 1 and never falling as the rate
grows (a FROC curve only rises), the CPM equal to their mean, and the number of folds the
protocol asks for. Each check fails with one line naming the field, which is what the participant
reads.

The file, metrics.json beside the submission (any name ending in .json):

    {"folds": 10, "cpm": 0.812, "sensitivity": {"0.125": 0.66, "0.25": 0.73, "0.5": 0.79,
     "1": 0.84, "2": 0.87, "4": 0.89, "8": 0.91}}
"""

import json
import math
import sys
from pathlib import Path

from evalkit import CPM_FP_RATES, EvaluationError, write_metrics

PREDICTIONS = Path("/input")
PROTOCOL = Path("/opt/ml/input/data/ground_truth/protocol.json")
OUTPUT = Path("/output/metrics.json")
FIELDS = {"folds", "cpm", "sensitivity", "method"}


def metrics_file() -> tuple[str, dict]:
    found = sorted(p for p in PREDICTIONS.iterdir() if p.is_file() and not p.name.startswith("."))
    files = [p for p in found if p.suffix.lower() == ".json"]
    if len(files) != 1:
        names = ", ".join(p.name for p in found) or "nothing"
        raise EvaluationError(f"Expected one JSON metrics file (folds, cpm, sensitivity); the submission holds {names}")
    try:
        report = json.loads(files[0].read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvaluationError(f"{files[0].name} is not valid JSON: {exc}") from None
    if not isinstance(report, dict):
        raise EvaluationError(f"{files[0].name} must hold one JSON object with folds, cpm and sensitivity")
    return files[0].name, report


def number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EvaluationError(f"{where} is {json.dumps(value)}; expected a number")
    return float(value)


def rate_key(text: str, name: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise EvaluationError(f"{name}: sensitivity key {text!r} is not a false-positive rate") from None


def sensitivities(report: dict, name: str) -> list[float]:
    """The sensitivity at each of the seven rates, in rising order of rate, checked."""
    given = report.get("sensitivity")
    if not isinstance(given, dict):
        raise EvaluationError(f"{name}: sensitivity must map each false-positive rate to a sensitivity")
    by_rate = {rate_key(key, name): value for key, value in given.items()}
    wanted = ", ".join(f"{r:g}" for r in CPM_FP_RATES)
    if sorted(by_rate) != sorted(CPM_FP_RATES):
        got = ", ".join(f"{r:g}" for r in sorted(by_rate)) or "none"
        raise EvaluationError(f"{name}: sensitivity must give exactly the rates {wanted} false positives per scan; "
                              f"it gives {got}")
    values = [number(by_rate[r], f"{name}: sensitivity at {r:g}") for r in CPM_FP_RATES]
    for rate, value in zip(CPM_FP_RATES, values):
        if not 0.0 <= value <= 1.0:
            raise EvaluationError(f"{name}: sensitivity at {rate:g} is {value:g}; a sensitivity lies between 0 and 1")
    for (low, a), (high, b) in zip(zip(CPM_FP_RATES, values), zip(CPM_FP_RATES[1:], values[1:])):
        if b < a:
            raise EvaluationError(f"{name}: sensitivity falls from {a:g} at {low:g} to {b:g} at {high:g} false "
                                  "positives per scan; a FROC curve never falls")
    return values


def main() -> None:
    protocol = json.loads(PROTOCOL.read_text())
    name, report = metrics_file()
    unknown = sorted(set(report) - FIELDS)
    if unknown:
        raise EvaluationError(f"{name}: unknown field {unknown[0]!r}; expected folds, cpm, sensitivity (and method)")
    folds = report.get("folds")
    if folds != protocol["folds"]:
        raise EvaluationError(f"{name}: folds is {json.dumps(folds)}; this challenge's protocol is a "
                              f"{protocol['folds']}-fold cross-validation")
    values = sensitivities(report, name)
    mean = sum(values) / len(values)
    cpm = number(report.get("cpm"), f"{name}: cpm")
    if abs(cpm - mean) > protocol["cpm_tolerance"]:
        raise EvaluationError(f"{name}: cpm {cpm:g} is not the mean of the seven sensitivities ({mean:.4f})")
    # sensitivity_fp_1_8 ... sensitivity_fp_8: flat names, one row each on the result page
    keys = {rate: "sensitivity_fp_" + (f"1_{round(1 / rate)}" if rate < 1 else f"{rate:g}") for rate in CPM_FP_RATES}
    write_metrics({}, OUTPUT, extra_aggregates={"cpm": mean, **{keys[r]: v for r, v in zip(CPM_FP_RATES, values)},
                                                "folds": folds})
    print(f"{name}: CPM {mean:.4f} over {folds} folds, shape checked (self-reported)")


if __name__ == "__main__":
    try:
        main()
    except EvaluationError as exc:
        sys.exit(str(exc))  # the message alone is the last stderr line, the one the participant reads
