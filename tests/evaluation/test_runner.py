"""The runner's measurement and bookkeeping: per-case mode, fail fast, reuse, retries, logs, GPUs."""

from __future__ import annotations

import pytest

from runner.errors import Retry
from runner.evaluation.job import RunnerConfig
from runner.evaluation.queue import run_jobs
from runner.execution.measure import Sampler, flare_gpu_summary
from runner.execution.sandbox import RunSpec, SandboxError
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, write_submission

EXAMPLES = REPO / "challenges" / CHALLENGE / "examples"


def set_phase(repo, **fields) -> None:
    path = repo / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml"
    path.write_text(path.read_text() + "".join(f"{k}: {v}\n" for k, v in fields.items()))


@pytest.fixture(scope="module")
def baseline(engine, base_image) -> str:
    return engine.build(EXAMPLES / "baseline", name="challenge-test/baseline", base=base_image)


def run_all(repo, engine, config, base_image, **kwargs):
    store = Store(repo)
    reports = run_jobs(store.pending(), store=store, executor=engine, config=config, base=base_image, **kwargs)
    return store, reports


@pytest.mark.docker
def test_per_case_mode_measures_every_case(repo, engine, data_root, base_image, baseline):
    set_phase(repo, inference_mode="per-case")
    sub = write_submission(repo, "alice", "v1", baseline)
    seen = []
    config = RunnerConfig(data_root=data_root, allow_local_images=True)
    store, reports = run_all(repo, engine, config, base_image, on_case=lambda c, i, n, m: seen.append((c, i, n)))
    assert [r.status for r in reports] == ["succeeded"]
    result = store.result(store.submission(sub))
    cases = result.algorithm.cases
    assert sorted(cases) == ["case-000.npy", "case-001.npy", "case-002.npy"]
    assert seen == [("case-000.npy", 0, 3), ("case-001.npy", 1, 3), ("case-002.npy", 2, 3)]
    for measured in cases.values():
        assert measured["wall_time_s"] > 0 and measured["exit_code"] == 0 and not measured["reused"]
        assert measured["peak_memory_bytes"] > 1024**2  # a Python process with numpy: megabytes
    assert result.algorithm.aggregates["wall_time_s"]["sum"] == pytest.approx(
        sum(c["wall_time_s"] for c in cases.values()))
    assert result.algorithm.wall_time_s == pytest.approx(result.algorithm.aggregates["wall_time_s"]["sum"], abs=0.01)
    assert result.metrics["aggregates"]["dice"]["mean"] > 0  # all three cases reached the evaluation


@pytest.mark.docker
def test_per_case_mode_fails_fast_on_the_first_case(repo, engine, data_root, base_image, behave):
    set_phase(repo, inference_mode="per-case")
    sub = write_submission(repo, "bob", "v1", behave("crash"))
    store, _ = run_all(repo, engine, RunnerConfig(data_root=data_root, allow_local_images=True), base_image)
    result = store.result(store.submission(sub))
    assert result.error == ("Algorithm failed on case case-000.npy: "
                            "RuntimeError: model weights not found at /opt/model.pt")
    assert list(result.algorithm.cases) == ["case-000.npy"]
    assert result.evaluation is None


@pytest.mark.docker
def test_rerun_reuses_stored_outputs(repo, engine, data_root, base_image, baseline, tmp_path):
    set_phase(repo, inference_mode="per-case")
    sub = write_submission(repo, "alice", "v1", baseline)
    config = RunnerConfig(data_root=data_root, allow_local_images=True, cache_dir=tmp_path / "cache")
    store, _ = run_all(repo, engine, config, base_image)
    first = store.result(store.submission(sub))
    reports = run_jobs([store.submission(sub)], store=store, executor=engine, config=config, base=base_image,
                       rerun=True)
    again = store.result(store.submission(sub))
    assert reports[0].status == "succeeded"
    assert again.algorithm.reused and all(c["reused"] for c in again.algorithm.cases.values())
    assert again.metrics == first.metrics  # re-scored from the stored outputs


