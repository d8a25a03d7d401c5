"""The job logic on the in-process fake executor: what becomes a failed result, what stays pending,
what is measured, reused, retried and refused, in milliseconds and without Docker.

The real engine's isolation is proven by test_sandbox.py, test_hostile.py and test_resilience.py;
these tests prove the bookkeeping around it, through the same Executor interface.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import re
import shutil
import zipfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from runner.errors import Retry
from runner.evaluation.archives import preserve_image
from runner.evaluation.job import GROUND_TRUTH, RunnerConfig
from runner.evaluation.queue import EVALKIT, JobReport, run_jobs
from runner.execution.docker_engine import DockerEngine
from runner.execution.measure import GpuUsage
from runner.execution.sandbox import Executor, RunAs, SandboxError
from runner.site.reference import measurements
from runner.tree.jsonpaths import lookup
from runner.tree.located import ModelError
from runner.tree.references import image_refusal
from runner.tree.result_model import Result, scored_document
from runner.tree.store import Store
from tests.fake_executor import FAKE_BASE, Behaviour, FakeExecutor
from tests.helpers import CHALLENGE, PHASE, edit_yaml, phase_file, write_submission

CASES = ("case-000.npy", "case-001.npy", "case-002.npy")
ALGORITHM = "ghcr.io/alice/algo@sha256:" + "a" * 64
EVALUATION = f"challenge-eval/{CHALLENGE}"
KEY = f"{CHALLENGE}/{PHASE}/alice/v1"
MiB = 1024**2


def threshold(inputs: Mapping[str, Path], output: Path) -> None:
    """An algorithm: one prediction per input case."""
    for path in sorted(inputs["/input"].rglob("case-*")):
        (output / path.name).write_bytes(b"mask:" + path.read_bytes())


def score(inputs: Mapping[str, Path], output: Path) -> None:
    """An evaluation: Dice 1 for each ground-truth case with a prediction, 0 without."""
    truth = sorted(p.name for p in inputs[GROUND_TRUTH].iterdir())
    cases = {name: {"dice": float((inputs["/input"] / name).is_file())} for name in truth}
    mean = sum(c["dice"] for c in cases.values()) / len(cases)
    (output / "metrics.json").write_text(json.dumps({"case": cases, "aggregates": {"dice": {"mean": mean}}}))


@pytest.fixture
def data_root(tmp_path) -> Path:
    folder = tmp_path / "data" / CHALLENGE / PHASE
    for sub in ("inputs", "ground-truth"):
        (folder / sub).mkdir(parents=True)
        for i, name in enumerate(CASES):
            (folder / sub / name).write_bytes(bytes([i]) * 16)
    return tmp_path / "data"


@pytest.fixture
def fake() -> FakeExecutor:
    executor = FakeExecutor()
    executor.add_image(EVALUATION, Behaviour(write=score))
    return executor


@pytest.fixture
def config(data_root) -> RunnerConfig:
    return RunnerConfig(data_root=data_root)


@pytest.fixture
def waits() -> list[float]:
    return []


def evaluate_all(repo: Path, fake: FakeExecutor, config: RunnerConfig, waits: list[float] | None = None,
                 **kwargs) -> tuple[Store, list[JobReport]]:
    store = Store(repo)
    retry = Retry(attempts=3, sleep=(waits if waits is not None else []).append)
    reports = run_jobs(store.pending(), store=store, executor=fake, config=config, base=FAKE_BASE, retry=retry,
                       **kwargs)
    return store, reports


def result_of(repo: Path, participant: str = "alice", *, whole: bool = False) -> Result:
    """The public record, or (`whole`) the result as the runner keeps it."""
    store = Store(repo)
    submission = store.submission(store.paths.submission_file(CHALLENGE, PHASE, participant, "v1"))
    result = store.runner_result(submission) if whole else store.result(submission)
    assert result is not None
    return result


def everything(store: Store) -> list:
    return [store.submission(path) for path in store.submission_paths()]


def submit(repo: Path, fake: FakeExecutor, *behaviours: Behaviour, image: str = ALGORITHM,
           participant: str = "alice") -> str:
    fake.add_image(image, *behaviours)
    write_submission(repo, participant, "v1", image)
    return image


def edit_phase(repo: Path, old: str, new: str) -> None:
    path = phase_file(repo)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def per_case(repo: Path) -> None:
    phase_file(repo).write_text(phase_file(repo).read_text() + "inference_mode: per-case\n")


# --- the interface ---------------------------------------------------------------------------------


def test_both_executors_implement_the_interface():
    assert isinstance(FakeExecutor(), Executor)
    assert isinstance(DockerEngine(), Executor)  # lazy: no engine is contacted


# --- batch and per-case runs ------------------------------------------------------------------------


def test_good_submission_runs_algorithm_then_evaluation(repo, fake, config):
    submit(repo, fake, Behaviour(write=threshold, wall_time_s=2.5, peak_memory_bytes=300 * MiB))
    _, reports = evaluate_all(repo, fake, config)
    assert [r.status for r in reports] == ["succeeded"]
    result = result_of(repo)
    assert result.metrics["aggregates"]["dice"]["mean"] == 1.0 and result.attempts == 1
    assert (result.algorithm.image, result.algorithm.image_id) == (ALGORITHM, fake.images[ALGORITHM])
    assert (result.algorithm.wall_time_s, result.algorithm.peak_memory_bytes) == (2.5, 300 * MiB)
    assert result.algorithm.cases is None and result.evaluation.exit_code == 0
    algorithm, evaluation = fake.runs
    assert [m.target for m in algorithm.mounts] == ["/input"] and all(m.read_only for m in algorithm.mounts)
    assert [m.target for m in evaluation.mounts] == ["/input", GROUND_TRUTH]
    assert (algorithm.time_limit, algorithm.memory, algorithm.cpus) == (120, 1024**3, 1)
    assert algorithm.job == evaluation.job == KEY
    assert fake.removed == [KEY] and fake.open_areas == 0


def test_per_case_mode_runs_each_case_alone_in_order_and_measures_it(repo, fake, config):
    per_case(repo)
    inputs = []

    def one_case(mounts: Mapping[str, Path], output: Path) -> None:
        inputs.append(sorted(p.name for p in mounts["/input"].rglob("*")))
        threshold(mounts, output)

    submit(repo, fake, Behaviour(write=one_case, wall_time_s=1.0, peak_memory_bytes=100 * MiB),
           Behaviour(write=one_case, wall_time_s=2.0, peak_memory_bytes=300 * MiB),
           Behaviour(write=one_case, wall_time_s=3.0, peak_memory_bytes=200 * MiB))
    seen = []
    evaluate_all(repo, fake, config, on_case=lambda case, i, n, measured: seen.append((case, i, n)))
    assert seen == [(case, i, 3) for i, case in enumerate(CASES)]
    assert inputs == [[case] for case in CASES]
    result = result_of(repo)
    assert result.status == "succeeded" and result.metrics["aggregates"]["dice"]["mean"] == 1.0
    assert [c["wall_time_s"] for c in result.algorithm.cases.values()] == [1.0, 2.0, 3.0]
    assert result.algorithm.aggregates["wall_time_s"] == {"mean": 2.0, "max": 3.0, "sum": 6.0}
    assert result.algorithm.aggregates["peak_memory_bytes"]["max"] == 300 * MiB
    assert (result.algorithm.wall_time_s, result.algorithm.peak_memory_bytes) == (6.0, 300 * MiB)


def test_the_references_examples_read_what_each_mode_writes(repo, fake, config):
    """The field reference's example of each inference mode, set in the phase, reads a number from the
    results the runner writes in that mode; batch mode writes nothing at the per-case example's path."""
    batch, each_case = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", measurements(), re.S)]
    edit_yaml(phase_file(repo), **batch)
    submit(repo, fake, Behaviour(write=threshold, wall_time_s=2.5))
    evaluate_all(repo, fake, config)
    edit_yaml(phase_file(repo), **each_case)
    submit(repo, fake, *[Behaviour(write=threshold, wall_time_s=s) for s in (1.0, 2.0, 3.0)], participant="bob")
    evaluate_all(repo, fake, config)
    in_batch, per_run = (scored_document(result_of(repo, who)) for who in ("alice", "bob"))
    [column], [run_column] = batch["extra_results_columns"], each_case["extra_results_columns"]
    assert (lookup(in_batch, column["path"]), lookup(per_run, run_column["path"])) == (2.5, 2.0)
    assert lookup(in_batch, run_column["path"]) is None


