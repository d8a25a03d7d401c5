"""`challenge run RESULT --input DIR --output DIR`: a published result's algorithm on cases it never saw,
in the phase's sandbox, writing only into --output; results it cannot run are refused with the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runner.cli import main
from runner.tree.result_model import Result, RunRecord
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, write_submission

WHEN = "2026-03-01T10:00:00+00:00"


def publish(repo: Path, image: str, *, participant: str = "alice", sub_id: str = "v1", phase: str = PHASE,
            ran: bool = True) -> Path:
    """A result of `image`'s submission as the runner writes it; `ran`: its algorithm ran."""
    store = Store(repo)
    submission = store.submission(write_submission(repo, participant, sub_id, image, phase=phase))
    store.write_result(submission, Result(
        challenge=CHALLENGE, phase=phase, participant=participant, submission=sub_id,
        status="succeeded" if ran else "failed", created_at=WHEN, started_at=WHEN, finished_at=WHEN,
        metrics={"aggregates": {"dice": {"mean": 0.9}}} if ran else None,
        error=None if ran else "Algorithm image could not be used: no such image",
        algorithm=RunRecord(image=image, exit_code=0, wall_time_s=1.0) if ran else None))
    return store.paths.result_file(CHALLENGE, phase, participant, sub_id)


def run(repo: Path, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["--root", str(repo), "run", *args])
    printed = capsys.readouterr()
    return code, printed.out, printed.err


@pytest.fixture(scope="module")
def new_cases(tmp_path_factory) -> Path:
    """Cases the example algorithms never saw: another seed of the challenge's own data script."""
    root = tmp_path_factory.mktemp("new-cases")
    script = REPO / "challenges" / CHALLENGE / "data" / "make_data.py"
    subprocess.run([sys.executable, str(script), str(root), "--cases", "2", "--seed", "77"], check=True,
                   capture_output=True)
    return root / CHALLENGE / PHASE / "inputs"


# --- on the real engine ---------------------------------------------------------------------------

docker = pytest.mark.docker


@docker
def test_a_published_algorithm_writes_its_outputs_for_new_cases(repo, capsys, engine, base_image, new_cases,
                                                               tmp_path):
    image = engine.build(repo / "challenges" / CHALLENGE / "examples" / "baseline",
                         name="challenge-test/try-baseline", base=base_image)
    record = publish(repo, image)
    before = sorted(p.relative_to(repo) for p in repo.rglob("*") if p.is_file() and "build" not in p.parts)
    output = tmp_path / "outputs"
    code, printed, err = run(repo, capsys, str(record), "--input", str(new_cases), "--output", str(output),
                             "--base-image", base_image, "--allow-local-images")
    assert code == 0, printed + err
    cases = sorted(p.name for p in new_cases.iterdir())
    assert sorted(p.name for p in output.iterdir()) == cases  # one prediction per new case
    for name in cases:
        mask, volume = np.load(output / name), np.load(new_cases / name)
        assert mask.shape == volume.shape and set(np.unique(mask)) <= {0, 1} and mask.any()
    assert f"wrote {len(cases)} file(s) to {output}" in printed
    after = sorted(p.relative_to(repo) for p in repo.rglob("*") if p.is_file() and "build" not in p.parts)
    assert after == before  # nothing written into the tree


@docker
def test_the_algorithm_runs_in_the_phases_sandbox(repo, capsys, behave, new_cases, tmp_path, base_image):
    record = publish(repo, behave("network"))
    code, printed, err = run(repo, capsys, str(record), "--input", str(new_cases), "--output",
                             str(tmp_path / "out"), "--base-image", base_image, "--allow-local-images")
    assert code == 1
    assert "Algorithm failed: " in err and "Network is unreachable" in err + printed


# --- what cannot be run, and bad arguments: refused before any engine is asked -----------------------


def test_a_result_whose_algorithm_never_ran_is_refused_with_why(repo, capsys, new_cases, tmp_path):
    never = publish(repo, f"ghcr.io/alice/a@sha256:{'ab' * 32}", ran=False)
    code, _, err = run(repo, capsys, str(never), "--input", str(new_cases), "--output", str(tmp_path / "o"))
    assert code == 1 and "cannot be run: its algorithm never ran" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("case", ["missing-input", "empty-input", "full-output", "no-result"])
def test_bad_arguments_say_which_and_why(repo, capsys, new_cases, tmp_path, case):
    record = publish(repo, f"ghcr.io/alice/a@sha256:{'ab' * 32}")
    inputs, output = new_cases, tmp_path / "out"
    if case == "missing-input":
        inputs = tmp_path / "nowhere"
    elif case == "empty-input":
        inputs = tmp_path / "empty"
        inputs.mkdir()
    elif case == "full-output":
        output.mkdir()
        (output / "mine.txt").write_text("keep me")
    elif case == "no-result":
        record = record.with_name("nobody.json")
    code, _, err = run(repo, capsys, str(record), "--input", str(inputs), "--output", str(output))
    expected = {"missing-input": "not a folder", "empty-input": "empty: phase", "full-output": "not an empty folder",
                "no-result": "no such result file"}[case]
    assert code == 1 and expected in err and "Traceback" not in err
    if case == "full-output":
        assert (output / "mine.txt").read_text() == "keep me"


@docker
def test_an_image_named_by_its_local_id_needs_allow_local_images(repo, capsys, new_cases, tmp_path, base_image):
    """A reader's engine runs only what a registry serves by digest unless they ask (the demo's local images):
    the flag also lets an archive's download reach private addresses, so it is never the default."""
    record = publish(repo, f"sha256:{'ab' * 32}")
    code, _, err = run(repo, capsys, str(record), "--input", str(new_cases), "--output", str(tmp_path / "o"),
                       "--base-image", base_image)
    assert code == 1 and f"Algorithm image sha256:{'ab' * 32}: " in err and "Traceback" not in err
