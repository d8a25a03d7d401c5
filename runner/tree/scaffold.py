"""`challenge new`: a working challenge folder to start from, for each kind of challenge.

What a new organizer otherwise guesses is written out and commented: challenge.yml, two phases (a
parent phase and the phase it opens, so `parent` and `submission_kind` are shown in use), pages
(the phases' rules are generated at the `<!-- phases -->` mark, the data sets at `<!-- data -->`),
an evaluation container on the evaluation kit, a data script that writes the hidden data on the
runner and public sample data for `challenge try`, and a baseline. The task is the same small
synthetic one for every kind (find bright squares in noisy 2D images, scored by Dice), so the new
folder passes `challenge check` and runs in `challenge try` before the organizer changes a line.

Kinds, in grand-challenge's challenge types: `algorithm` (type 2: participants submit a container
the runner runs on hidden data), `predictions` (type 1: they run their method on public test
inputs and submit the outputs), `training` (type 3: the runner trains their container on hidden
training data, then runs it with its model on the hidden test inputs), and `metrics` (type 0: data
and labels are public, participants report their own metrics, which the evaluation checks for shape
only: a `self_reported` phase).
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from runner.errors import ChallengeError
from runner.tree.model import SLUG
from runner.tree.paths import CHALLENGES

NEW_KINDS = ("algorithm", "predictions", "metrics", "training")
MAX_SLUG = 60
SAMPLE = Path("data", "sample")


class ScaffoldError(ChallengeError):
    """A slug that cannot be a new challenge; nothing was written."""


@dataclass(frozen=True)
class Plan:
    """What differs between kinds: the challenge type, the phases and what they take."""

    type: int
    submission: str  # the phases' submission_kind
    submission_type: str  # OpenChallenges' submission_types
    phases: tuple[str, str]  # the parent phase, then the phase it opens


PLANS = {
    "algorithm": Plan(2, "algorithm", "container_image", ("sanity-check", "final-test")),
    "predictions": Plan(1, "predictions", "prediction_file", ("validation", "test")),
    "training": Plan(3, "training", "container_image", ("sanity-check", "final-test")),
    "metrics": Plan(0, "predictions", "prediction_file", ("validation", "test")),
}


def new_challenge(root: Path, slug: str, *, kind: str, today: dt.date) -> list[Path]:
    """Write challenges/<slug>/ for `kind` under the repository `root`, with its sample data; the
    files written. ScaffoldError (one line, nothing written) for a bad slug or an existing folder."""
    folder = root / CHALLENGES / slug
    _refuse(slug, folder, root)
    values = _values(slug, kind, today)
    written = []
    for rel, text in files(kind).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fill(text, values), encoding="utf-8")
        written.append(path)
    written += make_sample(folder, folder / SAMPLE)
    return written


def _refuse(slug: str, folder: Path, root: Path) -> None:
    if not SLUG.fullmatch(slug) or not 3 <= len(slug) <= MAX_SLUG:
        raise ScaffoldError(f"{slug!r} is not a challenge slug: use {3}-{MAX_SLUG} lowercase letters, digits and "
                            "single '-' between them, e.g. liver-segmentation")
    if folder.exists():
        raise ScaffoldError(f"{folder.relative_to(root)} already exists: choose another slug (nothing was written)")


def _values(slug: str, kind: str, today: dt.date) -> dict[str, str]:
    plan = PLANS[kind]
    return {"slug": slug, "name": slug.replace("-", " ").title(), "type": str(plan.type), "kind": kind,
            "submission_kind": plan.submission, "submission_type": plan.submission_type,
            "first": plan.phases[0], "second": plan.phases[1], "first_title": _title(plan.phases[0]),
            "second_title": _title(plan.phases[1]), "limits": LIMITS_BY_KIND.get(plan.submission, ""),
            "training_cases": "20" if kind == "training" else "0",
            "self_reported": SELF_REPORTED if kind == "metrics" else "",
            "start": today.isoformat(), "end": (today + dt.timedelta(days=365)).isoformat()}


def _title(slug: str) -> str:
    return slug.replace("-", " ").capitalize()


def fill(text: str, values: dict[str, str]) -> str:
    """`text` with each `<<name>>` replaced by its value (a token no YAML, Python or Dockerfile uses)."""
    return re.sub(r"<<(\w+)>>", lambda m: values[m.group(1)], text)


def make_sample(folder: Path, target: Path) -> list[Path]:
    """Public sample data (`data/make_data.py --sample`) into `target`/{inputs,ground-truth}."""
    script = folder / "data" / "make_data.py"
    done = subprocess.run([sys.executable, str(script), "--sample", str(target)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise ChallengeError(f"{script}: --sample failed: {tail[0]}")
    return sorted(p for p in target.rglob("*") if p.is_file())


def files(kind: str) -> dict[str, str]:
    """Each file of a new challenge of `kind`, relative to its folder, with `<<...>>` placeholders."""
    plan = PLANS[kind]
    found = {"challenge.yml": CHALLENGE_YML, "index.md": INDEX_MD.replace("<<note>>", NOTES.get(kind, "")),
             f"phases/{plan.phases[0]}.yml": FIRST_PHASE, f"phases/{plan.phases[1]}.yml": SECOND_PHASE,
             "evaluation/Dockerfile": EVALUATION_DOCKERFILE, "evaluation/evaluate.py": EVALUATE_PY,
             "data/make_data.py": MAKE_DATA_PY}
    if plan.submission == "algorithm":
        found |= {"submit.md": SUBMIT_ALGORITHM_MD, "examples/baseline/Dockerfile": BASELINE_DOCKERFILE,
                  "examples/baseline/predict.py": BASELINE_ALGORITHM, "examples/baseline/example.yml": EXAMPLE_YML}
    elif plan.submission == "training":
        found |= {"submit.md": SUBMIT_TRAINING_MD, "examples/baseline/Dockerfile": BASELINE_DOCKERFILE,
                  "examples/baseline/predict.py": BASELINE_TRAINING, "examples/baseline/example.yml": EXAMPLE_YML}
    elif kind == "metrics":
        found |= {"submit.md": SUBMIT_METRICS_MD, "examples/baseline/predict.py": BASELINE_METRICS,
                  "evaluation/evaluate.py": EVALUATE_METRICS_PY}
    else:
        found |= {"submit.md": SUBMIT_PREDICTIONS_MD, "examples/baseline/predict.py": BASELINE_PREDICTIONS}
    return found


# --- the files ------------------------------------------------------------------------------------

CHALLENGE_YML = """\
# The challenge, in OpenChallenges' vocabulary. Every field is explained in the field reference
# (reference.md on the site, or `challenge schema challenge`); `challenge check` validates it.
name: <<name>>
headline: A new challenge; replace this one-line headline
description: >-
  Made by `challenge new`: find the bright squares in small noisy 2D images. Replace this paragraph
  (the catalog shows it) with your task, your data and what participants can win.
