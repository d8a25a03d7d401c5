"""One submission end to end on the real engine: algorithm, evaluation container, result JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from runner.cli import main
from runner.evaluation.job import RunnerConfig, RunnerError, evaluate
from runner.evaluation.queue import evaluation_image, run_jobs
from runner.execution.measure import GpuUnreadable, nvml_readers
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, nvml_readable, write_submission

pytestmark = pytest.mark.docker
EXAMPLES = REPO / "challenges" / CHALLENGE / "examples"


@pytest.fixture(scope="session")
def baseline_image(engine, base_image) -> str:
    return engine.build(EXAMPLES / "baseline", name="challenge-test/baseline", base=base_image)


@pytest.fixture
def config(data_root) -> RunnerConfig:
    return RunnerConfig(data_root=data_root, allow_local_images=True)


def expected_baseline_dice(data_root: Path) -> dict[str, float]:
    """Dice of the baseline's rule (threshold at 0.5), computed here on the host."""
    folder = data_root / CHALLENGE / PHASE
    out = {}
    for path in sorted((folder / "inputs").glob("*.npy")):
        pred = np.load(path) > 0.5
        truth = np.load(folder / "ground-truth" / path.name).astype(bool)
        out[path.stem] = 2 * float((pred & truth).sum()) / float(pred.sum() + truth.sum())
    return out


def evaluate_one(repo, engine, config, base_image, image, participant="alice", sub_id="v1"):
    store = Store(repo)
    submission = store.submission(write_submission(repo, participant, sub_id, image))
    phase = store.phase(CHALLENGE, PHASE)
    return evaluate(submission, store=store, executor=engine, config=config,
                    evaluation_image=evaluation_image(phase, store, executor=engine, base=base_image))


def test_good_submission_gets_the_right_dice(repo, engine, config, base_image, baseline_image, data_root):
    result = evaluate_one(repo, engine, config, base_image, baseline_image)
    assert result.status == "succeeded", result.error
    expected = expected_baseline_dice(data_root)
    got = {case: values["dice"] for case, values in result.metrics["case"].items()}
    assert got == pytest.approx(expected, abs=1e-12)
    assert result.metrics["aggregates"]["dice"]["mean"] == pytest.approx(np.mean(list(expected.values())))
    assert result.algorithm.image_id == baseline_image and result.algorithm.exit_code == 0
    assert result.evaluation.exit_code == 0 and result.evaluation.wall_time_s > 0


def test_network_attempt_is_a_failed_result(repo, engine, config, base_image, behave):
    result = evaluate_one(repo, engine, config, base_image, behave("network"))
    assert result.status == "failed"
    assert result.error == "Algorithm failed: OSError: [Errno 101] Network is unreachable"
    assert result.evaluation is None and result.metrics is None


def test_time_limit_is_a_failed_result(repo, engine, config, base_image, behave):
    phase = repo / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml"
    phase.write_text(phase.read_text().replace("algorithm_time_limit: 120", "algorithm_time_limit: 2"))
    result = evaluate_one(repo, engine, config, base_image, behave("sleep"))
    assert result.status == "failed"
    assert result.error == "Algorithm failed: The container exceeded its time limit of 2 s and was stopped"
    assert result.algorithm.timed_out


def test_crashing_evaluation_reports_its_last_stderr_line(repo, engine, config, base_image, baseline_image, behave):
    store = Store(repo)
    submission = store.submission(write_submission(repo, "alice", "v1", baseline_image))
    result = evaluate(submission, store=store, executor=engine, config=config, evaluation_image=behave("crash"))
    assert result.status == "failed"
    assert result.error == "Evaluation failed: RuntimeError: model weights not found at /opt/model.pt"
    assert result.algorithm.exit_code == 0 and result.evaluation.exit_code == 1


@pytest.mark.parametrize("mode, reason", [
    ("bad-metrics", "Evaluation failed: metrics.json is not valid JSON "
                    "(Expecting property name enclosed in double quotes, line 1)"),
    ("whoami", "Evaluation failed: it wrote no /output/metrics.json"),
])
def test_broken_metrics_are_failed_results(repo, engine, config, baseline_image, behave, mode, reason):
    store = Store(repo)
    submission = store.submission(write_submission(repo, "alice", "v1", baseline_image))
    result = evaluate(submission, store=store, executor=engine, config=config, evaluation_image=behave(mode))
    assert (result.status, result.error) == ("failed", reason)


def test_nan_score_fails_and_other_nans_are_stored_as_null(repo, engine, config, baseline_image, behave):
    store = Store(repo)
    submission = store.submission(write_submission(repo, "alice", "v1", baseline_image))
    result = evaluate(submission, store=store, executor=engine, config=config, evaluation_image=behave("nan-metrics"))
    assert (result.status, result.metrics) == ("failed", None)
    assert result.error == ("Evaluation failed: metrics.json has no number at aggregates.dice.mean "
                            "(missing, NaN or not a number)")
    result = evaluate(submission, store=store, executor=engine, config=config, evaluation_image=behave("nan-extra"))
    assert result.status == "succeeded"
    assert result.metrics == {"aggregates": {"dice": {"mean": 0.5}, "jaccard": {"mean": None}}}


def test_local_image_needs_the_option(repo, engine, data_root, base_image, baseline_image):
    result = evaluate_one(repo, engine, RunnerConfig(data_root=data_root), base_image, baseline_image)
    assert result.status == "failed"
    assert "local image ID is accepted only for local runs" in result.error