def test_per_case_mode_stops_at_the_first_failing_case(repo, fake, config):
    per_case(repo)
    submit(repo, fake, Behaviour(exit_code=1, stderr="loading\nRuntimeError: no weights\n"))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert result.error == "Algorithm failed on case case-000.npy: RuntimeError: no weights"
    assert len(fake.runs) == 1 and list(result.algorithm.cases) == ["case-000.npy"]
    assert result.evaluation is None and result.metrics is None


def test_per_case_failure_later_keeps_the_cases_before_it(repo, fake, config):
    per_case(repo)
    submit(repo, fake, Behaviour(write=threshold), Behaviour(timed_out=True))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert result.error == ("Algorithm failed on case case-001.npy: "
                            "The container exceeded its time limit of 120 s and was stopped")
    assert list(result.algorithm.cases) == ["case-000.npy", "case-001.npy"]
    assert result.algorithm.timed_out and result.algorithm.cases["case-001.npy"]["timed_out"]


# --- failures that belong to the submission ---------------------------------------------------------


@pytest.mark.parametrize("behaviour, reason", [
    (Behaviour(timed_out=True), "The container exceeded its time limit of 120 s and was stopped"),
    (Behaviour(peak_memory_bytes=2 * 1024**3), "The container was killed as it exceeded its memory limit"),
    (Behaviour(oom_killed=True), "The container was killed as it exceeded its memory limit"),
    (Behaviour(exit_code=3), "The container exited with code 3"),
    (Behaviour(exit_code=1, stderr="2026-01-01T00:00:00Z ValueError: bad input\n\n"), "ValueError: bad input"),
    (Behaviour(files={"big.bin": b"x" * (2 * MiB)}),
     "OSError: [Errno 28] No space left on device (/output is limited to 1 MiB, /tmp to 256 MiB)"),
])
def test_algorithm_failure_is_a_failed_result_with_its_reason(repo, fake, config, behaviour, reason):
    edit_phase(repo, "algorithm_resources:\n", "algorithm_resources:\n  output: 1m\n")
    submit(repo, fake, behaviour)
    _, reports = evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert (reports[0].status, result.error) == ("failed", f"Algorithm failed: {reason}")
    assert result.evaluation is None and len(fake.runs) == 1


def test_link_in_output_is_refused_not_followed(repo, fake, config):
    submit(repo, fake, Behaviour(links={"case-000.npy": "/etc/shadow"}))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert result.error == "Algorithm output refused: /output/case-000.npy is a link; only regular files are accepted"
    assert len(fake.runs) == 1 and result.algorithm.exit_code == 0  # the run is recorded, its outputs are not


def test_unknown_algorithm_image_is_the_submissions_failure(repo, fake, config):
    write_submission(repo, "alice", "v1", ALGORITHM)  # never pushed: the registry does not have it
    evaluate_all(repo, fake, config)
    assert result_of(repo).error == (f"Algorithm image could not be used: pulling {ALGORITHM}: "
                                     "image not found (manifest unknown)")


def test_each_image_runs_as_its_own_user_into_an_area_that_user_owns(repo, fake, config):
    image = submit(repo, fake, Behaviour(write=threshold))
    declared = RunAs(user="999:998", groups=("65534",), home=None)
    fake.users[fake.images[image]] = declared
    evaluate_all(repo, fake, config)
    assert result_of(repo).status == "succeeded"
    algorithm, evaluation = fake.runs
    assert (algorithm.user, evaluation.user) == (declared, RunAs())
    assert fake.areas == ["999:998", RunAs().user]


GHOST = "the image's USER 'ghost' is not in its /etc/passwd"


def test_a_user_the_algorithm_image_does_not_define_is_the_submissions_failure(repo, fake, config):
    image = submit(repo, fake, Behaviour(write=threshold))
    fake.users[fake.images[image]] = SandboxError(GHOST)
    evaluate_all(repo, fake, config)
    assert result_of(repo).error == f"Algorithm image could not be used: {GHOST}"
    assert fake.runs == []


def test_a_user_the_evaluation_image_does_not_define_is_the_runners_problem(repo, fake, config):
    submit(repo, fake, Behaviour(write=threshold))
    fake.users[fake.images[EVALUATION]] = SandboxError(GHOST)
    store, reports = evaluate_all(repo, fake, config)
    assert (reports[0].status, reports[0].detail) == ("error", f"evaluation image for {CHALLENGE}/{PHASE}: {GHOST} "
                                                               "(left pending)")
    assert len(store.pending()) == 1


# --- metrics ------------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour, reason", [
    (Behaviour(), "it wrote no /output/metrics.json"),
    (Behaviour(files={"metrics.json": "{not json"}),
     "metrics.json is not valid JSON (Expecting property name enclosed in double quotes, line 1)"),
    (Behaviour(files={"metrics.json": "[1, 2]"}), "metrics.json must hold a JSON object"),
    (Behaviour(files={"metrics.json": '{"aggregates": {"dice": {"mean": NaN}}}'}),
     "metrics.json has no number at aggregates.dice.mean (missing, NaN or not a number)"),
    (Behaviour(exit_code=1, stderr="FileNotFoundError: Expected a prediction case-000.npy"),
     "FileNotFoundError: Expected a prediction case-000.npy"),
])
def test_broken_evaluation_is_a_failed_result(repo, fake, config, behaviour, reason):
    fake.add_image(EVALUATION, behaviour)
    submit(repo, fake, Behaviour(write=threshold))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert (result.status, result.error, result.metrics) == ("failed", f"Evaluation failed: {reason}", None)
    assert result.algorithm.exit_code == 0 and result.evaluation is not None