start_date: <<start>>
end_date: <<end>>
type: <<type>>                    # grand-challenge's type: 0 metrics, 1 predictions, 2 algorithms, 3 training
submission_types: [<<submission_type>>]
input_data_types: [2D image]
operation: image segmentation
tags: [segmentation, synthetic]
registration: open         # required: participants first add registrations/<login>.yml, you merge it
organizations:
  - name: The <<name>> organizers
    role: challenge_organizer
# The data sets participants download with `challenge data download <<slug>>`, listed on the
# challenge page (at its <!-- data --> mark). One with `terms` publishes no URL here: set
# registration: required, keep its link in a local file and run `challenge data seal <<slug>>`,
# which gives it to each registered participant sealed to their SSH keys.
# data:
#   - name: Training set
#     url: https://example.org/<<slug>>/train.zip
#     size: 120m
#     sha256: <64 hex digits: sha256sum train.zip>
#     license: CC-BY-4.0
"""

LIMITS = """\
inference_mode: batch                  # per-case: one run per case, each timed (FLARE's protocol)
algorithm_time_limit: 120              # seconds the algorithm container may run
algorithm_resources:
  memory: 1g
  cpus: 1
  gpus: 0
"""

TRAINING_LIMITS = """\
training_command: train                # the image's entrypoint gets `train`: data in /opt/ml/input/data/training
algorithm_command: predict             # then `predict`, with its model read-only in /opt/ml/model
training_time_limit: 600               # seconds of training in all, resumes included
training_resources:
  memory: 2g
  cpus: 1
  gpus: 0
  output: 256m                         # the most the model folder may hold
