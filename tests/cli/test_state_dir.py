"""A runner host keeps what outlives a workflow job (whose checkout is cleaned) in CHALLENGE_STATE_DIR."""

from __future__ import annotations

from runner.cli import parser
from runner.cli.common import open_store, settings_here
from runner.cli.evaluate import runner_config
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, add_result, edit_yaml, phase_file


def config_for(repo, tmp_path, *extra: str):
    argv = ["--root", str(repo), "evaluate", "--pending", "--data-root", str(tmp_path), *extra]
    return runner_config(settings_here(parser(argv).parse_args(argv)), Store(repo))


def test_the_state_folder_holds_cache_logs_training_and_preserved_images(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("CHALLENGE_STATE_DIR", str(tmp_path / "state"))
    config = config_for(repo, tmp_path)
    assert (config.cache_dir, config.log_dir, config.training_dir, config.preserved_dir) == tuple(
        (tmp_path / "state" / name).resolve() for name in ("cache", "logs", "training", "preserved"))
    assert config_for(repo, tmp_path, "--training-dir", str(tmp_path / "t")).training_dir == (tmp_path / "t").resolve()


def test_without_it_the_checkout_s_build_folder(repo, tmp_path, monkeypatch):
    monkeypatch.delenv("CHALLENGE_STATE_DIR", raising=False)
    assert config_for(repo, tmp_path).training_dir == (repo / "build" / "training").resolve()


def test_a_job_s_runs_name_its_own_checkout_not_the_runner_s_folder(repo, tmp_path):
    """A warm runner's jobs each come from a checkout of their own; the runs' CHECKOUT label says which."""
    assert config_for(repo, tmp_path).checkout == Store(repo).root


def test_whole_results_and_locks_are_kept_in_the_state_folder(repo, tmp_path, monkeypatch):
    """actions/checkout cleans the checkout for every job: a whole result kept under its build/withheld/
    was lost with it. A runner host keeps them in its state folder, where every command looks."""
    monkeypatch.setenv("CHALLENGE_STATE_DIR", str(tmp_path / "state"))
    store = open_store(repo, settings_here())
    assert (store.withheld, store.locks) == ((tmp_path / "state" / "withheld").resolve(),
                                             (tmp_path / "state" / "locks").resolve())
    edit_yaml(phase_file(repo), blind=True)
    add_result(repo, "alice", "v1", 0.8)  # written by a store of the checkout's own build/ (the default)
    moved = repo / "build" / "withheld"
    store.withheld.parent.mkdir(parents=True)
    moved.rename(store.withheld)
    [result] = open_store(repo, settings_here()).results(CHALLENGE, PHASE)
    assert result.metrics["aggregates"]["dice"]["mean"] == 0.8 and not moved.exists()
