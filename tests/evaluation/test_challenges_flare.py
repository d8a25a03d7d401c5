"""The FLARE-style challenge: NIfTI data, FLARE's DSC and NSD per organ with its empty-mask rule,
the validation phase's uploaded label maps, and FLARE's rank then average over the results."""

from __future__ import annotations

import gzip
import zipfile
from statistics import fmean

import nibabel as nib
import numpy as np
import pytest

from runner.evalkit import segmentation_metrics
from runner.evaluation.job import RunnerConfig
from runner.ranking.leaderboard import leaderboard
from runner.ranking.tables import RANK_SCORE, records
from runner.site.pages import ranking_method
from runner.tree.store import Store
from tests.evaluation.test_challenges_examples import examples_of, make_data, run_example

SLUG = "abdominal-organs"
TOLERANCE = {1: ("liver", 5.0), 2: ("kidney", 3.0), 3: ("spleen", 3.0), 4: ("pancreas", 5.0)}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return make_data(SLUG, tmp_path_factory.mktemp("flare-data"))


def volume(data: bytes) -> np.ndarray:
    """A .nii.gz file's voxels, [x, y, z] as nibabel reads them."""
    return np.asanyarray(nib.Nifti1Image.from_bytes(gzip.decompress(data)).dataobj)


def zipped(name: str) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(examples_of(SLUG)[name] / "masks.zip") as archive:
        return {n: volume(archive.read(n)) for n in archive.namelist()}


def expected(masks: dict[str, np.ndarray], truth_folder) -> dict[str, dict[str, float]]:
    """FLARE's metrics of each case, computed here on the host with the kit (axes [z, y, x])."""
    out = {}
    for name, prediction in masks.items():
        truth = nib.load(truth_folder / name)
        spacing = tuple(float(z) for z in reversed(truth.header.get_zooms()))
        labels = np.asanyarray(truth.dataobj).T
        per_organ = {organ: segmentation_metrics(labels == k, prediction.T == k, spacing, tolerance_mm=mm,
                                                 empty="flare") for k, (organ, mm) in TOLERANCE.items()}
        out[name.removesuffix(".nii.gz")] = {"dsc": fmean(m["dsc"] for m in per_organ.values()),
                                             "nsd": fmean(m["nsd"] for m in per_organ.values()),
                                             **{f"{o}_dsc": m["dsc"] for o, m in per_organ.items()}}
    return out


def test_validation_zips_are_the_examples_label_maps(tmp_path):
    """Each committed zip holds what its method's predict.py makes of the public validation images."""
    import runpy
    images = make_data(SLUG, tmp_path, "--public") / SLUG / "validation" / "inputs"
    assert not (tmp_path / SLUG / "validation" / "ground-truth").exists()
    for example, method in (("validation-median", "median"), ("validation-raw", "raw-intensity")):
        segment = runpy.run_path(str(examples_of(SLUG)[method] / "predict.py"))["segment"]
        masks = zipped(example)
        assert sorted(masks) == sorted(p.name for p in images.iterdir())
        for name, mask in masks.items():
            np.testing.assert_array_equal(mask, segment(np.asanyarray(nib.load(images / name).dataobj)))


def test_the_data_follow_flares_labels_and_one_case_has_no_spleen(data_root):
    test = data_root / SLUG / "test" / "ground-truth"
    counts = {p.name: np.bincount(np.asanyarray(nib.load(p).dataobj).ravel(), minlength=5) for p in test.iterdir()}
    assert sorted(counts) == ["case-001.nii.gz", "case-002.nii.gz", "case-003.nii.gz", "case-004.nii.gz"]
    assert counts["case-002.nii.gz"][3] == 0 and all(c[k] > 0 for c in counts.values() for k in (1, 2, 4))
    image = nib.load(data_root / SLUG / "test" / "inputs" / "case-001.nii.gz")
    assert image.shape == (32, 32, 24) and image.header.get_zooms() == (3.0, 3.0, 5.0)


@pytest.mark.docker
def test_validation_uploads_are_scored_and_ranked_flares_way(repo, engine, base_image, data_root):
    results = {name: run_example(repo, SLUG, name, engine=engine, base=base_image, data_root=data_root)
               for name in ("validation-median", "validation-raw")}
    truth = data_root / SLUG / "validation" / "ground-truth"
    for name, result in results.items():
        assert result.status == "succeeded", result.error
        want = expected(zipped(name), truth)
        for case, values in want.items():
            assert {k: result.metrics["case"][case][k] for k in values} == pytest.approx(values, abs=1e-12)

    store = Store(repo)
    phase = store.phase(SLUG, "validation")
    board = leaderboard(phase, store.results(SLUG, "validation"))
    good, weak = (results[n].metrics["case"] for n in ("validation-median", "validation-raw"))
    # two results, three cases, two metrics: the better one in a case and metric ranks 1, the other 2
    ranks = {"alice": [], "organizers": []}
    for case in good:
        for metric in ("dsc", "nsd"):
            better = good[case][metric] >= weak[case][metric]
            ranks["alice"].append(1 if better else 2)
            ranks["organizers"].append(1 if good[case][metric] <= weak[case][metric] else 2)
    scores = {team: fmean(r) / 2 for team, r in ranks.items()}
    assert {r.participant: r.rank_score for r in board.rows} == pytest.approx(scores)
    assert [r.participant for r in board.rows] == ["alice", "organizers"]
    assert records(board)[0][RANK_SCORE] == pytest.approx(scores["alice"])
    assert "ranked on DSC (mean of the four organs) (higher is better) and NSD" in ranking_method(phase)