checkpoint_max_size: 1g                # /opt/ml/checkpoints: kept by the runner, to resume after a restart
"""

LIMITS_BY_KIND = {"algorithm": LIMITS, "training": TRAINING_LIMITS + LIMITS}

_SCORING = """\
<<limits>>evaluation_resources:
  time_limit: 120
  memory: 1g
score_title: Dice (mean)
score_jsonpath: aggregates.dice.mean   # a JSONPath into the evaluation's metrics.json
score_error_jsonpath: aggregates.dice.std
score_case_jsonpath: case.*.dice       # per-case values: the ranking's uncertainty on the leaderboard
score_default_sort: desc               # higher is better
score_decimal_places: 3
extra_results_columns:
  - path: aggregates.jaccard.mean
    title: Jaccard (mean)
    exclude_from_ranking: true
"""

SELF_REPORTED = """\
self_reported: true                    # the participants' own metrics: checked for shape, marked on the site
"""

FIRST_PHASE = """\
# A phase, in grand-challenge's Phase options (field reference: reference.md on the site). The
# runner reads its hidden data from <data root>/<<slug>>/<<first>>/{inputs,ground-truth} (and, for
# training phases, the training data from training/ beside them).
title: <<first_title>>
description: A few cases to check your submission end to end before the real test.
submission_kind: <<submission_kind>>   # algorithm or training: a container image; predictions: a file
<<self_reported>>submissions_open_at: <<start>>T00:00:00Z
submissions_close_at: <<end>>          # a date alone closes at the end of that day (UTC)
submissions_limit_per_user_per_period: 5
submission_limit_period: 1             # days
""" + _SCORING

SECOND_PHASE = """\
# The phase that counts. `parent` makes a succeeded result in <<first>> a condition of submitting.
title: <<second_title>>
description: The hidden test set; each participant's best result is ranked.
submission_kind: <<submission_kind>>
<<self_reported>>parent: <<first>>
submissions_open_at: <<start>>T00:00:00Z
submissions_close_at: <<end>>
submissions_limit_per_user_per_period: 3   # in all (no period)
result_display_choice: best
supplementary_file_choice: optional    # a PDF describing the method, linked from the leaderboard
""" + _SCORING

INDEX_MD = """\
# <<name>>

Find the bright squares in small noisy images.

Each case is a `64 × 64` image of `float32` intensities: pixels inside one of a few squares have
mean intensity 1, the background has mean 0, and Gaussian noise covers both. Submissions return one
binary mask per case, scored by the [Dice coefficient](https://en.wikipedia.org/wiki/Dice-S%C3%B8rensen_coefficient)
against the hidden ground truth; the leaderboard ranks on its mean over the cases and shows the
Jaccard index beside it. See [Submitting](submit.md).
<<note>>
<!-- data -->

<!-- phases -->
"""

NOTES = {"training": """
!!! note "Your code is trained here"

    This is a Type 3 challenge: you submit a training container. The runner trains it on hidden
    training data, then runs it with the model it wrote on the hidden test cases, and scores the
    masks. Nobody sees the data: see [Submitting](submit.md) for the contract.
""", "metrics": """
!!! note "Self-reported metrics"

    This is a Type 0 challenge: the images and their labels are public, so participants compute
    their own Dice and Jaccard per case and submit them, with a link to their code. The evaluation
    checks each file's shape only (every case present, values between 0 and 1, Jaccard consistent
    with Dice); the leaderboard marks the results as self-reported.
"""}

SUBMIT_ALGORITHM_MD = """\
# Submitting

Your algorithm is a container image. The runner starts it once over all cases with:

- `/input/case-XXX.npy`: the images (read-only), `float32`, shape `(64, 64)`;
- `/output/`: write one mask per case with the same file name, `uint8` or `bool`, same shape.

The container has no network, a read-only root filesystem (use `/tmp` for scratch), runs as an
unprivileged user, and must finish within the phase's time limit.

## Try it first

`challenge try` runs your image exactly as the runner will (the phase's sandbox and limits, then
the evaluation container) on the public sample cases in `data/sample/`, prints your scores as the
leaderboard would, and writes nothing into the repository:

```bash
docker build -t my-algorithm .
challenge try --phase <<slug>>/<<first>> my-algorithm
```

`examples/baseline/` is a complete submission to start from (a threshold at 0.5).

## Submit

