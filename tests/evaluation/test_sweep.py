"""What dead runners leave is swept; the output cache stays within its size and age (no engine needed)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import replace

from runner.evaluation.cache import OutputCache, folder_size
from runner.evaluation.job import WORK_PREFIX, RunnerConfig
from runner.evaluation.metrics import MAX_DEPTH, UnreadableJson, read_json
from runner.evaluation.sweep import sweep, sweep_work_dirs
from runner.execution.sandbox import Mount, RunSpec, last_line
from tests.fake_executor import FakeExecutor

KIB = 1024


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_scratch_folders_of_dead_runners_are_removed_and_live_ones_kept(tmp_path):
    dead = tmp_path / f"{WORK_PREFIX}{dead_pid()}-abc"
    live = tmp_path / f"{WORK_PREFIX}{os.getpid()}-def"
    old, recent = tmp_path / f"{WORK_PREFIX}x1y2z3", tmp_path / f"{WORK_PREFIX}a1b2c3"  # from before pids were kept
    for folder in (dead, live, old, recent):
        (folder / "produced").mkdir(parents=True)
        (folder / "produced" / "case.npy").write_bytes(b"x")
    os.utime(old, (time.time() - 3 * 86400,) * 2)
    assert sweep_work_dirs(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, recent.name])


def entry(cache: OutputCache, name: str, size: int, *, age_s: float = 0) -> str:
    outputs = cache.root.parent / f"out-{name}"
    outputs.mkdir()
    (outputs / "case.npy").write_bytes(b"x" * size)
    key = OutputCache.key(f"sha256:{name}", outputs, RunSpec(image=name))
    assert cache.put(key, outputs, record={"wall_time_s": 1.0})
    record = cache.root / key[:2] / key / "record.json"
    os.utime(record, (time.time() - age_s,) * 2)
    return key


def test_cache_evicts_expired_entries_then_the_least_recently_used(tmp_path):
    cache = OutputCache(tmp_path / "cache", max_bytes=100 * KIB, max_age_s=3600)
    entry(cache, "a", 8 * KIB, age_s=7200)  # expired (sizes in whole 4 KiB blocks: what a disk gives)
    oldest = entry(cache, "b", 20 * KIB, age_s=600)
    used = entry(cache, "c", 20 * KIB, age_s=500)
    newest = entry(cache, "d", 20 * KIB, age_s=10)
    cache.get(used, tmp_path / "reused")  # reusing an entry makes it recent
    assert cache.evict() == 8 * KIB  # only the expired one: the rest fit
    assert {e.path.name for e in cache.entries()} == {oldest, used, newest}
    later = [entry(cache, "e", 24 * KIB), entry(cache, "f", 24 * KIB)]  # 108 KiB in all
    assert cache.evict() == 20 * KIB  # the least recently used goes, not the older one reused since
    assert {e.path.name for e in cache.entries()} == {used, newest, *later}


def test_outputs_larger_than_a_quarter_of_the_cache_are_not_kept(tmp_path):
    cache = OutputCache(tmp_path / "cache", max_bytes=100 * KIB)
    outputs = tmp_path / "big"
    outputs.mkdir()
    (outputs / "junk.bin").write_bytes(b"x" * 30 * KIB)  # 600 MB of extra output, in the report
    assert not cache.put(OutputCache.key("sha256:x", outputs, RunSpec(image="x")), outputs, record={})
    assert cache.entries() == []


def test_a_staging_folder_left_by_a_killed_runner_is_swept(tmp_path):
    cache = OutputCache(tmp_path / "cache")
    staging = cache.root / "ab" / ".tmp-killed"
    staging.mkdir(parents=True)
    os.utime(staging, (time.time() - 7200,) * 2)
    cache.evict()
    assert not staging.exists()


def test_the_queue_sweeps_when_it_starts(tmp_path):
    fake = FakeExecutor()
    fake.orphans = 3
    (tmp_path / "work" / f"{WORK_PREFIX}{dead_pid()}-x").mkdir(parents=True)
    lines: list[str] = []
    swept = sweep(fake, RunnerConfig(data_root=tmp_path, work_dir=tmp_path / "work"), log=lines.append)
    assert (swept.runs_and_areas, swept.folders) == (3, 1) and fake.orphans == 0
    assert lines and "dead runners" in lines[0]


def test_error_line_is_cut_to_300_characters_without_control_characters():
    line = last_line(["ok", "\x1b[31mValueError: " + "x" * 1000 + "\x07", "   "])
    assert line is not None and len(line) == 300 and line.startswith("[31mValueError: xxx")
    assert "\x1b" not in line and "\x07" not in line


def test_json_that_would_crash_a_reader_is_refused_with_one_line(tmp_path):
    cases = {"deep": "[" * 100_000 + "]" * 100_000, "deep-but-parseable": "[" * 900 + "]" * 900,
             "wide": "7" * 5000, "fine": json.dumps({"a": [[1.5, float("nan")]], "n": 10**20}),
             "far": "[1e400, -1e400, [1e308]]"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    for name in ("deep", "deep-but-parseable"):
        try:
            read_json(tmp_path / name, name=name)
        except UnreadableJson as exc:
            assert str(exc) == f"{name} is nested more than {MAX_DEPTH} levels deep"
        else:
            raise AssertionError(f"{name} was accepted")
    try:
        read_json(tmp_path / "wide", name="wide")
    except UnreadableJson as exc:
        assert str(exc) == "wide holds an integer of 5000 digits (at most 30)"
    assert read_json(tmp_path / "fine", name="fine") == {"a": [[1.5, None]], "n": 10**20}
    assert read_json(tmp_path / "far", name="far") == [None, None, [1e308]]  # past a float's range: null, as NaN


def test_runner_options_read_sizes_and_keys(tmp_path, monkeypatch):
    import argparse

    import pytest

    from runner.cli.common import UsageError
    from runner.cli.evaluate import runner_identity
    from runner.settings import Settings, size
    from runner.tree.sealing import new_identity

    def identity(file=None, env=None):  # --runner-key FILE, else $CHALLENGE_RUNNER_KEY
        args = argparse.Namespace(runner_key=file)
        return runner_identity(Settings.of(args, env={"CHALLENGE_RUNNER_KEY": env} if env else {}, cwd=tmp_path))

    assert (size("20g"), size("512m"), size("2048")) == (20 * 1024**3, 512 * 1024**2, 2048)
    with pytest.raises(argparse.ArgumentTypeError, match="expected a size such as 512m or 2g"):
        size("lots")
    secret, _ = new_identity()
    assert identity() == ()
    assert len(identity(env=secret)) == 1
    (tmp_path / "runner.key").write_text(f"# created: today\n{secret}\n")
    assert len(identity(tmp_path / "runner.key", env="not a key")) == 1
    with pytest.raises(UsageError, match="CHALLENGE_RUNNER_KEY holds no age identity"):
        identity(env="not a key")


def test_outputs_are_reused_only_by_a_run_under_the_same_conditions(tmp_path):
    """Not by a phase with a shorter time limit, another command or fewer GPUs: their outputs and times would
    be taken for this run's. The host folders' names do not count."""
    inputs, moved = tmp_path / "in", tmp_path / "elsewhere"
    inputs.mkdir()
    (inputs / "case.npy").write_bytes(b"x")
    spec = RunSpec(image="sha256:a", mounts=(Mount(inputs, "/input"),), time_limit=300, command=("predict",))
    key = OutputCache.key("sha256:a", inputs, spec)
    inputs.rename(moved)
    assert OutputCache.key("sha256:a", moved, replace(spec, mounts=(Mount(moved, "/input"),), job="x/y/z/v2")) == key
    for other in ({"time_limit": 60}, {"command": ("train",)}, {"gpus": ("0",)}, {"memory": 1024**3},
                  {"mounts": (Mount(moved, "/opt/input"),)}):
        assert OutputCache.key("sha256:a", moved, replace(spec, **other)) != key, other


def test_a_cache_entry_counts_every_entry_it_holds_on_disk(tmp_path):
    """Empty folders take blocks and inodes: 1,000 of them count as 4 MiB, not as nothing."""
    outputs = tmp_path / "out"
    for i in range(1000):
        (outputs / f"d{i}").mkdir(parents=True)
    assert folder_size(outputs) == 1000 * 4096
