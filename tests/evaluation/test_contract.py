"""The container contract per phase on the real engine: FLARE21's folders and command, batches of
cases per run, and grand-challenge.org's own algorithm and evaluation containers run unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from runner.cli import main
from runner.evaluation.job import RunnerConfig, evaluate
from runner.evaluation.queue import evaluation_image, run_jobs
from runner.execution.sandbox import NOBODY
from runner.tree.store import Store
from tests.helpers import CHALLENGE, IMAGES, PHASE, phase_file, write_submission

pytestmark = pytest.mark.docker
FLARE = ("inference_mode: per-case\nalgorithm_input_path: /workspace/inputs\n"
         "algorithm_output_path: /workspace/outputs\nalgorithm_command: sh predict.sh\n")


def expected_dice(data_root: Path) -> dict[str, float]:
    folder = data_root / CHALLENGE / PHASE
    out = {}
    for path in sorted((folder / "inputs").glob("*.npy")):
        pred, truth = np.load(path) > 0.5, np.load(folder / "ground-truth" / path.name).astype(bool)
        out[path.stem] = 2 * float((pred & truth).sum()) / float(pred.sum() + truth.sum())
    return out


@pytest.fixture(scope="module")
def flare_image(engine, base_image) -> str:
    return engine.build(IMAGES / "flare", name="challenge-test/flare", base=base_image)


@pytest.mark.parametrize("per_run, runs", [(1, 3), (2, 2)])
def test_flare_contract_folders_command_and_cases_per_run(repo, engine, data_root, base_image, flare_image,
                                                          per_run, runs):
    phase_file(repo).write_text(phase_file(repo).read_text() + FLARE + f"cases_per_run: {per_run}\n")
    sub = write_submission(repo, "flare", "v1", flare_image)
    store = Store(repo)
    reports = run_jobs(store.pending(), store=store, executor=engine, base=base_image,
                       config=RunnerConfig(data_root=data_root, allow_local_images=True))
    assert [r.status for r in reports] == ["succeeded"], reports
    result = store.result(store.submission(sub))
    got = {case: values["dice"] for case, values in result.metrics["case"].items()}
    assert got == pytest.approx(expected_dice(data_root), abs=1e-12)
    assert len(result.algorithm.cases) == runs
    assert all(run["wall_time_s"] > 0 and run["peak_memory_bytes"] for run in result.algorithm.cases.values())


def test_without_the_phases_command_the_images_own_runs(repo, engine, data_root, base_image, flare_image):
    text = phase_file(repo).read_text() + FLARE.replace("algorithm_command: sh predict.sh\n", "")
    phase_file(repo).write_text(text)
    store = Store(repo)
    submission = store.submission(write_submission(repo, "flare", "v1", flare_image))
    image = evaluation_image(store.phase(CHALLENGE, PHASE), store, executor=engine, base=base_image)
    result = evaluate(submission, store=store, executor=engine, evaluation_image=image,
                      config=RunnerConfig(data_root=data_root, allow_local_images=True))
    assert result.error == "Algorithm failed on case case-000.npy: no command given: the phase names one"


# --- grand-challenge.org's containers -----------------------------------------------------------------

SOCKETS = {
    "algorithm_interface": "grand-challenge", "evaluation_interface": "grand-challenge",
    "score_jsonpath": "aggregates.dice", "score_error_jsonpath": None, "score_case_jsonpath": None,
    "extra_results_columns": [],
    "algorithm_inputs": [{"slug": "ellipsoid-image", "relative_path": "images/ellipsoid-image"},
                         {"slug": "threshold", "relative_path": "threshold.json"}],
    "algorithm_outputs": [{"slug": "ellipsoid-mask", "relative_path": "images/ellipsoid-mask"},
                          {"slug": "voxel-count", "relative_path": "voxel-count.json"}],
}


def write_mha(path: Path, array: np.ndarray) -> None:
    """A MetaImage file (what grand-challenge hands algorithms), uncompressed, written by hand."""
    kind = {np.dtype(np.uint8): "MET_UCHAR", np.dtype(np.float32): "MET_FLOAT"}[array.dtype]
    header = (f"ObjectType = Image\nNDims = {array.ndim}\nDimSize = {' '.join(map(str, reversed(array.shape)))}\n"
              f"ElementType = {kind}\nElementDataFile = LOCAL\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header.encode() + array.tobytes())


@pytest.fixture
def gc_data(data_root, tmp_path) -> Path:
    """The example's cases as grand-challenge archive items: <case>/images/ellipsoid-image/<case>.mha and
    <case>/threshold.json; the ground truth as <case>.mha, named like the input image."""
    source, root = data_root / CHALLENGE / PHASE, tmp_path / "gc-data"
    target = root / CHALLENGE / PHASE
    for path in sorted((source / "inputs").glob("*.npy")):
        case = path.stem
        write_mha(target / "inputs" / case / "images" / "ellipsoid-image" / f"{case}.mha",
                  np.load(path).astype(np.float32))
        (target / "inputs" / case / "threshold.json").write_text("0.5")
        truth = np.load(source / "ground-truth" / path.name).astype(np.uint8)
        write_mha(target / "ground-truth" / f"{case}.mha", truth)
    return root


@pytest.fixture
def gc_phase(repo) -> Path:
    data = yaml.safe_load(phase_file(repo).read_text())
    data.update(SOCKETS)
    phase_file(repo).write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False))
    return repo


def test_grand_challenge_containers_run_unchanged(gc_phase, engine, base_image, data_root, gc_data):
    algorithm = engine.build(IMAGES / "gc-algorithm", name="challenge-test/gc-algorithm", base=base_image)
    scorer = engine.build(IMAGES / "gc-evaluation", name="challenge-test/gc-evaluation", base=base_image)
    store = Store(gc_phase)
    submission = store.submission(write_submission(gc_phase, "gc", "v1", algorithm))
    result = evaluate(submission, store=store, executor=engine, evaluation_image=scorer,
                      config=RunnerConfig(data_root=gc_data, allow_local_images=True))
    assert result.status == "succeeded", result.error
    expected = expected_dice(data_root)
    got = {row["case"].removesuffix(".mha"): row["dice"] for row in result.metrics["results"]}
    assert got == pytest.approx(expected, abs=1e-12)
    assert result.metrics["aggregates"]["dice"] == pytest.approx(np.mean(list(expected.values())))
    assert all(row["seconds"].startswith("PT") and row["seconds"].endswith("S") for row in result.metrics["results"])
    assert sorted(result.algorithm.cases) == sorted(expected)


def test_a_missing_grand_challenge_output_is_refused_with_its_message(gc_phase, engine, base_image, gc_data,
                                                                      behave):
    scorer = engine.build(IMAGES / "gc-evaluation", name="challenge-test/gc-evaluation", base=base_image)
    store = Store(gc_phase)
    submission = store.submission(write_submission(gc_phase, "lazy", "v1", behave("noop")))
    result = evaluate(submission, store=store, executor=engine, evaluation_image=scorer,
                      config=RunnerConfig(data_root=gc_data, allow_local_images=True))
    assert result.error == ("Algorithm output refused on case case-000: "
                            "Output directory 'images/ellipsoid-mask' is empty")
    assert result.algorithm.exit_code == 0 and list(result.algorithm.cases) == ["case-000"]


SHOW_INPUT = """import json, pathlib
root = pathlib.Path("/input")
files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
predictions = json.loads((root / "predictions.json").read_text())
opened = {o["file"]: pathlib.Path(o["file"]).read_text() for job in predictions for o in job["outputs"] if o["file"]}
shown = {"aggregates": {"dice": 1}, "predictions": predictions, "files": files, "opened": opened}
pathlib.Path("/output/metrics.json").write_text(json.dumps(shown))
"""


def test_predictions_json_lists_each_job_as_grand_challenge_does(gc_phase, engine, base_image, gc_data, tmp_path):
    """What the evaluation container sees, shown by an evaluation that writes it into metrics.json."""
    data = yaml.safe_load(phase_file(gc_phase).read_text())
    data["algorithm_outputs"][1]["kind"] = "file"  # voxel-count.json: a file socket, as grand-challenge may store JSON
    phase_file(gc_phase).write_text(yaml.safe_dump(data, sort_keys=False))
    algorithm = engine.build(IMAGES / "gc-algorithm", name="challenge-test/gc-algorithm", base=base_image)
    folder = tmp_path / "show-input"
    folder.mkdir()
    (folder / "show.py").write_text(SHOW_INPUT)
    (folder / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nCOPY show.py /show.py\n"
                                       "ENTRYPOINT [\"python3\", \"/show.py\"]\n")
    shower = engine.build(folder, name="challenge-test/show-input", base=base_image)
    store = Store(gc_phase)
    submission = store.submission(write_submission(gc_phase, "gc", "v2", algorithm))
    result = evaluate(submission, store=store, executor=engine, evaluation_image=shower,
                      config=RunnerConfig(data_root=gc_data, allow_local_images=True))
    assert result.status == "succeeded", result.error
    jobs, files = result.metrics["predictions"], result.metrics["files"]
    assert len(jobs) == 3 and all(job["status"] == "Succeeded" for job in jobs)
    first = jobs[0]
    assert {v["socket"]["slug"] for v in first["inputs"]} == {"ellipsoid-image", "threshold"}
    threshold = next(v for v in first["inputs"] if v["interface"]["slug"] == "threshold")
    assert threshold["value"] == 0.5 and threshold["interface"]["relative_path"] == "threshold.json"
    image = next(v for v in first["inputs"] if v["interface"]["slug"] == "ellipsoid-image")
    assert image["image"]["name"] == "case-000.mha"
    mask = next(v for v in first["outputs"] if v["socket"]["slug"] == "ellipsoid-mask")
    assert mask["image"]["name"] == "output.mha" and mask["interface"]["super_kind"] == "Image"
    assert f"{first['pk']}/output/images/ellipsoid-mask/output.mha" in files
    assert f"{first['pk']}/output/voxel-count.json" in files and "predictions.json" in files
    count = next(v for v in first["outputs"] if v["socket"]["slug"] == "voxel-count")
    assert count["socket"]["super_kind"] == "File" and count["value"] is None
    assert count["file"] == f"/input/{first['pk']}/output/voxel-count.json"  # where the evaluation opens it
    assert result.metrics["opened"][count["file"]].strip().isdigit()
    assert {"example_value", "overlay_segments", "look_up_table"} <= set(count["socket"])
    assert all(job["started_at"] <= job["completed_at"] for job in jobs)
    assert [job["started_at"] for job in jobs] == sorted(job["started_at"] for job in jobs)  # one job after another
    assert all(v["file"] is None for v in first["inputs"])  # the evaluation does not get a job's inputs


def from_base(template: str, script: Path, base: str, dest: Path) -> Path:
    """A grand-challenge template folder with its script, its FROM line (and nothing else) pointed at `base`."""
    shutil.copytree(IMAGES / template, dest)
    shutil.copy(script, dest)
    lines = (dest / "Dockerfile").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("FROM "))
    lines[at] = f"FROM --platform=linux/amd64 {base}"
    (dest / "Dockerfile").write_text("\n".join(lines) + "\n")
    return dest


def test_grand_challenge_template_containers_build_and_score_through_challenge_evaluate(
        gc_phase, engine, base_image, data_root, gc_data, tmp_path):
    """The published templates' way (USER user, pip install --user, python) with only FROM changed: the
    evaluation as the challenge's evaluation folder, the algorithm as a participant builds it."""
    evaluation = gc_phase / "challenges" / CHALLENGE / "evaluation"
    shutil.rmtree(evaluation)
    from_base("gc-template-evaluation", IMAGES / "gc-evaluation" / "evaluate.py", base_image, evaluation)
    folder = from_base("gc-template-algorithm", IMAGES / "gc-algorithm" / "inference.py", base_image,
                       tmp_path / "algorithm")
    algorithm = engine.build(folder, name="challenge-test/gc-template-algorithm", base=None)
    assert engine.run_as(algorithm).user not in ("0:0", NOBODY)  # it runs as its own user
    write_submission(gc_phase, "gc", "v1", algorithm)
    assert main(["--root", str(gc_phase), "evaluate", "--pending", "--data-root", str(gc_data),
                 "--allow-local-images", "--base-image", base_image]) == 0
    result = json.loads((gc_phase / "challenges" / CHALLENGE / "results" / PHASE / "gc" / "v1.json").read_text())
    assert result["status"] == "succeeded", result.get("error")
    expected = expected_dice(data_root)
    got = {row["case"].removesuffix(".mha"): row["dice"] for row in result["metrics"]["results"]}
    assert got == pytest.approx(expected, abs=1e-12)