Push the image to a registry, then open a pull request that adds one file,
`challenges/<<slug>>/submissions/<<first>>/<your GitHub login>/<id>.yml`:

```yaml
phase: <<first>>
image: ghcr.io/<you>/<algorithm>@sha256:<64 hex digits>
title: Threshold at 0.5
```

Check the file before you push it: `challenge check-submission --author <your login> --base origin/main`.
"""

SUBMIT_TRAINING_MD = """\
# Submitting

You submit a training container: one image that trains and predicts. The runner starts it twice,
with no network, a read-only root filesystem (use `/tmp` for scratch) and an unprivileged user:

1. **Training**: its entrypoint gets `train`. The hidden training data is in
   `/opt/ml/input/data/training/` (`inputs/case-XXX.npy` images and `ground-truth/case-XXX.npy`
   masks, read-only). Write your model into `/opt/ml/model/` (size-limited). Training has the
   phase's time budget in all: if the runner restarts, `train` runs again with what you left in
   `/opt/ml/checkpoints/`, so save checkpoints there (write, then rename) and resume from them.
2. **Predicting**: its entrypoint gets `predict`, with your model read-only in `/opt/ml/model/`,
   the test images in `/input/` and one mask per case to write to `/output/` (same file name,
   `uint8`, shape `(64, 64)`).

The result shows how long training took, its peak memory and its last line on stderr; in a
debugging phase you also read your full training log.

## Try it first

`challenge try` trains and runs your image exactly as the runner will, on the public sample cases
in `data/sample/` (their own training cases included), and writes nothing into the repository:

```bash
docker build -t my-trainer examples/baseline
challenge try --phase <<slug>>/<<first>> my-trainer
```

## Submit

Push the image to a registry, then open a pull request that adds one file,
`challenges/<<slug>>/submissions/<<first>>/<your GitHub login>/<id>.yml`:

```yaml
phase: <<first>>
image: ghcr.io/<you>/<trainer>@sha256:<64 hex digits>
title: Learned threshold
```

Check the file before you push it: `challenge check-submission --author <your login> --base origin/main`.
"""

SUBMIT_PREDICTIONS_MD = """\
# Submitting

You run your method yourself on the test inputs and submit its outputs: one mask per case, named as
the case (`case-XXX.npy`, `uint8` or `bool`, shape `(64, 64)`), packed in one zip file.

The organizers publish each phase's inputs as a data set (see the challenge page and
`challenge data download <<slug>>`); `data/make_data.py --public DIR` writes them.

## Try it first

`challenge try` scores a predictions file exactly as the runner will, on the public sample cases
in `data/sample/`, prints your scores as the leaderboard would, and writes nothing into the
repository:

```bash
python examples/baseline/predict.py data/sample/inputs predictions.zip
challenge try --phase <<slug>>/<<first>> predictions.zip
```

## Submit

Open a pull request that adds your zip file and, beside it, one file
`challenges/<<slug>>/submissions/<<first>>/<your GitHub login>/<id>.yml` pinning it:

```yaml
phase: <<first>>
predictions:
  file: predictions.zip        # sits next to this file
  sha256: <64 hex digits>      # sha256sum predictions.zip
title: Threshold at 0.5
```

Check it before you push it: `challenge check-submission --author <your login> --base origin/main`.
"""

EVALUATION_DOCKERFILE = """\
# The evaluation container. The runner builds it with BASE set to its Python base image, and adds
# its evaluation kit to the build context as evalkit/ (matching cases, Dice, metrics.json).
ARG BASE=python:3.11-slim
FROM ${BASE}
RUN python3 -c "import numpy, scipy" 2>/dev/null || pip install --no-cache-dir "numpy>=1.24,<3" "scipy>=1.10"
COPY evalkit /opt/evaluation/evalkit
COPY evaluate.py /opt/evaluation/evaluate.py
ENV PYTHONPATH=/opt/evaluation
ENTRYPOINT ["python3", "/opt/evaluation/evaluate.py"]
"""

EVALUATE_PY = '''\
"""Score the masks in /input against the ground truth with Dice and Jaccard.

