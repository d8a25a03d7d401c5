"""`challenge import-phase`: grand-challenge.org's export of a phase becomes a phase file that passes
`challenge check`, and every option the export sets that it leaves out is named, with why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from runner.cli import main
from runner.evaluation.examples import prepare_workspace
from runner.tree.gc_export import BY_ID
from runner.tree.loading import UNSUPPORTED_GC_OPTIONS, load_phase
from tests.helpers import CHALLENGE, REPO
from tests.test_documents import blocks

EXPORT = REPO / "tests" / "tree" / "data" / "grand-challenge-phase.json"


def run(repo: Path, capsys, *args: str) -> tuple[int, list[str], str]:
    code = main(["--root", str(repo), "import-phase", *args])
    printed = capsys.readouterr()
    return code, printed.out.splitlines(), printed.err


def test_an_export_becomes_a_phase_of_the_challenge_that_passes_check(repo, capsys):
    code, lines, err = run(repo, capsys, str(EXPORT), "--challenge", CHALLENGE)
    target = repo / "challenges" / CHALLENGE / "phases" / "final-test-phase.yml"
    assert (code, err, lines[0]) == (0, "", f"wrote {target}")
    assert f"not carried: parent: {BY_ID['parent']}" in lines
    assert f"not carried: workstation: {UNSUPPORTED_GC_OPTIONS['workstation']}" in lines
    assert not [line for line in lines if line.startswith(("not carried: workstation_config", "not carried: slug"))]
    phase = load_phase(target, CHALLENGE)
    assert (phase.supplementary_url_choice, phase.submission_kind, phase.algorithm.time_limit) == (
        "required", "algorithm", 1200)
    assert main(["--root", str(repo), "check", str(target.parent.parent)]) == 0


def test_an_existing_phase_is_never_overwritten(repo, capsys):
    run(repo, capsys, str(EXPORT), "--challenge", CHALLENGE)
    target = repo / "challenges" / CHALLENGE / "phases" / "final-test-phase.yml"
    before = target.read_text()
    code, _, err = run(repo, capsys, str(EXPORT), "--challenge", CHALLENGE)
    assert (code, err.strip()) == (1, f"error: {target} exists: remove it first, or write elsewhere with --output PATH")
    assert target.read_text() == before


def test_where_the_phase_goes_must_be_said(repo, capsys):
    assert run(repo, capsys, str(EXPORT))[::2] == (1, "error: say where the phase goes: --challenge SLUG "
                                                      "(challenges/SLUG/phases/) or --output PATH\n")
    code, _, err = run(repo, capsys, str(EXPORT), "--challenge", "nope")
    assert code == 1 and err.startswith("error: there is no challenge 'nope' (challenges: ")


def test_a_phase_that_does_not_pass_the_checks_is_written_with_each_problem(repo, tmp_path, capsys):
    record = json.loads(EXPORT.read_text())[0]
    record["fields"].update(public=False, submissions_close_at=None)  # hidden with no closing time: open behind it
    export = tmp_path / "phase.json"
    export.write_text(json.dumps(record))
    target = repo / "challenges" / CHALLENGE / "phases" / "final-test-phase.yml"
    code, lines, err = run(repo, capsys, str(export), "--challenge", CHALLENGE)
    # As `challenge check` says it: this one, and that a hidden phase's results need someone to be sealed to.
    assert code == 1 and err.strip() == f"2 problem(s) to fix in {target} before it passes `challenge check`"
    line = next(i for i, text in enumerate(target.read_text().splitlines(), 1) if text.startswith("public:"))
    assert lines[-1] == (f"{target}:{line}: public: false hides a phase that takes submissions now or later; "
                         "grand-challenge hides only a closed phase: set submissions_close_at to a past time, or "
                         "submissions_limit_per_user_per_period: 0")
    record["fields"].update(public=True, score_jsonpath="")  # grand-challenge lets it be blank
    export.write_text(json.dumps(record))
    outside = tmp_path / "out" / "final.yml"  # outside the tree: the phase file's own rules only
    code, lines, _ = run(repo, capsys, str(export), "--output", str(outside))
    assert code == 1 and lines[0] == f"wrote {outside}" and lines[-1] == f"{outside}:2: score_jsonpath: is required"


def test_an_export_that_is_not_json_is_one_line(repo, tmp_path, capsys):
    export = tmp_path / "phase.json"
    export.write_text("{'title': 'x'}")
    assert run(repo, capsys, str(export), "--challenge", CHALLENGE)[::2] == (
        1, f"error: {export}:1: not JSON: Expecting property name enclosed in double quotes\n")


def test_an_export_nested_too_deeply_or_with_terminal_escapes_is_one_line(repo, tmp_path, capsys):
    export = tmp_path / "deep.json"
    export.write_text("[" * 100_000)
    code, _, err = run(repo, capsys, str(export), "--challenge", CHALLENGE)
    assert code == 1 and err == f"error: {export}: nested too deeply to be a phase export\n"
    export.write_text(json.dumps({"slug": "escaped", "title": "Escaped", "\x1b[2Jcleared": 1}))
    _, printed, _ = run(repo, capsys, str(export), "--output", str(tmp_path / "escaped.yml"))
    assert not any("\x1b" in line for line in printed)
    assert any(line.startswith("not carried: \\x1b[2Jcleared: ") for line in printed)


def test_the_organizers_guide_imports_a_phase_as_written(tmp_path):
    """The guide's block, run as `test_documents` runs it, after the guide's `challenge new` (no Docker needed)."""
    [block] = [b for b in blocks(REPO / "challenges" / "organizers.md") if "challenge import-phase" in b.text]
    workspace = prepare_workspace(REPO, tmp_path / "repo")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"}
    subprocess.run(["challenge", "new", "liver-segmentation", "--kind", "algorithm"], cwd=workspace, env=env,
                   check=True, capture_output=True)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.filled], cwd=workspace, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not carried: evaluation_requires_memory_gb: set evaluation_resources.memory (8 GB: 8g)" in done.stdout
    assert "not carried: compute_cost_euro_millicents" not in done.stdout  # 0: nothing to carry
    phase = load_phase(workspace / "challenges" / "liver-segmentation" / "phases" / "preliminary.yml",
                       "liver-segmentation")
    assert (phase.title, phase.supplementary_url_label, phase.submission_kind) == ("Preliminary", "Preprint",
                                                                                  "algorithm")