@pytest.mark.docker
def test_transient_engine_failure_is_retried_with_backoff(repo, engine, data_root, base_image, baseline):
    class Flaky:
        """The real engine, except that the engine 'hiccups' on the first run."""
        def __init__(self):
            self.failures = 1

        def __getattr__(self, name):
            return getattr(engine, name)

        def run(self, spec, output=None):
            if self.failures:
                self.failures -= 1
                raise SandboxError("starting the container: 500 Server Error", transient=True)
            return engine.run(spec, output)

    sub = write_submission(repo, "alice", "v1", baseline)
    waits = []
    store, reports = run_all(repo, Flaky(), RunnerConfig(data_root=data_root, allow_local_images=True), base_image,
                             retry=Retry(attempts=3, first=0.5, sleep=waits.append))
    assert [r.status for r in reports] == ["succeeded"] and waits == [0.5]
    assert store.result(store.submission(sub)).attempts == 2


@pytest.mark.docker
def test_debug_phase_shows_full_logs_others_only_the_last_line(repo, engine, data_root, base_image, behave, tmp_path):
    config = RunnerConfig(data_root=data_root, allow_local_images=True, log_dir=tmp_path / "logs")
    sub = write_submission(repo, "bob", "v1", behave("crash"))
    store, _ = run_all(repo, engine, config, base_image)
    result = store.result(store.submission(sub))
    assert result.logs is None
    log = tmp_path / "logs" / CHALLENGE / PHASE / "bob" / "v1" / "algorithm.log"
    assert "debug detail that is not the reason" in log.read_text()
    set_phase(repo, give_algorithm_editors_job_view_permissions="true")
    run_jobs([store.submission(sub)], store=store, executor=engine, config=config, base=base_image, rerun=True)
    result = store.local(store.result_path(store.submission(sub)))  # the public record never has logs
    assert "debug detail that is not the reason" in result.logs["algorithm"]


@pytest.mark.docker
def test_gpu_request_reaches_the_engine(engine, behave):
    """This machine has no GPU: the engine refusing the device request proves it was passed on."""
    with pytest.raises(SandboxError, match=r"(?i)gpu|device driver"):
        engine.run(RunSpec(image=behave("noop"), gpus=("0",)))


@pytest.mark.docker
def test_phase_asking_more_gpus_than_configured_stays_pending(repo, engine, data_root, base_image, baseline):
    path = repo / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml"
    path.write_text(path.read_text().replace("algorithm_resources:\n", "algorithm_resources:\n  gpus: 1\n"))
    write_submission(repo, "alice", "v1", baseline)
    store, reports = run_all(repo, engine, RunnerConfig(data_root=data_root, allow_local_images=True), base_image)
    assert reports[0].status == "error" and "configured with 0 (set CHALLENGE_GPUS" in reports[0].detail
    assert len(store.pending()) == 1


def test_flare_gpu_memory_convention():
    # ../shared/reference/README.md, FLARE: the maximum is the largest sample seen in more than 2%
    # of samples (a one-off spike is ignored); the AUC is the sum of samples x 0.1 s.
    samples = [1000] * 50 + [3000] * 49 + [9000]
    usage = flare_gpu_summary(samples)
    assert usage.max_bytes == 3000
    assert usage.auc_byte_seconds == pytest.approx(sum(samples) * 0.1)
    assert flare_gpu_summary([]) is None


def test_sampler_reads_until_stopped():
    values = iter(range(1000))
    with Sampler(lambda: next(values), 0.01) as sampler:
        import time
        time.sleep(0.1)
    assert len(sampler.samples) >= 3 and sampler.samples == sorted(sampler.samples)


@pytest.mark.docker
def test_unknown_runtime_is_a_runner_error_not_a_failed_submission(repo, engine, data_root, base_image, baseline):
    write_submission(repo, "alice", "v1", baseline)
    config = RunnerConfig(data_root=data_root, allow_local_images=True, runtime="runsc-not-installed")
    store, reports = run_all(repo, engine, config, base_image)
    assert reports[0].status == "error" and "runsc-not-installed" in reports[0].detail
    assert len(store.pending()) == 1