grand-challenge.org's contract: the submission's outputs under /input/, the ground truth mounted
read-only, metrics written to /output/metrics.json as {"case": ..., "aggregates": ...}. The
evaluation kit's errors are one line naming the case, which is what the participant sees.
"""

import numpy as np
from evalkit import EvaluationError, dice, iou, load_case, match_cases, write_metrics

PREDICTIONS = "/input"
GROUND_TRUTH = "/opt/ml/input/data/ground_truth"
OUTPUT = "/output/metrics.json"


def main() -> None:
    cases = {}
    for case in match_cases(PREDICTIONS, GROUND_TRUTH):
        prediction, truth = load_case(case)
        values = np.unique(prediction.array)
        if not np.isin(values, (0, 1)).all():
            raise EvaluationError(f"Case {case.name}: a mask holds 0 and 1 only, found {values[:5].tolist()}")
        mask, expected = prediction.array > 0, truth.array > 0
        cases[case.name] = {"dice": dice(expected, mask, empty="flare"), "jaccard": iou(expected, mask, empty="flare")}
    metrics = write_metrics(cases, OUTPUT)
    print(f"scored {len(cases)} cases: mean Dice {metrics['aggregates']['dice']['mean']:.4f}")


if __name__ == "__main__":
    main()
'''

MAKE_DATA_PY = '''\
"""Write this challenge's data.

    python make_data.py DATA_ROOT        hidden data: DATA_ROOT/<<slug>>/<phase>/{inputs,ground-truth}
                                         (and training/{inputs,ground-truth} when TRAINING_CASES > 0)
    python make_data.py --sample DIR     public sample cases for `challenge try`: DIR/{inputs,ground-truth}
    python make_data.py --public DIR     each phase's inputs alone (what a predictions challenge publishes)

Run the first on the runner host only: hidden data never enters the repository. Each case is a
64 x 64 float32 image holding a few bright squares under Gaussian noise; its ground truth is the
squares' mask (uint8). Deterministic for a seed; the sample has its own seed, so it reveals nothing
hidden. Replace this with your own data: the runner only needs the two folders per phase.
"""

import argparse
from pathlib import Path

import numpy as np

CHALLENGE = "<<slug>>"
PHASES = {"<<first>>": (3, 101), "<<second>>": (10, 202)}  # phase: (cases, seed)
SAMPLE = (3, 7)
TRAINING_CASES = <<training_cases>>  # training phases: labelled cases the runner trains on, never published
SHAPE = (64, 64)
NOISE = 0.3


def case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    mask = np.zeros(SHAPE, dtype=bool)
    for _ in range(rng.integers(1, 4)):
        y, x = rng.integers(4, 44, size=2)
        height, width = rng.integers(6, 16, size=2)
        mask[y:y + height, x:x + width] = True
    image = mask.astype(np.float32) + rng.normal(0, NOISE, SHAPE).astype(np.float32)
    return image, mask.astype(np.uint8)


def write(folder: Path, cases: int, seed: int, *, truth: bool = True) -> None:
    if truth and TRAINING_CASES:
        write_cases(folder / "training", TRAINING_CASES, seed + 1, truth=True)
    write_cases(folder, cases, seed, truth=truth)


def write_cases(folder: Path, cases: int, seed: int, *, truth: bool) -> None:
    rng = np.random.default_rng(seed)
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    if truth:
        (folder / "ground-truth").mkdir(parents=True, exist_ok=True)
    for index in range(cases):
        image, mask = case(rng)
        np.save(folder / "inputs" / f"case-{index:03d}.npy", image)
        if truth:
            np.save(folder / "ground-truth" / f"case-{index:03d}.npy", mask)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_root", type=Path, nargs="?", help="the runner's hidden data root")
    parser.add_argument("--sample", type=Path, metavar="DIR", help="write the public sample cases here instead")
    parser.add_argument("--public", type=Path, metavar="DIR", help="write each phase's inputs alone here instead")
    args = parser.parse_args()
    if args.sample:
        write(args.sample, *SAMPLE)
        print(f"wrote {SAMPLE[0]} sample cases under {args.sample}")
    elif args.public:
        for phase, (cases, seed) in PHASES.items():
            write(args.public / CHALLENGE / phase, cases, seed, truth=False)
        print(f"wrote the inputs of {len(PHASES)} phases under {args.public / CHALLENGE}")
    elif args.data_root:
        for phase, (cases, seed) in PHASES.items():
            write(args.data_root / CHALLENGE / phase, cases, seed)
        print(f"wrote {len(PHASES)} phases of hidden data under {args.data_root / CHALLENGE}")
    else:
        parser.error("give DATA_ROOT, --sample DIR or --public DIR")


if __name__ == "__main__":
    main()
'''

BASELINE_DOCKERFILE = """\
ARG BASE=python:3.11-slim
FROM ${BASE}
RUN python3 -c "import numpy" 2>/dev/null || pip install --no-cache-dir "numpy>=1.24,<3"
COPY predict.py /opt/algorithm/predict.py
ENTRYPOINT ["python3", "/opt/algorithm/predict.py"]
"""

BASELINE_ALGORITHM = '''\
"""Baseline: threshold each pixel at 0.5, halfway between the background's and the squares' means."""

from pathlib import Path

import numpy as np

for path in sorted(Path("/input").glob("*.npy")):
    image = np.load(path, allow_pickle=False)
    np.save(Path("/output") / path.name, (image > 0.5).astype(np.uint8))
'''

BASELINE_TRAINING = '''\
"""Baseline: learn the threshold halfway between the squares' and the background's mean intensity.

    train     reads /opt/ml/input/data/training/{inputs,ground-truth}, writes /opt/ml/model/model.json
    predict   reads /input/case-XXX.npy and the model, writes one mask per case to /output
