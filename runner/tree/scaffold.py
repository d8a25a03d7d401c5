"""`challenge new`: a working challenge folder to start from, for each kind of challenge.

What a new organizer otherwise guesses is written out and commented (from `new_challenge/`, package data
with `<<name>>` placeholders): challenge.yml, two phases (a parent phase and the phase it opens, so
`parent` and `submission_kind` are shown in use), pages
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
from importlib import resources
from pathlib import Path

from runner.errors import ChallengeError
from runner.tree.paths import CHALLENGES
from runner.tree.schema_types import SLUG

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
            "second_title": _title(plan.phases[1]), "limits": _limits(plan.submission),
            "training_cases": "20" if kind == "training" else "0",
            "self_reported": template("self-reported.yml") if kind == "metrics" else "",
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
    note = template(f"note-{kind}.md") if kind in ("training", "metrics") else ""
    phase = {name: template(f"{name}.yml").replace("<<scoring>>", template("scoring.yml"))
             for name in ("first-phase", "second-phase")}
    found = {"challenge.yml": template("challenge.yml"), "index.md": template("index.md").replace("<<note>>", note),
             f"phases/{plan.phases[0]}.yml": phase["first-phase"],
             f"phases/{plan.phases[1]}.yml": phase["second-phase"],
             "evaluation/Dockerfile": template("evaluation.Dockerfile"),
             "evaluation/evaluate.py": template("evaluate.py"), "data/make_data.py": template("make_data.py")}
    if kind == "metrics":
        return found | {"submit.md": template("submit-metrics.md"),
                        "examples/baseline/predict.py": template("baseline-metrics.py"),
                        "evaluation/evaluate.py": template("evaluate-metrics.py")}
    if plan.submission in ("algorithm", "training"):
        return found | {"submit.md": template(f"submit-{kind}.md"),
                        "examples/baseline/Dockerfile": template("baseline.Dockerfile"),
                        "examples/baseline/predict.py": template(f"baseline-{kind}.py"),
                        "examples/baseline/example.yml": template("example.yml")}
    return found | {"submit.md": template("submit-predictions.md"),
                    "examples/baseline/predict.py": template("baseline-predictions.py")}


def _limits(submission: str) -> str:
    """The phase's resources, for the kinds whose submissions run (a training phase's budget first)."""
    runs = template("limits.yml") if submission in ("algorithm", "training") else ""
    return (template("training-limits.yml") if submission == "training" else "") + runs


def template(name: str) -> str:
    """One of the new challenge's files as written in `new_challenge/` (package data), before filling."""
    return (resources.files("runner.tree") / "new_challenge" / f"{name}.tmpl").read_text(encoding="utf-8")
