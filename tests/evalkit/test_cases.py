"""Pairing predictions with ground truth: each participant mistake has one exact, readable message."""

from __future__ import annotations

import numpy as np
import pytest

from runner.evalkit import Case, EvaluationError, Image, check_geometry, load_case, match_cases


@pytest.fixture
def folders(tmp_path):
    truth, predictions = tmp_path / "ground_truth", tmp_path / "input"
    truth.mkdir()
    predictions.mkdir()
    for name in ("case1", "case2", "case3"):
        np.save(truth / f"{name}.npy", np.zeros((2, 3, 4), np.uint8))
    return predictions, truth


def touch(folder, *names):
    for name in names:
        if name.endswith(".npy"):
            np.save(folder / name, np.zeros((2, 3, 4), np.uint8))
        else:
            (folder / name).write_bytes(b"")


def message(predictions, truth, **options):
    with pytest.raises(EvaluationError) as error:
        match_cases(predictions, truth, **options)
    return str(error.value)


def test_complete_submission_pairs_every_case(folders):
    predictions, truth = folders
    touch(predictions, "case1.nii.gz", "case2.mha", "case3.npy", ".DS_Store", "case2.raw")
    (predictions / "__MACOSX").mkdir()
    cases = match_cases(predictions, truth)
    assert [(c.name, c.prediction.name, c.ground_truth.name) for c in cases] == [
        ("case1", "case1.nii.gz", "case1.npy"),
        ("case2", "case2.mha", "case2.npy"),
        ("case3", "case3.npy", "case3.npy"),
    ]


def test_missing_cases(folders):
    predictions, truth = folders
    touch(predictions, "case2.nii.gz")
    assert message(predictions, truth) == "Missing predictions for 2 of 3 cases: case1, case3"


def test_duplicate_case(folders):
    predictions, truth = folders
    touch(predictions, "case1.nii.gz", "case1.mha", "case2.nii.gz", "case3.nii.gz")
    assert message(predictions, truth) == (
        "Case case1 has 2 predictions (case1.mha, case1.nii.gz); submit one file per case"
    )


def test_extra_cases(folders):
    predictions, truth = folders
    touch(predictions, "case1.nii.gz", "case2.nii.gz", "case3.nii.gz", "case4.nii.gz", "case10.mha")
    assert message(predictions, truth) == "Unexpected predictions for cases not in the test set: case10, case4"
    assert len(match_cases(predictions, truth, allow_extra=True)) == 3


def test_unrecognised_files(folders):
    predictions, truth = folders
    touch(predictions, "case1.nii.gz", "case2.nii.gz", "case3.nii.gz", "notes.txt")
    assert message(predictions, truth) == (
        "Unexpected files notes.txt: predictions must be .nii.gz, .nii, .mha, .mhd, .nrrd, .nhdr, .npy files "
        "named after their case"
    )


def test_long_lists_are_cut(tmp_path):
    truth, predictions = tmp_path / "gt", tmp_path / "in"
    truth.mkdir()
    predictions.mkdir()
    touch(truth, *(f"c{i:02d}.npy" for i in range(12)))
    touch(predictions, "c00.npy")
    assert message(predictions, truth) == "Missing predictions for 11 of 12 cases: c01, c02, c03, c04, c05 and 6 more"


def test_empty_submission_points_at_a_nested_folder(folders):
    predictions, truth = folders
    assert message(predictions, truth) == "No predictions found; expected 3 files such as case1.npy"
    (predictions / "submission").mkdir()
    assert message(predictions, truth) == (
        "No predictions found at the top level of the submission (only the folder submission/); "
        "expected files such as case1.npy"
    )


def test_ground_truth_problems_are_not_the_participants(folders):
    predictions, truth = folders
    touch(truth, "case1.mha")
    with pytest.raises(RuntimeError, match="Ground truth has 2 files for case case1"):
        match_cases(predictions, truth)


def image(shape, spacing):
    return Image(array=np.zeros(shape, np.uint8), spacing=spacing)


def test_wrong_shape():
    with pytest.raises(EvaluationError) as error:
        check_geometry("case7", image((10, 20, 30), (1.0,) * 3), image((10, 20, 31), (1.0,) * 3))
    assert str(error.value) == "Case case7: the prediction has shape (10, 20, 30), expected (10, 20, 31)"


def test_wrong_spacing():
    with pytest.raises(EvaluationError) as error:
        check_geometry("case7", image((2, 2, 2), (2.5, 0.8, 0.8)), image((2, 2, 2), (2.0, 0.8, 0.8)))
    assert str(error.value) == "Case case7: the prediction has spacing (2.5, 0.8, 0.8) mm, expected (2, 0.8, 0.8) mm"


def test_float32_spacing_passes():
    float32 = float(np.float32(0.703125 + 1e-7))
    check_geometry("case7", image((2, 2), (float32, 2.0)), image((2, 2), (0.7031251, 2.0)))


def test_load_case_checks_the_pair(tmp_path):
    np.save(tmp_path / "p.npy", np.zeros((2, 3), np.uint8))
    np.save(tmp_path / "t.npy", np.zeros((3, 2), np.uint8))
    with pytest.raises(EvaluationError, match=r"^Case c: the prediction has shape \(2, 3\), expected \(3, 2\)$"):
        load_case(Case("c", tmp_path / "p.npy", tmp_path / "t.npy"))
