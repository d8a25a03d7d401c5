"""A warm runner's job runs with its client's folder, variables and output passed to it (`common.Job`):
two jobs at once each see their own, and this process's environment, folder and consoles stay as they were."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

from runner.cli import common, warm


def served(runner: warm.WarmRunner, argv: list[str], cwd: Path, env: dict[str, str]) -> list[dict]:
    """One client's request, served on this thread; the runner's replies."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(json.dumps({"argv": argv, "cwd": str(cwd), "env": env}).encode() + b"\n")
        runner.serve(theirs)
        theirs.shutdown(socket.SHUT_WR)
        return [json.loads(line) for line in ours.makefile("r")]


def test_two_jobs_at_once_see_their_own_folder_variables_and_output(tmp_path, monkeypatch):
    monkeypatch.setenv("CHALLENGE_GPUS", "7")  # this process's: neither job has it
    monkeypatch.delenv("CHALLENGE_DATA_ROOT", raising=False)
    before = (dict(os.environ), os.getcwd(), common.out.file, common.err.file)
    both_inside = threading.Barrier(2, timeout=30)
    seen: dict[str, tuple] = {}

    def evaluate_job(args, *, job, warm):
        settings = job.settings(args)
        both_inside.wait()  # the other job is running too
        seen[job.cwd.name] = (settings.data_root, settings.gpus, settings.state(job.cwd / args.root),
                              (dict(os.environ), os.getcwd(), common.out.file, common.err.file) == before)
        job.out.print(f"evaluated in {job.cwd.name}", markup=False)
        job.err.print(f"progress of {job.cwd.name}", markup=False)
        return 0

    monkeypatch.setattr(warm, "evaluate_job", evaluate_job)
    runner = warm.WarmRunner(open_executor=lambda settings, *, root, gpus, log: (None, "base"))
    replies: dict[str, list[dict]] = {}
    jobs = {"a": {"CHALLENGE_DATA_ROOT": "data", "CHALLENGE_STATE_DIR": "state", "CHALLENGE_GPUS": "0"},
            "b": {"CHALLENGE_DATA_ROOT": str(tmp_path / "hidden"), "HOME": "/not/forwarded"}}
    for name in jobs:
        (tmp_path / name).mkdir()
    threads = [threading.Thread(target=lambda n=name, e=env: replies.__setitem__(
        n, served(runner, ["evaluate", "--pending"], tmp_path / n, e))) for name, env in jobs.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert seen == {"a": (tmp_path / "a" / "data", ("0",), (tmp_path / "a" / "state").resolve(), True),
                    "b": (tmp_path / "hidden", (), (tmp_path / "b" / "build").resolve(), True)}
    for name in jobs:
        assert replies[name] == [{"out": f"evaluated in {name}\n"}, {"err": f"progress of {name}\n"}, {"exit": 0}]
    assert (dict(os.environ), os.getcwd(), common.out.file, common.err.file) == before


def test_a_job_s_usage_error_goes_to_its_client_not_to_this_process(tmp_path, capsys):
    replies = served(warm.WarmRunner(), ["evaluate", "--pending", "--shard", "3/2"], tmp_path, {})
    assert replies[-1] == {"exit": 2}
    assert "".join(r.get("err", "") for r in replies).strip().endswith("'3/2' is not I/N with 1 <= I <= N")
    assert capsys.readouterr() == ("", "")


def test_a_job_whose_folder_is_gone_is_one_line(tmp_path):
    replies = served(warm.WarmRunner(), ["evaluate", "--pending"], tmp_path / "gone", {})
    assert replies[-1] == {"exit": 1}
    assert replies[0]["err"].startswith("error: the warm runner could not run this job: FileNotFoundError")
