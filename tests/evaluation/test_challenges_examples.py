"""The example challenges' own files: what the other test_challenges_* modules share, and the
checks that need no engine (every challenge, phase and example reads cleanly; committed
predictions are what their predict.py makes from the public data).

`submit_example` writes an example's submission into a scratch repository the way `challenge demo`
does: an algorithm folder is built and submitted by local image ID, or (`submitted_as: archive`) saved with
`docker save` and submitted as an image archive at a file:// URL; a predictions example commits its
file beside the submission, pinned by sha256, and so does an example with a supplementary PDF.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.evaluation.examples import commit_beside, examples, prepare_workspace, submit
from runner.evaluation.job import RunnerConfig, evaluate
from runner.evaluation.queue import evaluation_image
from runner.tree.check import check
from runner.tree.result_model import Result
from runner.tree.store import Store
from tests.fake_executor import FAKE_BASE, FakeExecutor
from tests.helpers import REPO

CHALLENGES = REPO / "challenges"
NEW = ("abdominal-organs", "few-shot-classification", "lung-cancer-prediction", "lung-nodule-detection")
EXAMPLE_FIELDS = ("phase", "participant", "id", "title")  # what every example.yml names


def examples_of(slug: str, source: Path = CHALLENGES) -> dict[str, Path]:
    return {p.parent.name: p.parent for p in sorted((source / slug / "examples").glob("*/example.yml"))}


def make_data(slug: str, root: Path, *args: str) -> Path:
    """Run the challenge's own data/make_data.py (organizer code) into `root`."""
    subprocess.run([sys.executable, str(CHALLENGES / slug / "data" / "make_data.py"), str(root), *args],
                   check=True, capture_output=True)
    return root


def submit_example(repo: Path, slug: str, name: str, *, engine=None, base: str | None = None,
                   source: Path = CHALLENGES) -> Path:
    """The example's submission file in `repo`, as the demo writes it (see the module docstring);
    the example is read from `source` (the repository's challenges unless a test changed a copy)."""
    folder = examples_of(slug, source)[name]
    spec = yaml.safe_load((folder / "example.yml").read_text())
    target = repo / "challenges" / slug / "submissions" / spec["phase"] / spec["participant"]
    target.mkdir(parents=True, exist_ok=True)
    body: dict = {"phase": spec["phase"]}
    path = target / f"{spec['id']}.yml"
    if "predictions" in spec:
        body["predictions"] = commit_beside(folder / spec["predictions"], path)
    elif spec.get("submitted_as") == "archive":  # FLARE's way: a `docker save` tarball, pinned by sha256
        archive = repo.parent / "archives" / f"{slug}-{name}.tar"
        archive.parent.mkdir(exist_ok=True)
        engine.save_archive(engine.build(folder, name=f"challenge-example/{slug}-{name}", base=base), archive)
        body["image_archive"] = {"url": archive.as_uri(), "sha256": hashlib.sha256(archive.read_bytes()).hexdigest()}
    else:
        body["image"] = engine.build(folder, name=f"challenge-example/{slug}-{name}", base=base)
    body["title"] = spec["title"]
    if "code_url" in spec:
        body["code_url"] = spec["code_url"]
    if "supplementary" in spec:  # FLARE's short paper
        body["supplementary"] = commit_beside(folder / spec["supplementary"], path)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def run_example(repo: Path, slug: str, name: str, *, engine, base: str, data_root: Path,
                config: RunnerConfig | None = None, source: Path = CHALLENGES) -> Result:
    """Submit the example and evaluate it for real; the result is also written, as the runner does."""
    store = Store(repo)
    submission = store.submission(submit_example(repo, slug, name, engine=engine, base=base, source=source))
    phase = store.phase(slug, submission.phase)
    image = evaluation_image(phase, store, executor=engine, base=base)
    result = evaluate(submission, store=store, executor=engine, evaluation_image=image,
                      config=config or RunnerConfig(data_root=data_root, allow_local_images=True))
    store.write_result(submission, result)
    return result


# --- no engine needed --------------------------------------------------------------------------


@pytest.mark.parametrize("slug", NEW)
def test_challenge_phases_and_pages_read_cleanly(slug):
    store = Store(REPO)
    challenge = store.challenge(slug)
    phases = store.phases(slug)
    assert phases and challenge.slug == slug
    assert "<!-- phases -->" in (CHALLENGES / slug / "index.md").read_text()
    for name, folder in examples_of(slug).items():
        spec = yaml.safe_load((folder / "example.yml").read_text())
        assert set(EXAMPLE_FIELDS) <= set(spec), name
        kind = store.phase(slug, spec["phase"]).submission_kind
        assert (kind == "predictions") == ("predictions" in spec), name
        assert (folder / spec["predictions"]).is_file() if "predictions" in spec else (folder / "Dockerfile").is_file()


@pytest.mark.parametrize("slug", NEW)
def test_each_challenge_has_a_good_a_weak_and_a_failing_example(slug):
    assert len(examples_of(slug)) >= 3


def test_flares_phases_require_a_short_paper_and_every_example_submission_holds_what_its_phase_requires(tmp_path):
    """FLARE21: "a complete submission includes a download link to Docker tar file and a short paper".
    The demo's own submit (a fake engine builds) commits each example's PDF beside its submission."""
    store = Store(prepare_workspace(REPO, tmp_path / "workspace"))
    for slug in store.phases("abdominal-organs"):
        phase = store.phase("abdominal-organs", slug)
        assert (phase.supplementary_file_choice, phase.supplementary_file_label) == ("required", "Short paper")
    executor = FakeExecutor()
    paths = [submit(example, store, executor=executor, base=FAKE_BASE) for example in examples(store)]
    assert check(store).problems == []
    flare = [store.submission(path) for path in paths if "/abdominal-organs/" in str(path)]
    assert len(flare) == 5 and all(s.supplementary and s.supplementary.file == "paper.pdf" for s in flare)


def test_committed_predictions_are_what_their_scripts_make(tmp_path):
    """DSB's example CSVs come from the public scans; a changed generator must regenerate them."""
    slug = "lung-cancer-prediction"
    inputs = make_data(slug, tmp_path, "--public") / slug / "stage1" / "inputs"
    assert not (tmp_path / slug / "stage1" / "ground-truth").exists()
    for name, folder in examples_of(slug).items():
        made = subprocess.run([sys.executable, str(folder / "predict.py"), str(inputs)], check=True,
                              capture_output=True, text=True).stdout
        assert made == (folder / "predictions.csv").read_text(), name