def test_other_nans_are_stored_as_null(repo, fake, config):
    metrics = '{"aggregates": {"dice": {"mean": 0.5}, "jaccard": {"mean": Infinity}}}'
    fake.add_image(EVALUATION, Behaviour(files={"metrics.json": metrics}))
    submit(repo, fake, Behaviour(write=threshold))
    evaluate_all(repo, fake, config)
    assert result_of(repo).metrics == {"aggregates": {"dice": {"mean": 0.5}, "jaccard": {"mean": None}}}


def test_metrics_written_as_a_link_are_refused(repo, fake, config):
    fake.add_image(EVALUATION, Behaviour(links={"metrics.json": "/etc/passwd"}))
    submit(repo, fake, Behaviour(write=threshold))
    evaluate_all(repo, fake, config)
    assert result_of(repo).error == ("Evaluation output refused: /output/metrics.json is a link; "
                                     "only regular files are accepted")


# --- reuse --------------------------------------------------------------------------------------


def test_rerun_reuses_stored_outputs_and_rescores_them(repo, fake, data_root, tmp_path):
    per_case(repo)
    config = RunnerConfig(data_root=data_root, cache_dir=tmp_path / "cache")
    submit(repo, fake, Behaviour(write=threshold, wall_time_s=1.0))
    store, _ = evaluate_all(repo, fake, config)
    first = result_of(repo)
    fake.runs.clear()
    reports = run_jobs(everything(store), store=store, executor=fake, config=config, base=FAKE_BASE, rerun=True)
    again = result_of(repo)
    assert reports[0].status == "succeeded" and [s.image for s in fake.runs] == [fake.images[EVALUATION]]
    assert again.algorithm.reused and all(c["reused"] for c in again.algorithm.cases.values())
    assert again.metrics == first.metrics and again.algorithm.wall_time_s == first.algorithm.wall_time_s


def test_changed_input_is_not_reused(repo, fake, data_root, tmp_path):
    config = RunnerConfig(data_root=data_root, cache_dir=tmp_path / "cache")
    submit(repo, fake, Behaviour(write=threshold))
    store, _ = evaluate_all(repo, fake, config)
    (data_root / CHALLENGE / PHASE / "inputs" / CASES[0]).write_bytes(b"new scan")
    run_jobs(everything(store), store=store, executor=fake, config=config, base=FAKE_BASE, rerun=True)
    assert not result_of(repo).algorithm.reused and len(fake.runs) == 4


# --- retries and runner problems ------------------------------------------------------------------


def test_transient_engine_failure_is_retried_with_backoff(repo, fake, config, waits):
    submit(repo, fake, Behaviour(write=threshold))
    fake.fail("run", SandboxError("starting the container: 500 Server Error", transient=True))
    lines = []
    _, reports = evaluate_all(repo, fake, config, waits, log=lines.append)
    assert [r.status for r in reports] == ["succeeded"] and waits == [2.0]
    assert result_of(repo).attempts == 2
    assert lines == ["algorithm container could not run: starting the container: 500 Server Error; "
                     "retrying in 2 s (try 2 of 3)"]
    assert fake.removed == [KEY, KEY]  # each try first removes what an earlier one left


def test_transient_failure_every_time_gives_up_and_leaves_it_pending(repo, fake, config, waits):
    submit(repo, fake, Behaviour(write=threshold))
    fake.fail("image_id", *[SandboxError(f"pulling {ALGORITHM}: the engine did not answer", transient=True)] * 3)
    store, reports = evaluate_all(repo, fake, config, waits)
    assert reports[0].status == "error" and waits == [2.0, 4.0]
    assert reports[0].detail == (f"Algorithm image could not be used: pulling {ALGORITHM}: the engine did not "
                                 "answer; gave up after 3 tries (left pending)")
    assert len(store.pending()) == 1 and fake.runs == []


def test_permanent_engine_failure_is_not_retried(repo, fake, config, waits):
    submit(repo, fake, Behaviour(write=threshold))
    store, reports = evaluate_all(repo, fake, RunnerConfig(data_root=config.data_root, runtime="runsc"), waits)
    assert reports[0].status == "error" and waits == []
    assert reports[0].detail == ("algorithm container could not run: starting the container: unknown or invalid "
                                 "runtime name: runsc (left pending)")
    assert len(store.pending()) == 1


def test_missing_hidden_data_leaves_it_pending(repo, fake, tmp_path, waits):
    submit(repo, fake, Behaviour(write=threshold))
    store, reports = evaluate_all(repo, fake, RunnerConfig(data_root=tmp_path / "nowhere"), waits)
    assert reports[0].status == "error" and "hidden data missing on this runner" in reports[0].detail
    assert len(store.pending()) == 1 and fake.runs == [] and waits == []


def test_a_data_key_that_cannot_be_read_stops_the_job_before_any_container_runs(repo, fake, data_root, tmp_path):
    copy = tmp_path / "keyless-data"
    shutil.copytree(data_root, copy)
    (copy / ".manifest-key").unlink(missing_ok=True)
    (copy / ".manifest-key").mkdir()  # not a key
    submit(repo, fake, Behaviour(write=threshold))
    store, reports = evaluate_all(repo, fake, RunnerConfig(data_root=copy), [])
    assert reports[0].status == "error" and ".manifest-key: not a readable hashing key" in reports[0].detail
    assert len(store.pending()) == 1 and fake.runs == []  # no run spent on a result that could not be signed


def test_missing_evaluation_image_is_the_runners_problem(repo, fake, config):
    pinned = f"ghcr.io/org/eval@sha256:{'e' * 64}"
    phase_file(repo).write_text(phase_file(repo).read_text() + f"evaluation_image: {pinned}\n")
    submit(repo, fake, Behaviour(write=threshold))
    store, reports = evaluate_all(repo, fake, config)
    assert reports[0].status == "error" and reports[0].detail.startswith(
        f"evaluation image for {CHALLENGE}/{PHASE}: pulling ghcr.io/org/eval@sha256:")
    assert len(store.pending()) == 1


def test_broken_evaluation_build_is_the_runners_problem(repo, fake, config):
    fake.fail("build", SandboxError("building evaluation failed: COPY failed"))
    submit(repo, fake, Behaviour(write=threshold))
    store, reports = evaluate_all(repo, fake, config)
    assert reports[0].detail == "building evaluation failed: COPY failed (left pending)"
    assert len(store.pending()) == 1


def test_evaluation_image_is_built_once_per_call(repo, fake, config):
    submit(repo, fake, Behaviour(write=threshold))
    submit(repo, fake, Behaviour(write=threshold), image=f"ghcr.io/bob/algo@sha256:{'b' * 64}", participant="bob")
    _, reports = evaluate_all(repo, fake, config)
    assert [r.status for r in reports] == ["succeeded", "succeeded"]
    assert [folder.name for folder, _ in fake.builds] == ["evaluation"]
    assert fake.builds[0][1].startswith(f"{EVALUATION}:")
    assert fake.contexts == [{"evalkit": EVALKIT}] and (EVALKIT / "__init__.py").is_file()


