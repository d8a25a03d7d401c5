"""Score few-shot predictions the L2L way: accuracy per task instance, averaged over N per task.

Each task instance (a support set with N images per class and a query set) is a case: its
accuracy on the query set is the per-case metric. A task's accuracy is the mean over N = 3..10 of
the mean accuracy of its instances with N shots, so a task sampled more often at some N is not
weighed towards it; the leaderboard ranks each task on its own and averages the ranks (the phase's
scoring_method_choice: mean, one column per task). Reading, checking and metrics.json come from the
evaluation kit; each refusal is one line naming the instance and the row.

metrics.json: case.<instance>.accuracy; aggregates.accuracy (over all instances, from the kit),
aggregates.task_accuracy.<task> and .mean (over tasks), aggregates.shot_accuracy.<task>.n<N>.
"""

import sys
from collections import defaultdict
from pathlib import Path
from statistics import fmean

from evalkit import EvaluationError, accuracy, check_keys, index_rows, read_csv, write_metrics

PREDICTIONS = Path("/input")
GROUND_TRUTH = Path("/opt/ml/input/data/ground_truth")
OUTPUT = Path("/output/metrics.json")


def labels(path: Path, *, source: str, ids: list[str] | None = None) -> list[int]:
    """The label column of an id,label file, in the order of `ids` (the truth's) when given."""
    rows = index_rows(read_csv(path, required_columns=("id", "label")), key="id", source=source)
    order = ids if ids is not None else list(rows)
    if ids is not None:
        check_keys(ids, rows, what=f"query labels in {source}")
    try:
        return [int(rows[i]["label"]) for i in order]
    except ValueError:
        bad = next(i for i in order if not rows[i]["label"].lstrip("-").isdigit())
        raise EvaluationError(f"{source} id {bad}: label {rows[bad]['label']!r} is not a class number") from None


def main() -> None:
    instances = read_csv(GROUND_TRUTH / "instances.csv", required_columns=("instance", "task", "shots"))
    if not instances:
        raise RuntimeError("No task instances found: the runner's data root is misconfigured")
    names = [row["instance"] for row in instances]
    found = {p.stem for p in PREDICTIONS.glob("*.csv")}
    check_keys(names, found, what="predictions")
    cases, by_task = {}, defaultdict(lambda: defaultdict(list))
    for row in instances:
        name = row["instance"]
        truth_rows = read_csv(GROUND_TRUTH / f"{name}.csv", required_columns=("id", "label"))
        ids = [r["id"] for r in truth_rows]
        truth = [int(r["label"]) for r in truth_rows]
        predicted = labels(PREDICTIONS / f"{name}.csv", source=f"{name}.csv", ids=ids)
        cases[name] = {"accuracy": accuracy(truth, predicted)}
        by_task[row["task"]][int(row["shots"])].append(cases[name]["accuracy"])
    shots = {task: {f"n{n}": fmean(values) for n, values in sorted(per_n.items())} for task, per_n in by_task.items()}
    tasks = {task: fmean(per_n.values()) for task, per_n in shots.items()}
    metrics = write_metrics(cases, OUTPUT, extra_aggregates={
        "task_accuracy": {**tasks, "mean": fmean(tasks.values())}, "shot_accuracy": shots})
    summary = ", ".join(f"{task} {value:.3f}" for task, value in tasks.items())
    print(f"scored {len(cases)} task instances: accuracy per task {summary}; "
          f"mean per instance {metrics['aggregates']['accuracy']['mean']:.3f}")


if __name__ == "__main__":
    try:
        main()
    except EvaluationError as exc:
        sys.exit(str(exc))  # the message alone is the last stderr line, the one the participant reads
