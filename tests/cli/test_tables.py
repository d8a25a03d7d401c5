"""CLI tables printed where stdout is not a terminal (a pipe: `| cat`, the demo's log, CI) hold every value
whole, however wide; on a narrow terminal, cells fold rather than end in "…"."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from runner.cli.common import print_table
from tests.helpers import CHALLENGE, PHASE, add_result, edit_yaml, phase_file

# Longer than any terminal's share of an 80-column table
ALGORITHMS = ("nnunet-3d-fullres-ensemble-of-five-folds-with-test-time-augmentation",
              "swin-unetr-pretrained-on-five-thousand-ct-scans-then-fine-tuned")


def piped(repo: Path, *args: str) -> str:
    """What `challenge ARGS | cat` shows: stdout a pipe, no COLUMNS to size it."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")}
    done = subprocess.run([sys.executable, "-m", "runner.cli", "--root", str(repo), *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_rank_table_in_a_pipe_holds_every_value(tmp_path):
    lines = [f"T1,C{case},{name},{value}" for name, value in zip(ALGORITHMS, (0.8123456, 0.7654321))
             for case in (1, 2)]
    (tmp_path / "results.csv").write_text("task,case,algorithm,value\n" + "\n".join(lines) + "\n")
    printed = piped(tmp_path, "rank", str(tmp_path / "results.csv"), "--bootstrap", "10")
    assert "…" not in printed
    assert rows(printed) == [["Task", "Rank", "Algorithm", "Mean", "Median rank", "95% interval"],
                             ["T1", "1", ALGORITHMS[0], "0.8123", "1", "1–1"],  # 4 significant digits, whole
                             ["T1", "2", ALGORITHMS[1], "0.7654", "2", "2–2"]]


def test_leaderboard_in_a_pipe_holds_every_value(repo):
    edit_yaml(phase_file(repo), score_decimal_places=7)
    add_result(repo, "a-participant-with-a-long-handle", "submission-with-a-long-name-v1", 0.8123456)
    add_result(repo, "another-participant-named-at-length", "second-submission-with-a-long-name", 0.7654321)
    printed = piped(repo, "leaderboard", CHALLENGE, PHASE)
    assert "…" not in printed
    assert rows(printed) == [
        ["Rank", "Participant", "Submission", "Dice (mean)", "Jaccard (mean)", "Dice (worst case)"],
        ["1", "a-participant-with-a-long-handle", "submission-with-a-long-name-v1", "0.8123456", "0.4061728",
         "0.7123456"],
        ["2", "another-participant-named-at-length", "second-submission-with-a-long-name", "0.7654321", "0.3827160",
         "0.6654321"]]


def rows(printed: str) -> list[list[str]]:
    """The header and body rows of a table as rich draws it, one list of cells each."""
    return [[cell.strip() for cell in line[1:-1].replace("┃", "│").split("│")]
            for line in printed.splitlines() if line[:1] in ("┃", "│")]


def table(*values: str) -> Table:
    t = Table(title="scores")
    for i in range(len(values)):
        t.add_column(f"metric {i}", justify="right")
    t.add_row(*values)
    return t


def test_a_narrow_terminal_folds_numbers_rather_than_cutting_them():
    terminal = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=30)
    print_table(table("0.81234567", "0.76543210", "0.65432109"), terminal)
    shown = terminal.file.getvalue()
    assert "…" not in shown
    cells = ["".join(parts) for parts in zip(*(line.split("│")[1:-1] for line in shown.splitlines()
                                                 if line.startswith("│")))]
    assert [cell.replace(" ", "") for cell in cells] == ["0.81234567", "0.76543210", "0.65432109"]


def test_a_table_that_fits_prints_as_before():
    piped_console = Console(file=io.StringIO(), width=80)
    print_table(table("0.5"), piped_console)
    plain = Console(file=io.StringIO(), width=80)
    plain.print(table("0.5"))
    assert piped_console.file.getvalue() == plain.file.getvalue()
