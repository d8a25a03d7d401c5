"""The demo: example challenges evaluated for real by an executor (Docker), then the site built.

It works in a workspace copy of the repository's challenges (git-ignored `.demo/` by default),
because example submissions name local image IDs that exist only on this machine. Re-running it
resumes: images, hidden data and results already made are reused.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from runner.execution.sandbox import Executor
from runner.tree.fields import Fields
from runner.tree.located import load_yaml
from runner.tree.model import NAME, SLUG
from runner.tree.paths import CHALLENGES
from runner.tree.store import Store

COPIED = (CHALLENGES, "site", "mkdocs.yml")


@dataclass(frozen=True)
class Example:
    folder: Path
    challenge: str
    phase: str
    participant: str
    id: str
    title: str


def prepare_workspace(root: Path, workspace: Path) -> Path:
    """Copy the repository's content into the workspace, keeping results made there before."""
    workspace.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, workspace / name, dirs_exist_ok=True)
        else:
            shutil.copy2(src, workspace / name)
    return workspace


def examples(store: Store) -> list[Example]:
    """Every challenges/<c>/examples/<name>/example.yml: an algorithm to submit in the demo."""
    found = []
    for path in sorted(store.base.glob("*/examples/*/example.yml")):
        f = Fields(load_yaml(path))
        f.allow_only(("phase", "participant", "id", "title"))
        found.append(Example(path.parent, path.parents[2].name, f.text("phase", pattern=SLUG, what="a phase slug"),
                             f.text("participant", pattern=NAME, what="a participant name"),
                             f.text("id", pattern=NAME, what="a submission id"), f.text("title", "")))
    return found


def submit(example: Example, store: Store, *, executor: Executor, base: str | None) -> Path:
    """Build the example's image and write its submission file, pinned by local image ID."""
    name = f"challenge-example/{example.challenge}-{example.folder.name}"
    image_id = executor.build(example.folder, name=name, base=base)
    path = store.paths.submission_file(example.challenge, example.phase, example.participant, example.id)
    text = yaml.safe_dump({"phase": example.phase, "image": image_id, "title": example.title}, sort_keys=False)
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        store.result_path(store.submission(path)).unlink(missing_ok=True)  # a new image needs a new result
    return path


def make_hidden_data(store: Store, data_root: Path) -> list[str]:
    """Run each challenge's data/make_data.py (organizer code) once, into the data root."""
    made = []
    for script in sorted(store.base.glob("*/data/make_data.py")):
        slug = script.parents[1].name
        if (data_root / slug).is_dir():
            continue
        subprocess.run([sys.executable, str(script), str(data_root)], check=True, capture_output=True, text=True)
        made.append(slug)
    return made