def test_dead_runners_leftovers_are_removed_first(repo, fake, config):
    fake.leftovers[KEY] = 2
    submit(repo, fake, Behaviour(write=threshold))
    _, reports = evaluate_all(repo, fake, config)
    assert reports[0].status == "succeeded" and fake.leftovers == {} and fake.removed == [KEY]


def test_done_and_busy_submissions_are_not_evaluated_again(repo, fake, config):
    submit(repo, fake, Behaviour(write=threshold))
    store, _ = evaluate_all(repo, fake, config)
    [submission] = everything(store)
    fake.runs.clear()
    assert run_jobs([submission], store=store, executor=fake, config=config)[0].status == "skipped"
    with store.lock(submission) as held:
        assert held
        busy = run_jobs([submission], store=store, executor=fake, config=config, rerun=True)
    assert busy[0].status == "busy" and fake.runs == []


# --- images and registries --------------------------------------------------------------------------


def test_registry_outside_the_phases_list_is_refused_before_anything_runs(repo, fake, config):
    phase_file(repo).write_text(phase_file(repo).read_text() + "allowed_registries: [ghcr.io]\n")
    image = submit(repo, fake, Behaviour(write=threshold), image=f"quay.io/alice/algo@sha256:{'c' * 64}")
    evaluate_all(repo, fake, config)
    assert result_of(repo).error == (f"Algorithm image {image}: registry quay.io is not accepted in this phase; "
                                     "push to ghcr.io")
    assert fake.runs == []


def test_local_image_needs_the_option(repo, fake, config):
    submit(repo, fake, Behaviour(write=threshold), image="sha256:" + "d" * 64)
    evaluate_all(repo, fake, config)
    assert "a local image ID is accepted only for local runs (--allow-local-images)" in result_of(repo).error
    assert fake.runs == []
    store, reports = evaluate_all(repo, fake, RunnerConfig(data_root=config.data_root, allow_local_images=True))
    assert reports == []  # a failed result is final until --rerun
    run_jobs(everything(store), store=store, executor=fake, base=FAKE_BASE, rerun=True,
             config=RunnerConfig(data_root=config.data_root, allow_local_images=True))
    assert result_of(repo).status == "succeeded"


DIGEST = "sha256:" + "ef" * 32


@pytest.mark.parametrize("ref, allowed, refused", [
    (f"ghcr.io/a/b@{DIGEST}", ("ghcr.io",), False),
    (f"quay.io/a/b@{DIGEST}", ("ghcr.io",), True),
    (f"library/python@{DIGEST}", ("docker.io",), False),
    (f"python@{DIGEST}", ("docker.io",), False),
    (f"localhost:5000/a@{DIGEST}", ("localhost:5000",), False),
    (f"quay.io/a/b@{DIGEST}", (), False),
    (DIGEST, ("ghcr.io",), False),  # a local ID has no registry (and needs --allow-local-images)
    ("ghcr.io/a/b:latest", (), True),
])
def test_image_refusal_registry_allow_list(ref, allowed, refused):
    assert (image_refusal(ref, allowed=allowed, allow_local=True) is not None) is refused


# --- predictions -------------------------------------------------------------------------------


def predictions_phase(repo: Path, data_root: Path) -> Path:
    """A 'validation' phase taking prediction files, over the same hidden data."""
    phases = phase_file(repo).parent
    text = phase_file(repo).read_text().replace("submission_kind: algorithm", "submission_kind: predictions")
    (phases / "validation.yml").write_text(text)
    (data_root / CHALLENGE / PHASE).rename(data_root / CHALLENGE / "validation")
    folder = phases.parent / "submissions" / "validation" / "alice"
    folder.mkdir(parents=True)
    return folder


def predictions_file(folder: Path, name: str, entries: dict[str, bytes], sha256: str | None = None) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in entries.items():
            archive.writestr(member, data)
    (folder / name).write_bytes(buffer.getvalue())
    digest = sha256 or hashlib.sha256(buffer.getvalue()).hexdigest()
    path = folder / f"{Path(name).stem}.yml"
    path.write_text(f"phase: validation\npredictions:\n  file: {name}\n  sha256: {digest}\n")
    return path


def evaluate_predictions(repo: Path, fake: FakeExecutor, config: RunnerConfig, path: Path) -> Result:
    store = Store(repo)
    run_jobs([store.submission(path)], store=store, executor=fake, config=config, base=FAKE_BASE)
    result = store.result(store.submission(path))
    assert result is not None
    return result


def test_predictions_zip_is_unpacked_and_scored(repo, fake, config, data_root):
    folder = predictions_phase(repo, data_root)
    path = predictions_file(folder, "masks.zip", {case: b"mask" for case in CASES[:2]})
    result = evaluate_predictions(repo, fake, config, path)
    assert result.status == "succeeded" and result.algorithm is None
    assert result.metrics["aggregates"]["dice"]["mean"] == pytest.approx(2 / 3)
    assert [spec.image for spec in fake.runs] == [fake.images[EVALUATION]]


@pytest.mark.parametrize("entries, sha256, reason", [
    ({"case-000.npy": b"x"}, "ab" * 32, "Predictions file sha256 is {digest}, but the submission pins " + "ab" * 32),
    ({"../escape.npy": b"x"}, None, "Predictions archive refused: '../escape.npy' points outside the output folder"),
])
def test_bad_predictions_are_failed_results(repo, fake, config, data_root, entries, sha256, reason):
    folder = predictions_phase(repo, data_root)
    path = predictions_file(folder, "masks.zip", entries, sha256)
    result = evaluate_predictions(repo, fake, config, path)
    digest = hashlib.sha256((folder / "masks.zip").read_bytes()).hexdigest()
    assert (result.status, result.error) == ("failed", reason.format(digest=digest))
    assert fake.runs == [] and not (repo.parent / "escape.npy").exists()


