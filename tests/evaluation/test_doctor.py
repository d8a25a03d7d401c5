"""`challenge doctor` on this host's real engine (no GPU here: one line naming the phases it blocks, and
exit 1 unless --cpu-fallback), the hidden data's permissions as a container run as 65534 meets them,
disk thresholds, keys and registries; the fake executor plays an engine that is down and a GPU host."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from runner.cli import main
from runner.evaluation.doctor import (
    CONTAINER_GID,
    DATA_PERMISSIONS,
    GPU_PROBE,
    DiskFloor,
    Host,
    data_checks,
    data_key_check,
    disk_checks,
    examine,
    failed,
    registry_checks,
    runner_key_check,
    sealing_checks,
)
from runner.evaluation.examples import make_hidden_data
from runner.evaluation.job import RunnerConfig
from runner.evaluation.provenance import data_key
from runner.execution.docker_engine import DockerEngine
from runner.execution.sandbox import NOBODY, Mount, RunSpec, SandboxError
from runner.tree.sealing import identity, new_identity
from runner.tree.store import Store
from tests.fake_executor import FakeExecutor
from tests.helpers import CHALLENGE, PHASE, REPO, edit_yaml, nvml_readable, phase_file, write_submission

GPU_PHASE = "abdominal-organs/test"  # the one example phase with algorithm_resources.gpus: 1
GUIDE = REPO / "challenges" / "organizers.md"


no_nvml = pytest.mark.skipif(nvml_readable(), reason="this host has NVML: the no-GPU lines cannot be seen here")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving files to group 65534 needs root")


def guide_permissions(root: Path) -> None:
    """The organizers' guide's command, run as written."""
    subprocess.run(DATA_PERMISSIONS.format(gid=CONTAINER_GID, root=root), shell=True, check=True)


@pytest.fixture(scope="module")
def hidden(tmp_path_factory) -> Path:
    """Every example phase's hidden data, its permissions set as the organizers' guide says."""
    if os.geteuid() != 0:
        pytest.skip("giving files to group 65534 needs root")
    root = tmp_path_factory.mktemp("hidden")
    make_hidden_data(Store(REPO), root)
    guide_permissions(root)
    return root


def doctor(capsys, *options: str) -> tuple[int, list[str]]:
    status = main(["--root", str(REPO), "doctor", *options])
    return status, capsys.readouterr().out.splitlines()


def phase_data(root: Path) -> Path:
    """The example phase's folders with one case each, as the runner's layout wants them."""
    folder = root / CHALLENGE / PHASE
    for sub in ("inputs", "ground-truth"):
        (folder / sub).mkdir(parents=True)
        (folder / sub / "case-000.npy").write_bytes(b"\x00" * 64)
    return folder


def host(tmp_path: Path, **config) -> Host:
    return Host(config=RunnerConfig(data_root=tmp_path / "data", cache_dir=tmp_path / "state" / "cache", **config),
                state_dir=tmp_path / "state")


# --- the real engine, no GPU ------------------------------------------------------------------------


@no_nvml
def test_no_gpu_is_one_line_naming_the_phases_it_blocks(docker_client, hidden, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CHALLENGE_STATE_DIR", str(tmp_path / "state"))
    data_key(hidden)  # as the first evaluation makes it
    status, lines = doctor(capsys, "--data-root", str(hidden))
    gpu = [line for line in lines if "gpu" in line.split(":")[0] or "nvidia" in line]
    assert len(gpu) == 1 and gpu[0].startswith("fail gpu: no GPU is visible on this host (NVML cannot be read")
    assert f"it blocks {GPU_PHASE}. Fix: " in gpu[0] and "--cpu-fallback" in gpu[0]
    assert status == 1  # those phases cannot run here: a failure, not a warning
    assert lines[0].startswith("ok   engine: Docker ")
    assert [line for line in lines[1:-1] if not line.startswith("ok ")] == gpu  # all else is ready
    assert lines[-1].startswith("1 failed, 0 warning(s), ")

    status, lines = doctor(capsys, "--data-root", str(hidden), "--cpu-fallback")
    assert status == 0  # they run on the CPU, and their results say so
    assert next(line for line in lines if not line.startswith("ok ")).startswith(
        f"warn gpu: no GPU is visible (NVML cannot be read: NVML Shared Library Not Found): {GPU_PHASE} run on the CPU")


def test_the_guide_tells_admins_what_the_doctor_checks():
    guide = GUIDE.read_text()
    assert DATA_PERMISSIONS.format(gid=CONTAINER_GID, root="/srv/challenge-data").replace(" && ", "\n") in guide
    assert "challenge doctor" in guide and "`challenge doctor`" in (REPO / "README.md").read_text()


# --- hidden data: what a container run as 65534 reads ------------------------------------------------


def can_read(engine, base_image: str, folder: Path) -> bool:
    """Whether a container run by the runner (as NOBODY, no capabilities) reads everything in `folder`."""
    probe = "test -z \"$(find /data ! -readable)\" && find /data -type f -exec cat {} + >/dev/null"
    outcome = engine.run(RunSpec(image=base_image, mounts=(Mount(folder, "/data"),), command=("sh", "-c", probe),
                                 time_limit=60))
    return outcome.ok


@as_root
@pytest.mark.parametrize(("spoil", "status", "said"), [
    (None, "ok", "2 file(s), readable by the containers' user 65534:65534, written by their owner alone"),
    ("chmod o+w {folder}/ground-truth/case-000.npy", "fail",
     "{folder}/ground-truth/case-000.npy is writable by others than its owner"),
    ("chmod g-r {folder}/inputs/case-000.npy", "fail",
     "{folder}/inputs/case-000.npy is not readable by the containers' user 65534:65534"),
    ("chmod g-x {folder}/inputs", "fail", "{folder}/inputs is not readable by the containers' user 65534:65534"),
    ("chmod o+w {root}", "fail", "{root} is writable by others than its owner"),
    ("chmod -R o+rX {root}", "warn", "{folder} is readable by every user of this host (and 4 more)"),
], ids=["guide", "world-writable", "unreadable-by-65534", "folder-closed-to-65534", "root-world-writable",
        "world-readable"])
def test_hidden_data_permissions(engine, base_image, tmp_path, spoil, status, said):
    root = tmp_path / "data"
    folder = phase_data(root)
    guide_permissions(root)
    if spoil:
        subprocess.run(spoil.format(folder=folder, root=root), shell=True, check=True)
    phase = Store(REPO).phase(CHALLENGE, PHASE)
    check, _key = data_checks([phase], host(tmp_path).config)
    assert (check.status, check.detail) == (status, said.format(folder=folder, root=root))
    assert check.fix == ("" if status == "ok" else f"chgrp -R 65534 {root} && chmod -R u=rwX,g=rX,o= {root}")
    assert can_read(engine, base_image, folder) == ("not readable" not in check.detail)  # as a container sees it


def test_missing_hidden_data_names_the_folder(tmp_path):
    (phase_data(tmp_path / "data") / "ground-truth" / "case-000.npy").unlink()
    shutil.rmtree(tmp_path / "data" / CHALLENGE / PHASE / "ground-truth")
    phases = list(Store(REPO).phases(CHALLENGE).values())
    checks = {c.name: c for c in data_checks(phases, host(tmp_path).config)}
    assert [c.status for c in checks.values()] == ["fail", "fail", "warn"]  # the data key is not made yet
    truth = tmp_path / "data" / CHALLENGE / PHASE / "ground-truth"
    assert checks[f"data {CHALLENGE}/{PHASE}"].detail == f"hidden data missing on this runner: {truth} is not a folder"
    [root] = data_checks(phases, replace(host(tmp_path).config, data_root=tmp_path / "none"))
    assert (root.name, root.status) == ("data", "fail") and "is not a folder" in root.detail


def test_the_data_key_is_checked_before_a_runner_needs_it(tmp_path):
    config = replace(host(tmp_path).config, data_root=tmp_path)
    key = tmp_path / ".manifest-key"
    assert data_key_check(config).status == "warn"  # made by the first evaluation
    data_key(tmp_path)
    assert (data_key_check(config).status, key.stat().st_mode & 0o777) == ("ok", 0o600)
    key.chmod(0o644)
    check = data_key_check(config)
    assert (check.status, check.fix) == ("warn", f"chmod o= {key}")
    key.write_text("not hex\n")
    check = data_key_check(config)
    assert check.status == "fail" and "not a readable hashing key" in check.detail and "token_hex" in check.fix


# --- disk ---------------------------------------------------------------------------------------


def test_disk_thresholds(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    below = [DiskFloor(warn=2 * free, fail=2 * free), DiskFloor(warn=2 * free, fail=1), DiskFloor(warn=1, fail=1)]
    seen = [[c.status for c in disk_checks(replace(host(tmp_path), disk=floor))] for floor in below]
    assert seen == [["fail", "fail"], ["warn", "warn"], ["ok", "ok"]]  # the cache and the state folder, not yet made
    fail = disk_checks(replace(host(tmp_path), disk=below[0]))[0]
    assert fail.name == "disk cache" and f"free for {tmp_path}/state/cache, under " in fail.detail
    assert "--cache-dir" in fail.fix


def test_default_disk_floor_is_an_archive_to_warn_and_a_job_to_fail():
    from runner.evaluation.job import ARCHIVE_MAX_BYTES

    assert DiskFloor() == DiskFloor(warn=ARCHIVE_MAX_BYTES, fail=4 * 1024**3)


# --- keys and registries ------------------------------------------------------------------------


def encrypted_submission(repo: Path) -> None:
    path = write_submission(repo, "alice", "v1", "unused")
    path.write_text(f"phase: {PHASE}\nimage_archive:\n  url: https://example.org/algo.tar.age\n"
                    f"  sha256: \"{'a' * 64}\"\n  encrypted: true\n")


def test_a_missing_runner_key_fails_where_submissions_are_encrypted_to_it(repo, tmp_path):
    store = Store(repo)
    assert runner_key_check(store, host(tmp_path).config).status == "ok"  # nothing needs it yet
    encrypted_submission(repo)
    check = runner_key_check(store, host(tmp_path).config)
    assert check.status == "fail"
    assert check.detail == (f"1 pending submission(s) of {CHALLENGE}/{PHASE} are image archives encrypted to the "
                            "runner's key, and this runner has none: they stay pending here")
    assert "--runner-key FILE, or CHALLENGE_RUNNER_KEY" in check.fix
    keyed = replace(host(tmp_path).config, runner_keys=(identity(new_identity()[0]),))
    assert runner_key_check(store, keyed).status == "ok"


def test_withheld_results_need_someone_to_seal_to(repo):
    edit_yaml(phase_file(repo), blind=True)
    store = Store(repo)
    phases = [p for slug in store.slugs() for p in store.phases(slug).values()]
    checks = {c.name: c for c in sealing_checks(store, phases)}
    assert checks["sealing lesion-training"].status == "ok"
    nobody = checks[f"sealing {CHALLENGE}"]
    assert nobody.status == "warn" and "names nobody to seal them to" in nobody.detail
    assert "`challenge keys new`" in nobody.fix


def test_registries_phases_name_need_a_login(repo, tmp_path, monkeypatch):
    edit_yaml(phase_file(repo), allowed_registries=["ghcr.io"],
              evaluation_image="registry.example.org/org/eval@sha256:" + "b" * 64)
    phases = list(Store(repo).phases(CHALLENGE).values())
    fake = registry_checks(phases, FakeExecutor(credentials={"ghcr.io": True, "registry.example.org": None}))
    assert [(c.name, c.status) for c in fake] == [("registry ghcr.io", "ok"), ("registry registry.example.org", "warn")]
    # Docker's client configuration, as its pulls read it
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"auths": {"ghcr.io": {"auth": "dTpw"}}}))
    docker = registry_checks(phases, DockerEngine())
    assert [(c.name, c.status) for c in docker] == [(c.name, c.status) for c in fake]
    assert docker[1].detail.startswith(f"not logged in: private images of {CHALLENGE}/{PHASE} cannot be pulled")
    assert docker[1].fix.startswith("docker login registry.example.org ")


# --- the fake executor: an engine down, a GPU host -------------------------------------------------


def test_an_engine_that_is_down_fails_and_the_rest_is_still_checked(tmp_path):
    executor = FakeExecutor()
    executor.fail("describe", SandboxError("cannot reach the Docker engine: connection refused", transient=True))
    phase_data(tmp_path / "data")
    gpu_host = replace(host(tmp_path, gpu_ids=("0",)), gpus_seen=lambda: {"0": "NVIDIA H100"})
    checks = examine(Store(REPO), executor, gpu_host)
    engine = checks[0]
    assert (engine.name, engine.status) == ("engine", "fail") and "connection refused" in engine.detail
    assert "systemctl start docker" in engine.fix and failed(checks)
    assert not executor.runs  # no container was tried on an engine that does not answer
    assert {"disk cache", "disk state", "runner key", "registries", f"data {CHALLENGE}/{PHASE}"} <= {
        c.name for c in checks}


def gpu_lines(tmp_path: Path, executor: FakeExecutor, **config) -> list[tuple[str, str, str]]:
    gpu_host = replace(host(tmp_path, **config), gpus_seen=lambda: {"0": "NVIDIA H100 80GB HBM3"})
    checks = examine(Store(REPO), executor, gpu_host)
    return [(c.name, c.status, c.detail) for c in checks if "gpu" in c.name or "nvidia" in c.name]


def test_a_gpu_host_sees_its_gpu_in_a_container_run_the_runners_way(tmp_path):
    executor = FakeExecutor(gpus=("0",), runtimes=("nvidia", "runc"))
    assert [line[:2] for line in gpu_lines(tmp_path, executor, gpu_ids=("0",))] == [
        ("gpu", "ok"), ("nvidia runtime", "ok"), ("gpu in a container", "ok")]
    [probe] = executor.runs
    assert (probe.command, probe.gpus, probe.user.user) == (GPU_PROBE, ("0",), NOBODY)  # the sandbox participants get


def test_a_gpu_the_container_cannot_see_fails_with_the_toolkits_fix(tmp_path):
    lines = gpu_lines(tmp_path, FakeExecutor(), gpu_ids=("0",))
    assert [line[:2] for line in lines] == [("gpu", "ok"), ("nvidia runtime", "warn"), ("gpu in a container", "fail")]
    assert "could not select device driver" in lines[2][2]


def test_a_gpu_host_whose_runner_is_given_none(tmp_path):
    [(name, status, detail)] = gpu_lines(tmp_path, FakeExecutor(gpus=("0",)))
    assert (name, status) == ("gpu", "fail") and detail.startswith(f"{GPU_PHASE}: the phase asks for 1 GPU(s)")
    [(name, status, detail)] = gpu_lines(tmp_path, FakeExecutor(gpus=("0",)), gpu_ids=("3",))
    assert status == "fail" and detail.startswith("the runner is given GPU 3, which NVML does not see")
