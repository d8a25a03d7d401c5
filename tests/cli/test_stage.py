"""Long steps say what runs and how long it took: `stage()` on a terminal (a spinner with the time
elapsed) and not (plain lines for logs), and the stages `challenge demo` and `challenge try` show."""

from __future__ import annotations

import io
import json
import re
import shutil

import pytest
from rich.console import Console

from runner.cli import main
from runner.cli.common import stage
from runner.cli.tree import files_read
from runner.tree.check import check
from runner.tree.policy import took
from runner.tree.store import Store
from tests.cli.test_try import fake, own_data, run_try  # noqa: F401 (fixtures)
from tests.fake_executor import FAKE_BASE, Behaviour, FakeExecutor
from tests.helpers import CHALLENGE, PHASE, REPO

DONE = r"done in \d+\.\d s"


def lines(console: Console) -> list[str]:
    return console.file.getvalue().splitlines()


def test_not_on_a_terminal_a_line_when_it_starts_and_one_when_it_ends():
    log = Console(file=io.StringIO())
    with stage("building the site", log):
        log.print("a line of the step's own")
    start, own, end = lines(log)
    assert (start, own) == ("building the site...", "a line of the step's own")
    assert re.fullmatch(rf"building the site {DONE}", end)


def test_a_stage_that_raises_says_it_failed_and_after_how_long():
    log = Console(file=io.StringIO())
    with pytest.raises(RuntimeError), stage("evaluating [the examples]", log):  # no markup read in a label
        raise RuntimeError("engine gone")
    assert re.fullmatch(r"evaluating \[the examples\] failed after \d+\.\d s", lines(log)[-1])


def test_on_a_terminal_a_spinner_with_the_time_elapsed_then_one_line():
    terminal = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=60)
    with stage("building the evaluation image", terminal):
        pass
    shown = terminal.file.getvalue()
    assert "building the evaluation image 0:00:00" in shown  # the spinner's line: label, time elapsed
    assert "building the evaluation image..." not in shown  # no plain line on a terminal
    assert re.search(rf"building the evaluation image {DONE}\n$", shown)


@pytest.mark.parametrize("seconds, text", [(0.42, "0.4 s"), (12.3, "12 s"), (75, "1 min 15 s"), (3725, "62 min 5 s")])
def test_took(seconds, text):
    assert took(seconds) == text


def test_try_shows_the_evaluation_image_build_as_a_stage(repo, capsys, fake, own_data):  # noqa: F811
    code, _, err = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", "my-algorithm:latest",
                           "--data", str(own_data))
    assert code == 0
    assert f"building the evaluation image of {CHALLENGE}...\n" in err
    assert re.search(rf"^building the evaluation image of {CHALLENGE} {DONE}$", err, re.M)


LUNG = "lung-cancer-prediction"  # predictions only: the demo builds no algorithm image for it
STAGES = ("preparing the base image", "writing the hidden data", "building and submitting the examples",
          "evaluating the examples", "building the site")


def test_demo_shows_each_stage_its_time_and_the_total(tmp_path, monkeypatch, capsys):
    """The demo on one challenge, its evaluations on the fake executor: every stage starts and ends
    with a line (stderr is not a terminal here), the total comes last, the leaderboard is whole."""
    root = tmp_path / "root"
    for name in ("site", f"challenges/{LUNG}"):
        shutil.copytree(REPO / name, root / name)
    for name in ("mkdocs.yml", "challenges/index.md", "challenges/organizers.md", "challenges/participants.md"):
        shutil.copy2(REPO / name, root / name)
    executor = FakeExecutor()
    metrics = {"aggregates": {"log_loss": {"mean": 0.61234567}, "auroc": 0.75, "accuracy": 0.7}}
    executor.add_image(f"challenge-eval/{LUNG}", Behaviour(files={"metrics.json": json.dumps(metrics)}))
    monkeypatch.setattr("runner.cli.demo.runner_executor", lambda settings, root, log: (executor, FAKE_BASE))
    assert main(["--root", str(root), "demo", "--no-serve", "--workspace", str(tmp_path / "demo")]) == 0
    printed = capsys.readouterr()
    for label in STAGES:
        assert f"\n{label}...\n" in printed.err
        assert re.search(rf"^{label} {DONE}$", printed.err, re.M), label
    assert re.search(r"\ndemo done in \d+\.\d s\n$", printed.err)
    assert printed.out.count("0.61235") == 3  # each example's log loss, to the phase's 5 places


def test_a_check_on_a_terminal_shows_the_files_read_and_nothing_in_a_log(repo):
    """`challenge check` over a million results takes minutes: a bar of the files read, on a terminal only."""
    heard: list[tuple[int, int]] = []
    report = check(Store(repo), progress=lambda done, total: heard.append((done, total)))
    total = heard[-1][1]
    assert report.ok and heard[0] == (0, total) and heard[-1] == (total, total) and total > 10
    assert [done for done, _ in heard] == sorted(done for done, _ in heard)
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    with files_read(terminal) as progress:
        assert progress is not None
        progress(5, 10)
    assert "checking files" in terminal.file.getvalue()
    log = Console(file=io.StringIO())
    with files_read(log) as progress:
        assert progress is None
    assert lines(log) == []
