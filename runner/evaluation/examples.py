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
from typing import Any

import yaml

from runner.codekey import file_sha256
from runner.execution.sandbox import Executor
from runner.tree.loading import load_example
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
    submitted_as: str = "image"
    predictions: str | None = None  # a file in the example's folder, committed beside the submission
    code_url: str | None = None
    supplementary: str | None = None  # a PDF in the example's folder, committed beside the submission


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
    """Every challenges/<c>/examples/<name>/example.yml: an algorithm or a predictions file the demo submits."""
    found = []
    for path in sorted(store.base.glob("*/examples/*/example.yml")):
        file = load_example(path)
        found.append(Example(path.parent, path.parents[2].name, file.phase, file.participant, file.id, file.title,
                             file.submitted_as, file.predictions, file.code_url, file.supplementary))
    return found


def submit(example: Example, store: Store, *, executor: Executor, base: str | None) -> Path:
    """Write the example's submission file: its predictions file committed beside it and pinned by
    sha256; or its image, built and pinned by local image ID, or (`submitted_as: archive`) saved into the
    workspace as an image archive named by a file:// URL. Its supplementary PDF is committed beside it too."""
    path = store.paths.submission_file(example.challenge, example.phase, example.participant, example.id)
    pinned: dict[str, Any]
    if example.predictions:
        pinned = {"predictions": commit_beside(example.folder / example.predictions, path)}
    else:
        image_id = executor.build(example.folder, name=f"challenge-example/{example.challenge}-{example.folder.name}",
                                  base=base)
        pinned = {"image": image_id} if example.submitted_as == "image" else {
            "image_archive": saved_archive(image_id, store.root / "build" / "archives", executor=executor)}
    extras: dict[str, Any] = {"code_url": example.code_url} if example.code_url else {}
    if example.supplementary:
        extras["supplementary"] = commit_beside(example.folder / example.supplementary, path)
    text = yaml.safe_dump({"phase": example.phase, **pinned, "title": example.title, **extras}, sort_keys=False)
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        store.result_path(store.submission(path)).unlink(missing_ok=True)  # a new image needs a new result
    return path


def commit_beside(source: Path, submission: Path) -> dict[str, str]:
    """Copy `source` beside the submission file `submission`; the file and sha256 that pin it there."""
    submission.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, submission.parent / source.name)
    return {"file": source.name, "sha256": file_sha256(source)}


def saved_archive(image_id: str, folder: Path, *, executor: Executor) -> dict[str, str]:
    """`image_id` saved once as `<folder>/<id>.tar`; its file:// URL and sha256, as a submission names them."""
    path = folder / f"{image_id.removeprefix('sha256:')[:16]}.tar"
    digest = path.with_suffix(".sha256")
    if not (path.is_file() and digest.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        executor.save_archive(image_id, path)
        digest.write_text(file_sha256(path))
    return {"url": path.as_uri(), "sha256": digest.read_text().strip()}


def make_hidden_data(store: Store, data_root: Path) -> list[str]:
    """Run each challenge's data/make_data.py (organizer code) into the data root, unless every
    phase of it has its data there already (a phase added later gets its data on the next run)."""
    made = []
    for script in sorted(store.base.glob("*/data/make_data.py")):
        slug = script.parents[1].name
        if all((data_root / slug / phase).is_dir() for phase in store.phases(slug)):
            continue
        subprocess.run([sys.executable, str(script), str(data_root)], check=True, capture_output=True, text=True)
        made.append(slug)
    return made