@pytest.mark.docker
def test_a_label_that_is_no_organ_is_refused_with_one_line(repo, engine, base_image, data_root):
    masks = zipped("validation-median")
    name = sorted(masks)[0]
    broken = masks[name].copy()
    broken[0, 0, 0] = 7
    folder = repo / "challenges" / SLUG / "examples" / "validation-median"
    with zipfile.ZipFile(folder / "masks.zip", "w") as archive:
        for n, mask in masks.items():
            image = nib.Nifti1Image(broken if n == name else mask, np.diag([3.0, 3.0, 5.0, 1.0]))
            archive.writestr(n, gzip.compress(image.to_bytes()))
    result = run_example(repo, SLUG, "validation-median", engine=engine, base=base_image, data_root=data_root,
                         source=repo / "challenges")  # the scratch copy's example, with the broken zip
    assert (result.status, result.error) == ("failed", f"Evaluation failed: Case {name.removesuffix('.nii.gz')}: "
                                                       "label 7 is not an organ; use 1 liver, 2 kidney, 3 spleen, "
                                                       "4 pancreas (0 elsewhere)")


@pytest.mark.docker
def test_test_phase_runs_flares_container_once_per_case(repo, engine, base_image, data_root):
    """FLARE's contract (inputs at /workspace/inputs, `sh predict.sh`, outputs from /workspace/outputs,
    one GPU, here the CPU fallback), a `docker save` archive, per-case measurements, and the ranking
    on DSC, NSD, running time and GPU memory per case."""
    config = RunnerConfig(data_root=data_root, allow_local_images=True, cpu_fallback=True,
                          cache_dir=repo.parent / "cache")
    results = {name: run_example(repo, SLUG, name, engine=engine, base=base_image, data_root=data_root,
                                 config=config) for name in ("median", "raw-intensity", "no-spleen-crash")}
    good = results["median"]
    assert good.status == "succeeded", good.error
    assert good.algorithm.image.startswith("file://") and good.algorithm.gpu == "none (cpu fallback)"
    cases = ["case-001.nii.gz", "case-002.nii.gz", "case-003.nii.gz", "case-004.nii.gz"]
    assert list(good.algorithm.cases) == cases  # one run per case, each measured
    assert all(c["wall_time_s"] > 0 and c["exit_code"] == 0 for c in good.algorithm.cases.values())
    assert good.metrics["case"]["case-002"]["spleen_dsc"] == 1.0  # no spleen, none predicted: FLARE's rule
    assert results["raw-intensity"].metrics["case"]["case-002"]["spleen_dsc"] == 0.0  # speckles where none is

    crashed = results["no-spleen-crash"]
    assert crashed.status == "failed"
    assert crashed.error == ("Algorithm failed on case case-002.nii.gz: RuntimeError: no spleen found: cannot place "
                             "the pancreas's tail")
    assert list(crashed.algorithm.cases) == cases[:2]  # the failing case stops the job; case 1 stays measured

    store = Store(repo)
    phase = store.phase(SLUG, "test")
    board = leaderboard(phase, store.results(SLUG, "test"))
    assert [(r.participant, r.rank) for r in board.rows] == [("alice", 1), ("organizers", 2)]
    # by hand from the two results: in each case the better one on a metric ranks 1, the other 2 (GPU
    # memory is unmeasured on the CPU fallback: both missing, both rank 1)
    teams = {"alice": good, "organizers": results["raw-intensity"]}
    ranks: dict[str, list[int]] = {team: [] for team in teams}
    for case in cases:
        name = case.removesuffix(".nii.gz")
        values = {team: (r.metrics["case"][name]["dsc"], r.metrics["case"][name]["nsd"],
                         -r.algorithm.cases[case]["wall_time_s"]) for team, r in teams.items()}  # time: lower wins
        for metric in range(3):
            best = max(v[metric] for v in values.values())
            for team in teams:
                ranks[team].append(1 if values[team][metric] == best else 2)
        for team in teams:
            ranks[team].append(1)  # GPU memory
    assert {r.participant: r.rank_score for r in board.rows} == pytest.approx(
        {team: fmean(r) / 2 for team, r in ranks.items()})
    assert [r.participant for r in board.failed] == ["bob"]

