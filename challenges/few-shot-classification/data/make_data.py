"""Write this challenge's hidden tasks: DATA_ROOT/few-shot-classification/<phase>/{inputs,ground-truth}.

L2L's protocol, small: each hidden task (a few classes of 8 x 8 images) is sampled into task
instances, one or more for every number of shots N from 3 to 10. An instance is a folder of
inputs/<task>-n<NN>-<i>/ holding a labelled support set (N images per class) and an unlabelled
query set; ground-truth/<instance>.csv holds the query labels (id,label) and
ground-truth/instances.csv which task and N each instance samples. The validation phase's task and
the final phase's tasks are distinct, as L2L's were.

A task's classes are random prototype images; an example is its class's prototype, scaled by a
random contrast and covered in noise. Deterministic for a seed; run on the runner host only.
`--sample DIR` writes the public sample `challenge try` runs on instead, DIR/{inputs,ground-truth}:
every task of both phases at the fewest and the most shots, from a seed of its own.
Usage: python make_data.py DATA_ROOT [--instances K] [--queries Q] [--seed S] | --sample DIR
"""

import argparse
import csv
from pathlib import Path

import numpy as np

CHALLENGE = "few-shot-classification"
SIDE = 8
SHOTS = range(3, 11)
# phase -> task -> (classes, noise, smoothing passes): smooth prototypes look like textures
TASKS = {"validation": {"blobs": (4, 3.0, 2)},
         "final": {"glyphs": (5, 3.0, 0), "textures": (3, 2.0, 3)}}
SAMPLE_SEED, SAMPLE_SHOTS = 7, (3, 10)  # the public sample's own seed, and its numbers of shots


def prototypes(rng: np.random.Generator, classes: int, smoothing: int) -> np.ndarray:
    images = rng.normal(0.0, 1.0, (classes, SIDE, SIDE))
    for _ in range(smoothing):
        for axis in (1, 2):
            images = (np.roll(images, 1, axis) + images + np.roll(images, -1, axis)) / 3
    return images / images.std(axis=(1, 2), keepdims=True)


def examples(rng: np.random.Generator, protos: np.ndarray, noise: float, per_class: int) -> tuple:
    labels = rng.permutation(np.repeat(np.arange(len(protos)), per_class))
    contrast = rng.uniform(0.7, 1.3, (len(labels), 1, 1))
    images = protos[labels] * contrast + rng.normal(0.0, noise, (len(labels), SIDE, SIDE))
    return images.astype(np.float32), labels.astype(np.int64)


def write_instance(folder: Path, truth: Path, support: tuple, query: tuple) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "support_images.npy", support[0])
    np.save(folder / "support_labels.npy", support[1])
    np.save(folder / "query_images.npy", query[0])
    with open(truth, "w", newline="") as handle:
        csv.writer(handle).writerows([("id", "label"), *enumerate(query[1].tolist())])


def write_tasks(folder: Path, tasks: dict, rng: np.random.Generator, *, shots, instances: int, queries: int) -> int:
    """Each task's instances for each N in `shots` under `folder`, and their index; how many."""
    (folder / "ground-truth").mkdir(parents=True, exist_ok=True)
    index = [("instance", "task", "shots")]
    for task, (classes, noise, smoothing) in tasks.items():
        protos = prototypes(rng, classes, smoothing)
        for n in shots:
            for i in range(instances):
                name = f"{task}-n{n:02d}-{i}"
                write_instance(folder / "inputs" / name, folder / "ground-truth" / f"{name}.csv",
                               examples(rng, protos, noise, n), examples(rng, protos, noise, queries))
                index.append((name, task, n))
    with open(folder / "ground-truth" / "instances.csv", "w", newline="") as handle:
        csv.writer(handle).writerows(index)
    return len(index) - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_root", type=Path, nargs="?")
    parser.add_argument("--instances", type=int, default=1, help="task instances per task and N")
    parser.add_argument("--queries", type=int, default=5, help="query images per class")
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--sample", type=Path, metavar="DIR", help="write the public sample here instead")
    args = parser.parse_args()
    if args.sample:
        every = {task: spec for tasks in TASKS.values() for task, spec in tasks.items()}
        count = write_tasks(args.sample, every, np.random.default_rng(SAMPLE_SEED), shots=SAMPLE_SHOTS, instances=1,
                            queries=args.queries)
        print(f"wrote {count} sample task instances under {args.sample}")
    elif args.data_root is None:
        parser.error("give DATA_ROOT or --sample DIR")
    else:
        rng = np.random.default_rng(args.seed)
        for phase, tasks in TASKS.items():
            folder = args.data_root / CHALLENGE / phase
            count = write_tasks(folder, tasks, rng, shots=SHOTS, instances=args.instances, queries=args.queries)
            print(f"wrote {count} task instances under {folder}")


if __name__ == "__main__":
    main()
