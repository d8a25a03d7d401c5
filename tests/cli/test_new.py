"""`challenge new`: a new organizer's challenge passes `challenge check`, builds into the site with its
phases' rules, and its baseline runs in `challenge try` on the real engine, for each kind."""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from runner.cli import main
from runner.evaluation.examples import examples
from runner.site import pages
from runner.site.build import SiteConfig
from runner.tree.check import check
from runner.tree.scaffold import NEW_KINDS, PLANS
from runner.tree.store import Store
from tests.helpers import REPO, public_base_name


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with the site's templates and no challenge yet: a new organizer's."""
    root = tmp_path / "repo"
    (root / "challenges").mkdir(parents=True)
    shutil.copytree(REPO / "site", root / "site")
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    return root


def new(repo: Path, slug: str, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["--root", str(repo), "new", slug, *args])
    printed = capsys.readouterr()
    return code, printed.out, printed.err


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_each_kind_passes_check_without_a_warning(repo, capsys, kind):
    code, printed, _ = new(repo, f"my-{kind}", capsys, "--kind", kind)
    assert code == 0 and f"under challenges/my-{kind}/" in printed
    folder = repo / "challenges" / f"my-{kind}"
    report = check(Store(repo), folder)
    assert (report.problems, report.warnings) == ([], [])
    phases = Store(repo).phases(f"my-{kind}")
    first, second = PLANS[kind].phases
    assert list(phases) == [first, second]  # the parent first
    assert phases[second].parent == first
    assert {p.submission_kind for p in phases.values()} == {PLANS[kind].submission}
    assert Store(repo).challenge(f"my-{kind}").type == PLANS[kind].type
    assert sorted(p.name for p in (folder / "data" / "sample" / "inputs").iterdir()) == [
        "case-000.npy", "case-001.npy", "case-002.npy"]


def test_the_challenge_page_shows_the_generated_rules(repo, capsys):
    new(repo, "my-training", capsys, "--kind", "training")
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    page = (config.stage / "my-training" / "index.md").read_text()
    assert "<!-- phases -->" not in page and "### Sanity check" in page and "### Final test" in page
    assert "a succeeded result in phase *Sanity check*" in page  # the parent, from the phase file
    assert "Your code is trained here" in page and "training: 1 CPU" in page
    assert (config.stage / "my-training" / "leaderboard" / "final-test.md").is_file()


def test_the_demo_picks_up_an_algorithm_baseline(repo, capsys):
    new(repo, "my-algorithm", capsys)
    found = [e for e in examples(Store(repo)) if e.challenge == "my-algorithm"]
    assert [(e.phase, e.participant, e.id) for e in found] == [("sanity-check", "organizers", "baseline")]


@pytest.mark.parametrize("slug, message", [
    ("My_Challenge", "'My_Challenge' is not a challenge slug: use 3-60 lowercase letters"),
    ("ab", "'ab' is not a challenge slug"),
    ("taken", "challenges/taken already exists: choose another slug (nothing was written)"),
])
def test_a_bad_slug_or_an_existing_folder_is_one_line(repo, capsys, slug, message):
    (repo / "challenges" / "taken").mkdir()
    before = sorted(p for p in (repo / "challenges").rglob("*"))
    code, _, err = new(repo, slug, capsys)
    assert code == 1 and err.startswith(f"error: {message}") and err.count("\n") == 1
    assert sorted(p for p in (repo / "challenges").rglob("*")) == before


@pytest.mark.docker
@pytest.mark.parametrize("kind", ["algorithm", "training"])
def test_the_algorithm_baseline_runs_in_try(repo, capsys, engine, base_image, kind):
    """Type 2 runs the baseline; Type 3 trains it on the sample's training cases first."""
    new(repo, f"my-{kind}", capsys, "--kind", kind)
    image = engine.build(repo / "challenges" / f"my-{kind}" / "examples" / "baseline",
                         name=f"challenge-test/new-baseline-{kind}", base=base_image)
    code = main(["--root", str(repo), "try", "--phase", f"my-{kind}/sanity-check", image,
                 "--base-image", base_image])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "Dice (mean)" in printed and "Jaccard (mean)" in printed and "nothing was written to results/" in printed
    dice = re.search(r"(\d\.\d{3}) ± \d\.\d{3}", printed)
    assert dice and float(dice.group(1)) > 0.5, printed  # the threshold finds most of the squares
    assert not (repo / "challenges" / f"my-{kind}" / "results").exists()
    assert ("training: " in printed and "last line: learned threshold 0." in printed) == (kind == "training")


@pytest.mark.docker
def test_the_predictions_baseline_runs_in_try(repo, capsys, tmp_path, base_image, engine):
    new(repo, "my-predictions", capsys, "--kind", "predictions")
    folder = repo / "challenges" / "my-predictions"
    script = folder / "examples" / "baseline" / "predict.py"
    zipped = tmp_path / "predictions.zip"
    run_script(script, folder / "data" / "sample" / "inputs", zipped)
    assert zipfile.ZipFile(zipped).namelist() == ["case-000.npy", "case-001.npy", "case-002.npy"]
    capsys.readouterr()
    code = main(["--root", str(repo), "try", "--phase", "my-predictions/validation", str(zipped),
                 "--base-image", base_image])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "my-predictions / Validation" in printed and "Dice (mean)" in printed
    assert not (folder / "results").exists()


def run_script(script: Path, *args: Path) -> None:
    argv = sys.argv
    try:
        sys.argv = [str(script), *map(str, args)]
        runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv


@pytest.mark.docker
def test_self_reported_metrics_are_checked_in_try(repo, capsys, tmp_path, base_image, engine):
    new(repo, "my-metrics", capsys, "--kind", "metrics")
    folder = repo / "challenges" / "my-metrics"
    assert Store(repo).phase("my-metrics", "validation").self_reported
    reported = tmp_path / "metrics.json"
    run_script(folder / "examples" / "baseline" / "predict.py", folder / "data" / "sample", reported)
    capsys.readouterr()
    code = main(["--root", str(repo), "try", "--phase", "my-metrics/validation", str(reported),
                 "--base-image", base_image])
    printed = capsys.readouterr().out
    assert code == 0 and "Dice (mean)" in printed, printed
    cases = json.loads(reported.read_text())["case"]
    cases["case-001"]["jaccard"] = 0.99
    reported.write_text(json.dumps({"case": cases}))
    code = main(["--root", str(repo), "try", "--phase", "my-metrics/validation", str(reported),
                 "--base-image", base_image])
    printed = capsys.readouterr().out
    assert code == 1 and "failed: Evaluation failed: " in printed and "Case case-001: jaccard 0.99 does not follow" \
        in printed


@pytest.mark.docker
@pytest.mark.parametrize("kind", NEW_KINDS)
def test_the_printed_try_line_runs_as_printed(repo, capsys, kind, docker_client, base_image):
    """What `challenge new` tells the organizer to type next works, typed into a shell in the repository
    (the baseline's docker build FROM the public base: the offline base stands in under its name)."""
    slug = f"printed-{kind}"
    _, printed, _ = new(repo, slug, capsys, "--kind", kind)
    line = next(step for step in re.findall(r"^  next: (.*)$", printed, re.MULTILINE) if "challenge try" in step)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with public_base_name(docker_client, base_image):
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=900)
    assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "nothing was written to results/" in done.stdout
    assert ("note: the baseline builds FROM python:3.11-slim" in printed) == (kind in ("algorithm", "training"))