"""

import json
import os
import sys
from pathlib import Path

import numpy as np

TRAINING, MODEL, CHECKPOINTS = Path("/opt/ml/input/data/training"), Path("/opt/ml/model"), Path("/opt/ml/checkpoints")


def train() -> None:
    sums = {"inside": [0.0, 0], "outside": [0.0, 0]}
    for path in sorted((TRAINING / "inputs").glob("*.npy")):
        image, mask = np.load(path), np.load(TRAINING / "ground-truth" / path.name) > 0
        for name, part in (("inside", image[mask]), ("outside", image[~mask])):
            sums[name][0] += float(part.sum())
            sums[name][1] += part.size
    threshold = (sums["inside"][0] / sums["inside"][1] + sums["outside"][0] / sums["outside"][1]) / 2
    # A long training saves checkpoints as it goes (write, then rename) and starts from the last one.
    temporary = CHECKPOINTS / "threshold.json.tmp"
    temporary.write_text(json.dumps({"threshold": threshold}))
    os.replace(temporary, CHECKPOINTS / "threshold.json")
    (MODEL / "model.json").write_text(json.dumps({"threshold": threshold}))
    print(f"learned threshold {threshold:.3f}", file=sys.stderr)


def predict() -> None:
    threshold = json.loads((MODEL / "model.json").read_text())["threshold"]
    for path in sorted(Path("/input").glob("*.npy")):
        np.save(Path("/output") / path.name, (np.load(path, allow_pickle=False) > threshold).astype(np.uint8))


if __name__ == "__main__":
    train() if sys.argv[1:] == ["train"] else predict()
'''

EXAMPLE_YML = """\
# Read by `challenge demo`: it builds this folder and submits the image as this participant.
phase: <<first>>
participant: organizers
id: baseline
title: Threshold at 0.5 (baseline)
"""

BASELINE_PREDICTIONS = '''\
"""Baseline: threshold each pixel at 0.5, and pack the masks as one predictions file.

    python predict.py INPUTS predictions.zip

INPUTS holds the cases (case-XXX.npy); the zip holds one mask per case under the same name.
"""

import io
import sys
import zipfile
from pathlib import Path

import numpy as np

inputs, target = Path(sys.argv[1]), Path(sys.argv[2])
with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
    for path in sorted(inputs.glob("*.npy")):
        buffer = io.BytesIO()
        np.save(buffer, (np.load(path, allow_pickle=False) > 0.5).astype(np.uint8))
        archive.writestr(path.name, buffer.getvalue())
print(f"wrote {target}")
'''

SUBMIT_METRICS_MD = """\
# Submitting