def test_missing_hidden_data_leaves_submission_pending(repo, engine, tmp_path, base_image, baseline_image):
    store = Store(repo)
    write_submission(repo, "alice", "v1", baseline_image)
    reports = run_jobs(store.pending(), store=store, executor=engine,
                       config=RunnerConfig(data_root=tmp_path / "nowhere", allow_local_images=True), base=base_image)
    assert [r.status for r in reports] == ["error"]
    assert "hidden data missing on this runner" in reports[0].detail
    assert len(store.pending()) == 1


def test_cli_evaluate_writes_results_once_and_reruns_on_request(repo, data_root, base_image, baseline_image, behave,
                                                                capsys):
    good = write_submission(repo, "alice", "v1", baseline_image)
    write_submission(repo, "bob", "net", behave("network"))
    args = ["--root", str(repo), "evaluate", "--pending", "--data-root", str(data_root),
            "--allow-local-images", "--base-image", base_image]
    assert main(args) == 0
    results = repo / "challenges" / CHALLENGE / "results" / PHASE
    alice = json.loads((results / "alice" / "v1.json").read_text())
    bob = json.loads((results / "bob" / "net.json").read_text())
    assert (alice["status"], bob["status"]) == ("succeeded", "failed")
    assert bob["error"] == "Algorithm failed: OSError: [Errno 101] Network is unreachable"
    assert Store(repo).pending() == []

    assert main(args) == 0
    assert "nothing to evaluate" in capsys.readouterr().out
    explicit = ["--root", str(repo), "evaluate", str(good), "--data-root", str(data_root), "--allow-local-images",
                "--base-image", base_image]
    assert main(explicit) == 0
    assert "already has a result" in capsys.readouterr().err
    before = (results / "alice" / "v1.json").stat().st_mtime_ns
    assert main([*explicit, "--rerun"]) == 0
    assert (results / "alice" / "v1.json").stat().st_mtime_ns != before


def test_cli_evaluate_without_data_root_is_one_line(repo, capsys, monkeypatch):
    monkeypatch.delenv("CHALLENGE_DATA_ROOT", raising=False)
    assert main(["--root", str(repo), "evaluate", "--pending"]) == 1
    assert capsys.readouterr().err.strip() == ("error: no hidden data root: pass --data-root DIR "
                                               "or set CHALLENGE_DATA_ROOT")


def test_runner_error_when_engine_refuses(repo, engine, config, baseline_image):
    store = Store(repo)
    submission = store.submission(write_submission(repo, "alice", "v1", baseline_image))
    with pytest.raises(RunnerError, match="evaluation image"):
        evaluate(submission, store=store, executor=engine, config=config,
                 evaluation_image="challenge-test/does-not-exist:1")


def predictions_phase(repo: Path, data_root: Path, tmp_path: Path) -> Path:
    """A 'validation' phase taking prediction files, over a copy of the final test's data."""
    import shutil
    phases = repo / "challenges" / CHALLENGE / "phases"
    text = (phases / f"{PHASE}.yml").read_text().replace("submission_kind: algorithm", "submission_kind: predictions")
    (phases / "validation.yml").write_text(text)
    own = tmp_path / "data"
    shutil.copytree(data_root / CHALLENGE / PHASE, own / CHALLENGE / "validation")
    return own


def test_predictions_zip_is_scored(repo, engine, base_image, data_root, tmp_path):
    import hashlib
    import io
    import zipfile
    own = predictions_phase(repo, data_root, tmp_path)
    folder = repo / "challenges" / CHALLENGE / "submissions" / "validation" / "alice"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "masks.zip", "w") as archive:
        for path in sorted((data_root / CHALLENGE / PHASE / "inputs").glob("*.npy")):
            buffer = io.BytesIO()
            np.save(buffer, (np.load(path) > 0.5).astype(np.uint8))
            archive.writestr(path.name, buffer.getvalue())
    digest = hashlib.sha256((folder / "masks.zip").read_bytes()).hexdigest()
    (folder / "v1.yml").write_text(f"phase: validation\npredictions:\n  file: masks.zip\n  sha256: {digest}\n")
    (folder / "bad.yml").write_text(f"phase: validation\npredictions:\n  file: masks.zip\n  sha256: {'ab' * 32}\n")
    store = Store(repo)
    image = evaluation_image(store.phase(CHALLENGE, "validation"), store, executor=engine, base=base_image)
    config = RunnerConfig(data_root=own)
    good = evaluate(store.submission(folder / "v1.yml"), store=store, executor=engine, config=config,
                    evaluation_image=image)
    assert good.status == "succeeded", good.error
    expected = expected_baseline_dice(data_root)
    assert {c: v["dice"] for c, v in good.metrics["case"].items()} == pytest.approx(expected, abs=1e-12)
    assert good.algorithm is None
    bad = evaluate(store.submission(folder / "bad.yml"), store=store, executor=engine, config=config,
                   evaluation_image=image)
    assert bad.status == "failed"
    assert bad.error == f"Predictions file sha256 is {digest}, but the submission pins {'ab' * 32}"


@pytest.mark.skipif(nvml_readable(), reason="this host reads NVML")
def test_a_runner_given_gpus_without_nvml_stops_at_start_with_one_line(repo, tmp_path, capsys):
    write_submission(repo, "alice", "v1", "ghcr.io/alice/algo@sha256:" + "a" * 64)
    status = main(["--root", str(repo), "evaluate", "--pending", "--gpus", "0", "--data-root", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 1 and captured.err == "error: NVML cannot be read: NVML Shared Library Not Found\n"
    assert not list((repo / "challenges" / CHALLENGE / "results").rglob("v1.json"))  # nothing ran


def test_nvml_readers_without_pynvml_say_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # as where nvidia-ml-py is not installed
    with pytest.raises(GpuUnreadable, match=r"^NVML cannot be read: pynvml is not installed \(install nvidia-ml-py\)$"):
        nvml_readers(("0",))
