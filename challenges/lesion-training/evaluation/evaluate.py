"""Score predicted malignancy against the hidden labels: AUC ranks, accuracy at 0.5 is shown beside it.

The runner's layout: the predict run's outputs under /input, one <case>.json per test lesion holding
{"malignancy": P(malignant)}; the labels read-only at /opt/ml/input/data/ground_truth/labels.csv
(id,malignant); metrics written to /output/metrics.json. Reading, the id check, the metrics and the
file come from the evaluation kit. Each lesion's own log loss is its per-case value, so the
leaderboard can show how stable the ranking is over lesions.

metrics.json: case.<id>.log_loss; aggregates.log_loss (statistics over lesions), aggregates.auc and
aggregates.accuracy (over all lesions at once).
"""

import json
import sys
from pathlib import Path

from evalkit import EvaluationError, accuracy, auroc, check_keys, log_loss, read_csv, write_metrics

PREDICTIONS = Path("/input")
GROUND_TRUTH = Path("/opt/ml/input/data/ground_truth")
OUTPUT = Path("/output/metrics.json")
EXPECTED = '{"malignancy": <probability>}'


def malignancy(path: Path) -> float:
    """The probability in one lesion's output file, or EvaluationError naming the file."""
    try:
        value = json.loads(path.read_text())["malignancy"]
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise EvaluationError(f"{path.name} is not JSON; expected {EXPECTED}") from None
    except (KeyError, TypeError):
        raise EvaluationError(f"{path.name} has no malignancy; expected {EXPECTED}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise EvaluationError(f"{path.name}: malignancy {value!r} is not a probability between 0 and 1")
    return float(value)


def main() -> None:
    truth = {row["id"]: int(row["malignant"])
             for row in read_csv(GROUND_TRUTH / "labels.csv", required_columns=("id", "malignant"))}
    if not truth:
        raise RuntimeError("No labels found: the runner's data root is misconfigured")
    found = {p.stem: p for p in PREDICTIONS.glob("*.json")}
    check_keys(truth, found, what="predictions")
    predicted = {lesion: malignancy(found[lesion]) for lesion in truth}
    labels, probabilities = list(truth.values()), list(predicted.values())
    cases = {lesion: {"log_loss": log_loss([truth[lesion]], [predicted[lesion]])} for lesion in truth}
    extra = {"auc": auroc(labels, probabilities), "accuracy": accuracy(labels, [int(p >= 0.5) for p in probabilities])}
    write_metrics(cases, OUTPUT, extra_aggregates=extra)
    print(f"scored {len(truth)} lesions: AUC {extra['auc']:.4f}, accuracy {extra['accuracy']:.3f}")


if __name__ == "__main__":
    try:
        main()
    except EvaluationError as exc:
        sys.exit(str(exc))  # the message alone is the last stderr line, the one the participant reads