The images and their ground truth are public (`challenge data download <<slug>>`;
`data/make_data.py --public DIR` writes each phase's inputs). Run your method on them, score it
yourself, and submit your metrics: one JSON file with a Dice and a Jaccard value per case,

```json
{"case": {"case-000": {"dice": 0.91, "jaccard": 0.83}, "case-001": {"dice": 0.78, "jaccard": 0.64}}}
```

## Try it first

`challenge try` checks a metrics file exactly as the runner will, on the public sample cases in
`data/sample/`, prints the scores as the leaderboard would, and writes nothing into the repository:

```bash
python examples/baseline/predict.py data/sample metrics.json
challenge try --phase <<slug>>/<<first>> metrics.json
```

## Submit

Open a pull request that adds your file and, beside it, one file
`challenges/<<slug>>/submissions/<<first>>/<your GitHub login>/<id>.yml` pinning it:

```yaml
phase: <<first>>
predictions:
  file: metrics.json           # sits next to this file
  sha256: <64 hex digits>      # sha256sum metrics.json
title: Threshold at 0.5
code_url: https://github.com/<you>/<method>   # how the numbers were made
```

Check it before you push it: `challenge check-submission --author <your login> --base origin/main`.
"""

EVALUATE_METRICS_PY = '''\
"""Check a self-reported metrics file and publish it as metrics.json.

A Type 0 challenge cannot recompute a participant's numbers, so it checks their shape: one JSON
file holding {"case": {case: {"dice": d, "jaccard": j}}}, every case of the ground truth present
and no other, each value between 0 and 1, and Jaccard consistent with Dice (J = D / (2 - D)). The
evaluation kit's errors are one line naming the case, which is what the participant sees.
"""

import json
import math
from pathlib import Path

from evalkit import EvaluationError, case_name, check_keys, write_metrics

SUBMITTED = Path("/input")
GROUND_TRUTH = Path("/opt/ml/input/data/ground_truth")
OUTPUT = "/output/metrics.json"
SHAPE = '{"case": {"case-000": {"dice": 0.9, "jaccard": 0.82}, ...}}'


def reported() -> dict:
    files = sorted(p for p in SUBMITTED.iterdir() if p.is_file() and p.suffix == ".json")
    if len(files) != 1:
        raise EvaluationError(f"Expected one JSON metrics file; the submission holds {len(files)}")
    try:
        report = json.loads(files[0].read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvaluationError(f"{files[0].name} is not valid JSON: {exc}") from None
    cases = report.get("case") if isinstance(report, dict) else None
    if not isinstance(cases, dict):
        raise EvaluationError(f"{files[0].name} must hold {SHAPE}")
    return cases


def value(cases: dict, case: str, metric: str) -> float:
    found = cases[case].get(metric) if isinstance(cases[case], dict) else None
    if isinstance(found, bool) or not isinstance(found, (int, float)) or not 0 <= found <= 1:
        raise EvaluationError(f"Case {case}: {metric} is {json.dumps(found)}; expected a number from 0 to 1")
    return float(found)


def main() -> None:
    cases = reported()
    expected = sorted(case_name(p) for p in GROUND_TRUTH.iterdir() if not p.name.startswith("."))
    check_keys(expected, cases, what="metrics")
    checked = {}
    for case in expected:
        dice, jaccard = value(cases, case, "dice"), value(cases, case, "jaccard")
        if not math.isclose(jaccard, dice / (2 - dice), abs_tol=1e-4):
            raise EvaluationError(f"Case {case}: jaccard {jaccard} does not follow from dice {dice} (J = D / (2 - D))")
        checked[case] = {"dice": dice, "jaccard": jaccard}
    metrics = write_metrics(checked, OUTPUT)
    print(f"checked {len(checked)} cases: mean Dice {metrics['aggregates']['dice']['mean']:.4f} (self-reported)")


if __name__ == "__main__":
    main()
'''

BASELINE_METRICS = '''\
"""Baseline: threshold each pixel at 0.5, score it against the public ground truth, write the metrics.

    python predict.py DATA metrics.json

DATA holds inputs/ and ground-truth/ (case-XXX.npy each); the file holds Dice and Jaccard per case.
"""

import json
import sys
from pathlib import Path

import numpy as np

data, target = Path(sys.argv[1]), Path(sys.argv[2])
cases = {}
for path in sorted((data / "inputs").glob("*.npy")):
    mask = np.load(path, allow_pickle=False) > 0.5
    truth = np.load(data / "ground-truth" / path.name, allow_pickle=False) > 0
    overlap, total = float((mask & truth).sum()), float(mask.sum() + truth.sum())
    dice = 2 * overlap / total if total else 1.0
    cases[path.stem] = {"dice": dice, "jaccard": dice / (2 - dice)}
target.write_text(json.dumps({"case": cases}, indent=2))
print(f"wrote {target}")
'''