def zip_with(name: str, data: bytes, *, flag: int = 0, method: int | None = None, deflate_broken: bool = False
             ) -> bytes:
    """A one-file zip, its headers patched as a participant may send them."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    raw = bytearray(buffer.getvalue())
    local, central = 0, raw.index(b"PK\x01\x02")
    raw[local + 6] |= flag
    raw[central + 8] |= flag
    if method is not None:
        raw[local + 8:local + 10] = raw[central + 10:central + 12] = method.to_bytes(2, "little")
    if deflate_broken:
        start = local + 30 + len(name)
        raw[start:start + 4] = b"\xff\xff\xff\xff"
    return bytes(raw)


@pytest.mark.parametrize("archive, reason", [
    (zip_with(CASES[0], b"x" * 100, flag=0x1), "Predictions archive refused: it cannot be unpacked (File "),
    (zip_with(CASES[0], b"x" * 100, method=99), "Predictions archive refused: it cannot be unpacked ("),
    (zip_with(CASES[0], b"x" * 100, deflate_broken=True), "Predictions archive refused: it cannot be unpacked ("),
], ids=["encrypted", "unknown method", "broken deflate"])
def test_a_zip_that_cannot_be_unpacked_is_a_failed_result_never_pending(repo, fake, config, data_root, archive,
                                                                         reason):
    folder = predictions_phase(repo, data_root)
    (folder / "masks.zip").write_bytes(archive)
    path = folder / "v1.yml"
    path.write_text(f"phase: validation\npredictions:\n  file: masks.zip\n  sha256: "
                    f"{hashlib.sha256(archive).hexdigest()}\n")
    result = evaluate_predictions(repo, fake, config, path)
    assert result.status == "failed" and result.error.startswith(reason), result.error


def test_a_zip_holding_a_file_and_a_folder_of_one_name_is_refused(repo, fake, config, data_root):
    folder = predictions_phase(repo, data_root)
    path = predictions_file(folder, "masks.zip", {"a": b"x", "a/b.npy": b"y"})
    result = evaluate_predictions(repo, fake, config, path)
    assert (result.status, result.error) == ("failed", "Predictions archive refused: 'a' is a file and also a folder "
                                                       "in the archive")


def test_per_case_outputs_that_clash_are_the_submissions_failure(repo, fake, config):
    """Each case's outputs merge into one folder: a file in one and a folder of that name in the next once
    broke the merge on the host and left the submission pending, every case run again each time."""
    per_case(repo)

    def as_file(mounts: Mapping[str, Path], output: Path) -> None:
        (output / "x").write_bytes(b"1")

    def as_folder(mounts: Mapping[str, Path], output: Path) -> None:
        (output / "x").mkdir()
        (output / "x" / "y").write_bytes(b"2")

    submit(repo, fake, Behaviour(write=as_file), Behaviour(write=as_folder))
    _, reports = evaluate_all(repo, fake, config)
    assert [r.status for r in reports] == ["failed"]
    assert result_of(repo).error == ("Algorithm output refused on case case-001.npy: x is a file in one run's outputs "
                                     "and a folder in another's")


def test_a_predictions_file_that_is_a_link_is_never_read(repo, fake, config, data_root):
    """A link beside the submission (to the hidden labels, or to a file of the runner's checkout) is
    refused by name, and the failure line carries no hash of what it points at."""
    folder = predictions_phase(repo, data_root)
    target = data_root / CHALLENGE / "validation" / "ground-truth" / CASES[0]
    (folder / "masks.zip").symlink_to(target)
    path = folder / "v1.yml"
    path.write_text(f"phase: validation\npredictions:\n  file: masks.zip\n  sha256: {'ab' * 32}\n")
    result = evaluate_predictions(repo, fake, config, path)
    assert (result.status, result.error) == ("failed", "Predictions file 'masks.zip' was not found next to the "
                                                       "submission")
    assert hashlib.sha256(target.read_bytes()).hexdigest() not in json.dumps(result.__dict__, default=str)
    assert fake.runs == []


@pytest.mark.parametrize("name", ["../../../results/validation/bob/v1.json", "sub/masks.zip", "..", ".hidden"])
def test_a_predictions_path_is_refused_before_the_runner_reads_anything(repo, fake, config, data_root, name):
    folder = predictions_phase(repo, data_root)
    path = folder / "v1.yml"
    path.write_text(f"phase: validation\npredictions:\n  file: {name}\n  sha256: {'ab' * 32}\n")
    store = Store(repo)
    with pytest.raises(ModelError, match=r"predictions\.file: name a file in the submission's own folder"):
        store.submission(path)
    assert store.pending() == []  # an invalid file never enters the queue (`challenge check` names it)


# --- logs and GPUs ------------------------------------------------------------------------------


def test_full_logs_stay_on_the_runner_unless_the_phase_is_for_debugging(repo, fake, data_root, tmp_path):
    config = RunnerConfig(data_root=data_root, log_dir=tmp_path / "logs")
    submit(repo, fake, Behaviour(exit_code=1, stdout="step 1\n", stderr="debug detail\nRuntimeError: boom\n"))
    store, _ = evaluate_all(repo, fake, config)
    assert result_of(repo).logs is None
    assert (tmp_path / "logs" / KEY / "algorithm.log").read_text() == "step 1\ndebug detail\nRuntimeError: boom\n"
    phase_file(repo).write_text(phase_file(repo).read_text() + "give_algorithm_editors_job_view_permissions: true\n")
    run_jobs(everything(store), store=store, executor=fake, config=config, rerun=True)
    whole = store.local(store.result_path(everything(store)[0]))  # the public record never has logs
    assert whole is not None and "debug detail" in whole.logs["algorithm"]


def test_gpu_is_assigned_and_its_memory_recorded(repo, data_root):
    fake = FakeExecutor(gpus=("0",))
    fake.add_image(EVALUATION, Behaviour(write=score))
    edit_phase(repo, "algorithm_resources:\n", "algorithm_resources:\n  gpus: 1\n")
    submit(repo, fake, Behaviour(write=threshold, gpu=GpuUsage(max_bytes=3 * MiB, auc_byte_seconds=5.0, samples=9)))
    evaluate_all(repo, fake, RunnerConfig(data_root=data_root, gpu_ids=("0",)))
    result = result_of(repo)
    assert result.status == "succeeded"
    assert (result.algorithm.gpu_memory_max_bytes, result.algorithm.gpu_memory_auc_byte_s) == (3 * MiB, 5.0)
    assert [spec.gpus for spec in fake.runs] == [("0",), ()]  # the evaluation gets none


def test_phase_asking_more_gpus_than_configured_stays_pending(repo, fake, config):
    edit_phase(repo, "algorithm_resources:\n", "algorithm_resources:\n  gpus: 1\n")
    submit(repo, fake, Behaviour(write=threshold))
    store, reports = evaluate_all(repo, fake, config)
    assert reports[0].status == "error" and "configured with 0 (set CHALLENGE_GPUS" in reports[0].detail
    assert len(store.pending()) == 1


# --- the container contract per phase ------------------------------------------------------------


def test_phase_sets_the_paths_the_command_and_how_many_cases_each_run_gets(repo, fake, config):
    phase_file(repo).write_text(phase_file(repo).read_text() + (
        "inference_mode: per-case\ncases_per_run: 2\nalgorithm_input_path: /workspace/inputs\n"
        "algorithm_output_path: /workspace/outputs\nalgorithm_command: sh predict.sh --fast 'a b'\n"))
    seen = []

    def flare(mounts: Mapping[str, Path], output: Path) -> None:
        assert mounts["/workspace/outputs"] == output
        seen.append(sorted(p.name for p in mounts["/workspace/inputs"].iterdir()))
        for path in mounts["/workspace/inputs"].iterdir():
            (output / path.name).write_bytes(b"mask")

    submit(repo, fake, Behaviour(write=flare, wall_time_s=2.0))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert result.status == "succeeded", result.error
    assert seen == [list(CASES[:2]), [CASES[2]]]
    first, _, evaluation = fake.runs
    assert [m.target for m in first.mounts] == ["/workspace/inputs"] and first.output_path == "/workspace/outputs"
    assert first.command == ("sh", "predict.sh", "--fast", "a b")
    assert (evaluation.command, evaluation.output_path) == (None, "/output")  # the evaluation's contract is fixed
    assert list(result.algorithm.cases) == [f"{CASES[0]}..{CASES[1]}", CASES[2]]
    assert result.algorithm.cases[f"{CASES[0]}..{CASES[1]}"]["cases"] == list(CASES[:2])
    assert result.algorithm.aggregates["wall_time_s"]["sum"] == 4.0


@pytest.mark.parametrize("line, message", [
    ("algorithm_command: sh 'predict.sh", "cannot be split into words: No closing quotation"),
    ("algorithm_input_path: workspace/inputs", "is not an absolute folder path"),
    ("algorithm_output_path: /tmp/out", "which the sandbox keeps for itself"),
    ("cases_per_run: 0", "cases_per_run"),
])
def test_a_wrong_contract_is_one_line_naming_the_field(repo, line, message):
    from runner.tree.loading import load_phase
    from runner.tree.located import ModelError
    phase_file(repo).write_text(phase_file(repo).read_text() + line + "\n")
    with pytest.raises(ModelError, match=message):
        load_phase(phase_file(repo), CHALLENGE)


def test_a_gpu_phase_falls_back_to_the_cpu_where_the_runner_allows_and_says_so(repo, fake, data_root):
    edit_phase(repo, "algorithm_resources:\n", "algorithm_resources:\n  gpus: 1\n")
    submit(repo, fake, Behaviour(write=threshold))
    evaluate_all(repo, fake, RunnerConfig(data_root=data_root, cpu_fallback=True))
    result = result_of(repo)
    assert result.status == "succeeded" and result.algorithm.gpu == "none (cpu fallback)"
    assert [spec.gpus for spec in fake.runs] == [(), ()]


def test_the_result_names_the_gpu_a_run_got(repo, data_root):
    fake = FakeExecutor(gpus=("1",))
    fake.add_image(EVALUATION, Behaviour(write=score))
    edit_phase(repo, "algorithm_resources:\n", "algorithm_resources:\n  gpus: 1\n")
    submit(repo, fake, Behaviour(write=threshold))
    evaluate_all(repo, fake, RunnerConfig(data_root=data_root, gpu_ids=("1",), cpu_fallback=True))
    assert result_of(repo).algorithm.gpu == "1"


def test_a_folder_left_read_only_is_emptied_between_runs(repo, fake, config):
    per_case(repo)

    def locked(mounts: Mapping[str, Path], output: Path) -> None:
        threshold(mounts, output)
        (output / "locked").mkdir()
        (output / "locked" / "inside").write_text("x")
        (output / "locked").chmod(0o500)

    submit(repo, fake, Behaviour(write=locked))
    _, reports = evaluate_all(repo, fake, config)
    assert [r.status for r in reports] == ["succeeded"] and len(fake.runs) == 4


def test_a_bug_in_one_submission_leaves_it_pending_and_the_queue_goes_on(repo, fake, config):
    submit(repo, fake, Behaviour(write=threshold))
    submit(repo, fake, Behaviour(write=threshold), image=f"ghcr.io/bob/algo@sha256:{'b' * 64}", participant="bob")
    fake.fail("run", RecursionError("maximum recursion depth exceeded"))  # type: ignore[arg-type]
    store, reports = evaluate_all(repo, fake, config)
    assert [r.status for r in reports] == ["error", "succeeded"]
    assert reports[0].detail == "runner error RecursionError: maximum recursion depth exceeded (left pending)"
    assert len(store.pending()) == 1


# --- grand-challenge's layout ---------------------------------------------------------------------


def gc_cases(data_root: Path) -> None:
    """The hidden inputs as grand-challenge archive items: <case>/images/ct/<case>.mha and <case>/age.json."""
    inputs = data_root / CHALLENGE / PHASE / "inputs"
    for path in list(inputs.iterdir()):
        path.unlink()
        case = path.stem
        (inputs / case / "images" / "ct").mkdir(parents=True)
        (inputs / case / "images" / "ct" / f"{case}.mha").write_bytes(b"scan of " + case.encode())
        (inputs / case / "age.json").write_text("42")


def gc_algorithm(inputs: Mapping[str, Path], output: Path) -> None:
    values = json.loads((inputs["/input"] / "inputs.json").read_text())
    assert sorted(v["socket"]["slug"] for v in values) == ["age", "ct"]
    (output / "images" / "mask").mkdir(parents=True)
    (output / "images" / "mask" / "output.mha").write_bytes(b"mask")
    (output / "volume.json").write_text(json.dumps(json.loads((inputs["/input"] / "age.json").read_text()) + 1))


def gc_evaluation(inputs: Mapping[str, Path], output: Path) -> None:
    """What grand-challenge's example evaluation reads: each job's outputs through predictions.json."""
    jobs = json.loads((inputs["/input"] / "predictions.json").read_text())
    cases = {}
    for job in jobs:
        volume = next(v for v in job["outputs"] if v["interface"]["slug"] == "volume")
        where = inputs["/input"] / job["pk"] / "output" / volume["interface"]["relative_path"]
        name = next(v for v in job["inputs"] if v["socket"]["slug"] == "ct")["image"]["name"]
        cases[name] = {"volume": json.loads(where.read_text()), "value": volume["value"], "took": job["exec_duration"]}
    (output / "metrics.json").write_text(json.dumps({"case": cases, "aggregates": {"dice": {"mean": 1.0}}}))


def test_grand_challenges_layout_with_sockets_read_from_the_data(repo, fake, config, data_root):
    gc_cases(data_root)
    phase_file(repo).write_text(phase_file(repo).read_text() + "algorithm_interface: grand-challenge\n"
                                                               "evaluation_interface: grand-challenge\n")
    fake.add_image(EVALUATION, Behaviour(write=gc_evaluation))
    submit(repo, fake, Behaviour(write=gc_algorithm, wall_time_s=61.5))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert result.status == "succeeded", result.error
    assert result.metrics["case"] == {f"{case}.mha": {"volume": 43, "value": 43, "took": "PT1M1.5S"}
                                      for case in ("case-000", "case-001", "case-002")}
    assert sorted(result.algorithm.cases) == ["case-000", "case-001", "case-002"]
    assert [m.target for m in fake.runs[0].mounts] == ["/input"]


def test_a_grand_challenge_algorithm_scored_by_a_runner_evaluation_gets_a_folder_per_case(repo, fake, config,
                                                                                         data_root):
    gc_cases(data_root)
    phase_file(repo).write_text(phase_file(repo).read_text() + "algorithm_interface: grand-challenge\n")
    seen = []
    fake.add_image(EVALUATION, Behaviour(write=lambda inputs, output: (seen.extend(
        sorted(str(p.relative_to(inputs["/input"])) for p in inputs["/input"].rglob("*") if p.is_file())),
        (output / "metrics.json").write_text('{"aggregates": {"dice": {"mean": 1}}}'))))
    submit(repo, fake, Behaviour(write=gc_algorithm))
    evaluate_all(repo, fake, config)
    assert result_of(repo).status == "succeeded"
    assert seen == [f"case-00{i}/{name}" for i in range(3) for name in ("images/mask/output.mha", "volume.json")]


@pytest.mark.parametrize("writes, reason", [
    ({"volume.json": "1"}, "Output directory 'images/mask' is empty"),
    ({"images/mask/a.mha": "x", "images/mask/b.mha": "y", "volume.json": "1"},
     "Only 1 image should be produced in 'images/mask', we found 2"),
    ({"images/mask/a.mha": "x", "volume.json": "{oops"}, "The output file 'volume.json' is not valid json"),
    ({"images/mask/a.mha": "x"}, "Output file 'volume.json' was not produced"),
])
def test_declared_grand_challenge_outputs_are_checked_after_each_run(repo, fake, config, data_root, writes, reason):
    gc_cases(data_root)
    phase_file(repo).write_text(phase_file(repo).read_text() + (
        "algorithm_interface: grand-challenge\nalgorithm_outputs:\n"
        "  - {slug: mask, relative_path: images/mask}\n  - {slug: volume, relative_path: volume.json}\n"))
    submit(repo, fake, Behaviour(files=writes, wall_time_s=3.0))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert result.error.startswith(f"Algorithm output refused on case case-000: {reason}")
    assert result.algorithm.wall_time_s == 3.0 and result.algorithm.exit_code == 0 and len(fake.runs) == 1


def gc_phase(repo: Path, *, evaluation: bool = True) -> None:
    """grand-challenge's algorithm interface, and its evaluation interface unless `evaluation` is False; the
    sockets read from what each job wrote."""
    phase_file(repo).write_text(phase_file(repo).read_text() + "algorithm_interface: grand-challenge\n" + (
        "evaluation_interface: grand-challenge\n" if evaluation else ""))


def shown_predictions(seen: list[str]) -> Behaviour:
    """An evaluation that keeps predictions.json's text in `seen`."""
    def write(inputs: Mapping[str, Path], output: Path) -> None:
        seen.append((inputs["/input"] / "predictions.json").read_text())
        (output / "metrics.json").write_text('{"aggregates": {"dice": {"mean": 1}}}')
    return Behaviour(write=write)


def test_value_outputs_reach_predictions_json_as_compact_lines(repo, fake, config, data_root):
    gc_cases(data_root)
    gc_phase(repo)
    value = {"boxes": [[[1.5, float("nan"), 10**20]] * 3] * 2, "name": "é 😀", "deep": [[[[[[[[["x"]]]]]]]]]}
    expected = {**value, "boxes": [[[1.5, None, 10**20]] * 3] * 2}  # NaN is null, as grand-challenge stores it
    seen: list[str] = []
    fake.add_image(EVALUATION, shown_predictions(seen))
    submit(repo, fake, Behaviour(files={"found.json": json.dumps(value, indent=4)}))
    evaluate_all(repo, fake, config)
    assert result_of(repo).status == "succeeded", result_of(repo).error
    jobs = json.loads(seen[0])
    values = [next(o["value"] for o in job["outputs"] if o["socket"]["slug"] == "found") for job in jobs]
    assert values == [expected] * 3
    assert len(seen[0].splitlines()) == 2 + len(jobs)  # one compact line a job, not one a number


@pytest.mark.parametrize("evaluation", [True, False], ids=["grand-challenge evaluation", "runner evaluation"])
def test_value_outputs_past_a_jobs_limit_are_refused_before_any_is_parsed(repo, fake, config, data_root, evaluation):
    gc_cases(data_root)
    gc_phase(repo, evaluation=evaluation)
    broken = b"[" + b"0," * (5 * MiB)  # 10 MiB that parsing would take seconds to find unfinished
    fine = b'"' + b"x" * (7 * MiB) + b'"'
    submit(repo, fake, Behaviour(files={"a.json": broken, "b.json": fine}, wall_time_s=2.0))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert result.error == ("Algorithm output refused on case case-000: The output file 'b.json' is too large "
                            "(one job's value outputs may hold 16 MiB of JSON in all)")
    assert result.algorithm.wall_time_s == 2.0 and len(fake.runs) == 1


def test_a_value_is_counted_as_written_not_as_its_file(repo, fake, config, data_root):
    """6 MiB of "é" in a file is 18 MiB as predictions.json writes it (\\u00e9): what is written is bounded."""
    gc_cases(data_root)
    gc_phase(repo)
    submit(repo, fake, Behaviour(files={"name.json": '"' + "é" * (3 * MiB) + '"'}))
    evaluate_all(repo, fake, config)
    assert result_of(repo).error == ("Algorithm output refused on case case-000: The output file 'name.json' is too "
                                     "large (one job's value outputs may hold 16 MiB of JSON in all)")


def test_value_outputs_past_a_submissions_limit_fail_the_job_that_goes_over(repo, fake, config, data_root,
                                                                            monkeypatch):
    monkeypatch.setattr("runner.evaluation.grand_challenge.VALUES_MAX_BYTES", 1 * MiB)
    gc_cases(data_root)
    gc_phase(repo)
    submit(repo, fake, Behaviour(files={"found.json": json.dumps(["x" * 400 * 1024])}))
    evaluate_all(repo, fake, config)
    result = result_of(repo)
    assert result.error == ("Algorithm output refused on case case-002: The output file 'found.json' is too large "
                            "(all jobs' value outputs may hold 1 MiB of JSON in all)")
    assert sorted(result.algorithm.cases) == ["case-000", "case-001", "case-002"]


def test_values_a_runner_evaluation_reads_from_files_count_against_their_job_alone(repo, fake, config, data_root,
                                                                                   monkeypatch):
    monkeypatch.setattr("runner.evaluation.grand_challenge.VALUES_MAX_BYTES", 1 * MiB)
    gc_cases(data_root)
    gc_phase(repo, evaluation=False)
    fake.add_image(EVALUATION, Behaviour(files={"metrics.json": '{"aggregates": {"dice": {"mean": 1}}}'}))
    submit(repo, fake, Behaviour(files={"found.json": json.dumps(["x" * 400 * 1024])}))
    evaluate_all(repo, fake, config)
    assert result_of(repo).status == "succeeded", result_of(repo).error


def test_an_image_gone_upstream_runs_from_the_archive_this_runner_preserved(repo, fake, config, tmp_path):
    image = submit(repo, fake, Behaviour(write=threshold))
    kept = tmp_path / "preserved"
    assert preserve_image(image, executor=fake, folder=kept)
    del fake.images[image]  # deleted upstream, and gone from this runner
    evaluate_all(repo, fake, config)
    assert result_of(repo).status == "failed"  # without the archive: the image cannot be had
    store = Store(repo)
    run_jobs(everything(store), store=store, executor=fake, config=replace(config, preserved_dir=kept), rerun=True)
    assert result_of(repo).status == "succeeded" and fake.loaded


def test_a_preserved_archive_that_is_not_the_saved_image_is_not_used(repo, fake, config, tmp_path):
    image = submit(repo, fake, Behaviour(write=threshold))
    kept = tmp_path / "preserved"
    preserve_image(image, executor=fake, folder=kept)
    sidecar = next(kept.glob("*.json"))
    sidecar.write_text(sidecar.read_text().replace(fake.image_id(image), "sha256:" + "9" * 64))
    del fake.images[image]
    store = Store(repo)
    reports = run_jobs(everything(store), store=store, executor=fake, config=replace(config, preserved_dir=kept))
    assert reports[0].status == "error" and "not the image sha256:999" in reports[0].detail  # left pending


def test_each_stage_records_its_last_stderr_line(repo, fake, config):
    fake.add_image(EVALUATION, Behaviour(write=score, stderr="scored 3 cases\n"))
    submit(repo, fake, Behaviour(write=threshold, stderr="\x1b[31mwrote 3 masks\x1b[0m\n\n"))
    evaluate_all(repo, fake, config)
    result = result_of(repo, whole=True)
    assert result_of(repo).algorithm.last_line is None  # a piece of the logs: only in the runner's copy
    assert result.algorithm and result.algorithm.last_line == "[31mwrote 3 masks[0m"  # control characters gone
    assert result.evaluation and result.evaluation.last_line == "scored 3 cases"


# --- the phase's limit, judged again by when each submission landed --------------------------------


def land(repo: Path, fake: FakeExecutor, behaviour: Behaviour, order: dict[str, int]) -> None:
    """alice's submissions, each landed `order[id]` seconds after the first (outside git: the file's time)."""
    fake.add_image(ALGORITHM, behaviour)
    for sub_id, seconds in order.items():
        path = write_submission(repo, "alice", sub_id, ALGORITHM)
        os.utime(path, (1_780_000_000 + seconds,) * 2)


def test_submissions_past_the_limit_when_they_landed_fail_without_running(repo, fake, config):
    """Pull requests reviewed at once each passed the review against main as it was: the queue evaluates
    the first to land, in whatever order it meets them, and fails the rest without running them."""
    edit_yaml(phase_file(repo), submissions_limit_per_user_per_period=1, submission_limit_period=1)
    land(repo, fake, Behaviour(write=threshold), {"v1": 2, "v2": 3, "v3": 0})
    store, reports = evaluate_all(repo, fake, config)
    assert {r.submission.rpartition("/")[2]: r.status for r in reports} == {"v1": "failed", "v2": "failed",
                                                                           "v3": "succeeded"}
    assert len(fake.runs) == 2  # v3's algorithm and evaluation; nothing of v1's or v2's
    for sub_id in ("v1", "v2"):
        result = store.result(store.submission(store.paths.submission_file(CHALLENGE, PHASE, "alice", sub_id)))
        # v3 came first; v1, failed, does not count where failures do not
        assert result.error.startswith("Not evaluated: phase 'Final test' allows 1 submission per day, and "
                                       "'alice' had 1 before this one when it landed")
        assert result.algorithm is None and result.evaluation is None


def test_a_failed_submission_before_leaves_room_where_failures_do_not_count(repo, fake, config):
    edit_yaml(phase_file(repo), submissions_limit_per_user_per_period=1, submission_limit_period=1)
    land(repo, fake, Behaviour(exit_code=1), {"v1": 0})
    evaluate_all(repo, fake, config)
    fake.add_image(ALGORITHM, Behaviour(write=threshold))
    os.utime(write_submission(repo, "alice", "v2", ALGORITHM), (1_780_000_001,) * 2)
    _, reports = evaluate_all(repo, fake, config)
    assert [r.status for r in reports] == ["succeeded"]
    edit_yaml(phase_file(repo), count_failed_submissions=True)
    os.utime(write_submission(repo, "alice", "v3", ALGORITHM), (1_780_000_002,) * 2)
    _, reports = evaluate_all(repo, fake, config)
    assert [r.status for r in reports] == ["failed"]


# --- registries on the runner's own networks ---------------------------------------------------------


@pytest.mark.parametrize("registry", ["127.0.0.1:5000", "localhost:5000", "169.254.169.254", "10.0.0.1"])
def test_an_image_on_the_runners_own_networks_is_refused_before_any_pull(repo, fake, config, registry):
    """The engine would pull from inside the runner's networks, and the answer would come back in the failure."""
    image = f"{registry}/probe@sha256:{'b' * 64}"
    submit(repo, fake, Behaviour(write=threshold), image=image)
    _, reports = evaluate_all(repo, fake, config)
    assert reports[0].status == "failed" and fake.runs == []
    assert result_of(repo).error == (f"Algorithm image {image}: registry {registry} is a private or local address; "
                                     "push to a public registry")


def test_a_private_registry_the_phase_names_or_a_local_run_is_pulled(repo, fake, config):
    image = submit(repo, fake, Behaviour(write=threshold), image=f"10.0.0.1:5000/algo@sha256:{'b' * 64}")
    edit_yaml(phase_file(repo), allowed_registries=["10.0.0.1:5000"])
    assert [r.status for r in evaluate_all(repo, fake, config)[1]] == ["succeeded"]
    edit_yaml(phase_file(repo), allowed_registries=[])
    write_submission(repo, "alice", "v2", image)
    local = replace(config, allow_local_images=True)
    assert [r.status for r in evaluate_all(repo, fake, local)[1]] == ["succeeded"]


def rerun_all(repo: Path, fake: FakeExecutor, config: RunnerConfig) -> dict[str, str]:
    store = Store(repo)
    reports = run_jobs(everything(store), store=store, executor=fake, config=config, base=FAKE_BASE, rerun=True)
    return {r.submission.rpartition("/")[2]: r.status for r in reports}


def test_a_rerun_keeps_each_verdict_the_limit_gave(repo, fake, config):
    """Judged once: a submission never counts against itself (its result is dated to the second, its file to the
    nanosecond), an evaluated one stays evaluated where the limit was lowered since, a refused one stays refused."""
    edit_yaml(phase_file(repo), submissions_limit_per_user_per_period=2, submission_limit_period=1)
    land(repo, fake, Behaviour(write=threshold), {"v1": 0, "v2": 1, "v3": 2})
    for path in (repo / "challenges" / CHALLENGE / "submissions" / PHASE / "alice").iterdir():
        os.utime(path, ns=(path.stat().st_mtime_ns + 600_000_000,) * 2)  # landed at .6 of a second
    evaluate_all(repo, fake, config)
    assert rerun_all(repo, fake, config) == {"v1": "succeeded", "v2": "succeeded", "v3": "failed"}
    edit_yaml(phase_file(repo), submissions_limit_per_user_per_period=1)
    assert rerun_all(repo, fake, config) == {"v1": "succeeded", "v2": "succeeded", "v3": "failed"}


def test_a_refused_submission_never_counts_where_failures_count(repo, fake, config):
    edit_yaml(phase_file(repo), submissions_limit_per_user_per_period=1, submission_limit_period=1,
              count_failed_submissions=True)
    land(repo, fake, Behaviour(write=threshold), {"v1": 0, "v2": 1})
    store, _ = evaluate_all(repo, fake, config)
    phase = store.phase(CHALLENGE, PHASE)
    assert store.standing(phase, "alice", now=dt.datetime.fromtimestamp(1_780_000_010, dt.UTC)).evaluated == 1
