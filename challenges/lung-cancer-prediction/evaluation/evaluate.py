"""Score a CSV of cancer probabilities (id,cancer) against the hidden diagnoses by log loss.

grand-challenge's contract for a predictions phase: the participant's file under /input/, the
labels read-only under /opt/ml/input/data/ground_truth/, metrics written to /output/metrics.json.
Everything comes from the evaluation kit: reading the CSV with messages that name the line, the
id check, scikit-learn's log loss (probabilities clipped to [1e-15, 1 - 1e-15]) and AUROC. Each
patient's own loss is a per-case value, so their mean is the log loss over all patients and the
leaderboard can bootstrap its ranking over patients.
"""

import sys
from pathlib import Path

from evalkit import (
    EvaluationError,
    accuracy,
    auroc,
    check_keys,
    index_rows,
    log_loss,
    parse_float,
    read_csv,
    write_metrics,
)

PREDICTIONS = Path("/input")
GROUND_TRUTH = Path("/opt/ml/input/data/ground_truth")
OUTPUT = Path("/output/metrics.json")
COLUMNS = ("id", "cancer")


def predictions_file() -> Path:
    found = sorted(p for p in PREDICTIONS.iterdir() if p.is_file() and not p.name.startswith("."))
    tables = [p for p in found if p.suffix.lower() == ".csv"]
    if len(tables) != 1:
        names = ", ".join(p.name for p in found) or "nothing"
        raise EvaluationError(f"Expected one CSV file with columns id,cancer; the submission holds {names}")
    return tables[0]


def probabilities(path: Path, ids: list[str]) -> dict[str, float]:
    rows = index_rows(read_csv(path, required_columns=COLUMNS), key="id", source=path.name)
    check_keys(ids, rows, what="predictions")
    out = {}
    for patient in ids:
        value = parse_float(rows[patient]["cancer"], column="cancer", where=f"{path.name} id {patient}")
        if not 0.0 <= value <= 1.0:
            raise EvaluationError(f"{path.name} id {patient}: cancer {value:g} is not a probability between 0 and 1")
        out[patient] = value
    return out


def main() -> None:
    truth = {row["id"]: int(row["cancer"]) for row in read_csv(GROUND_TRUTH / "labels.csv", required_columns=COLUMNS)}
    if not truth:
        raise RuntimeError("No labels found: the runner's data root is misconfigured")
    predicted = probabilities(predictions_file(), list(truth))
    ids = list(truth)
    labels, probs = [truth[i] for i in ids], [predicted[i] for i in ids]
    cases = {i: {"log_loss": log_loss([truth[i]], [predicted[i]])} for i in ids}
    extra = {"auroc": auroc(labels, probs) if 0 < sum(labels) < len(labels) else None,
             "accuracy": accuracy(labels, [int(p >= 0.5) for p in probs])}
    metrics = write_metrics(cases, OUTPUT, extra_aggregates=extra)
    print(f"scored {len(ids)} patients: log loss {metrics['aggregates']['log_loss']['mean']:.5f} "
          f"(over all at once: {log_loss(labels, probs):.5f})")


if __name__ == "__main__":
    try:
        main()
    except EvaluationError as exc:
        sys.exit(str(exc))  # the message alone is the last stderr line, the one the participant reads
