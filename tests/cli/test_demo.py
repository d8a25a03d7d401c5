"""The README's demo, end to end: example images built, evaluated for real, site built."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runner.cli import main
from tests.helpers import CHALLENGE, PHASE, REPO

pytestmark = pytest.mark.docker


def test_demo_no_serve(tmp_path, base_image, capsys):
    workspace = tmp_path / "demo"
    assert main(["--root", str(REPO), "demo", "--no-serve", "--workspace", str(workspace),
                 "--base-image", base_image]) == 0
    results = workspace / "challenges" / CHALLENGE / "results" / PHASE
    smoothed = json.loads((results / "alice" / "smoothed-v1.json").read_text())
    baseline = json.loads((results / "organizers" / "threshold-baseline.json").read_text())
    forgot = json.loads((results / "bob" / "first-try.json").read_text())
    assert smoothed["status"] == baseline["status"] == "succeeded"
    assert smoothed["metrics"]["aggregates"]["dice"]["mean"] > 0.85 > baseline["metrics"]["aggregates"]["dice"]["mean"]
    assert forgot["status"] == "failed"
    assert forgot["error"].startswith("Evaluation failed: FileNotFoundError: Expected a prediction case-000.npy")

    html = (workspace / "build" / "site" / CHALLENGE / "leaderboard" / PHASE / "index.html").read_text()
    assert html.index("smoothed-v1") < html.index("threshold-baseline")
    assert f"{smoothed['metrics']['aggregates']['dice']['mean']:.3f}" in html

    # The reruns the examples declare: a living benchmark and a retraining of the best, on the site.
    site = workspace / "build" / "site"
    living = (site / CHALLENGE / "leaderboard" / "new-scanner" / "index.html").read_text()
    assert "smoothed-v1" in living and "threshold-baseline" in living
    final = json.loads((workspace / "challenges" / "lesion-training" / "results" / "final" / "alice" /
                        "logistic-v1.json").read_text())
    assert final["training"]["model_sha256"] and final["metrics"]["aggregates"]["auc"] > 0.85
    retrained = (site / "lesion-training" / "leaderboard" / "retrain" / "index.html").read_text()
    assert "logistic-v1" in retrained and "prior-v1" in retrained and "slow-v1" not in retrained  # the top 2

    # Every result is signed by the demo's runner key and verifies; one edited digit does not, and the
    # site build (what publish.yml runs) leaves that result out and names it.
    capsys.readouterr()
    assert main(["--root", str(workspace), "verify"]) == 0
    assert "verified" in capsys.readouterr().out
    assert smoothed["provenance"]["data_manifest"].startswith("sha256:")
    assert smoothed["provenance"]["evaluation_context"].startswith("sha256:")
    # The same image and evaluation run again on the runner give the same metrics.
    assert main(["--root", str(workspace), "reproduce", str(results / "alice" / "smoothed-v1.json"),
                 "--data-root", str(workspace / "data-root"), "--allow-local-images",
                 "--base-image", base_image]) == 0
    assert "reproduced: all" in capsys.readouterr().out
    # Its algorithm, as its result page says, on cases it has never seen.
    new = tmp_path / "new-cases"
    subprocess.run([sys.executable, str(REPO / "challenges" / CHALLENGE / "data" / "make_data.py"), str(new),
                    "--cases", "2", "--seed", "99"], check=True, capture_output=True)
    assert main(["--root", str(workspace), "run", str(results / "alice" / "smoothed-v1.json"),
                 "--input", str(new / CHALLENGE / PHASE / "inputs"), "--output", str(tmp_path / "outputs"),
                 "--base-image", base_image, "--allow-local-images"]) == 0
    assert sorted(p.name for p in (tmp_path / "outputs").iterdir()) == ["case-000.npy", "case-001.npy"]
    assert "wrote 2 file(s)" in capsys.readouterr().out
    record = results / "alice" / "smoothed-v1.json"
    kept = record.read_text()
    dice = f"{smoothed['metrics']['aggregates']['dice']['mean']!r}"
    record.write_text(kept.replace(dice, dice[:-1] + ("1" if dice[-1] != "1" else "2"), 1))
    assert main(["--root", str(workspace), "verify"]) == 1
    assert f"{PHASE}/alice/smoothed-v1.json: the signature does not match" in capsys.readouterr().out
    assert main(["--root", str(workspace), "build"]) == 0
    assert "smoothed-v1.json: not published, it does not verify" in capsys.readouterr().err
    html = (workspace / "build" / "site" / CHALLENGE / "leaderboard" / PHASE / "index.html").read_text()
    assert "Results left out: they do not verify" in html and "alice/smoothed-v1: the signature" in html
    record.write_text(kept)

    # Running it again resumes: nothing is evaluated twice.
    capsys.readouterr()
    assert main(["--root", str(REPO), "demo", "--no-serve", "--workspace", str(workspace),
                 "--base-image", base_image]) == 0
    assert "nothing to evaluate" in capsys.readouterr().out
