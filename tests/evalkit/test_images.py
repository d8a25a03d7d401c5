"""Reading every supported format back, in one axis order whichever package reads it."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from runner.evalkit import EvaluationError, MissingReaderError, case_name, read_image

sitk = pytest.importorskip("SimpleITK")
nib = pytest.importorskip("nibabel")

# numpy order [z, y, x]: 3 slices of 4 x 5 pixels, 2.5 mm slices of 0.7 x 0.5 mm pixels
ARRAY = np.arange(3 * 4 * 5, dtype=np.int16).reshape(3, 4, 5)
SPACING = (2.5, 0.7, 0.5)


def write_sitk(path):
    image = sitk.GetImageFromArray(ARRAY)
    image.SetSpacing(tuple(reversed(SPACING)))  # SimpleITK speaks (x, y, z)
    sitk.WriteImage(image, str(path))


def write_nibabel(path):
    affine = np.diag([*reversed(SPACING), 1.0])
    nib.save(nib.Nifti1Image(ARRAY.T, affine), str(path))  # nibabel indexes [x, y, z]


def assert_round_trip(image):
    np.testing.assert_array_equal(image.array, ARRAY)
    assert image.spacing == pytest.approx(SPACING)


@pytest.mark.parametrize("name", ["case.nii.gz", "case.nii", "case.mha", "case.mhd", "case.nrrd"])
def test_simpleitk_formats_round_trip(tmp_path, name):
    write_sitk(tmp_path / name)
    assert_round_trip(read_image(tmp_path / name))


@pytest.mark.parametrize("name", ["case.nii.gz", "case.nii"])
@pytest.mark.parametrize("backend", ["simpleitk", "nibabel"])
def test_nifti_written_by_nibabel_reads_the_same_with_either_backend(tmp_path, name, backend):
    write_nibabel(tmp_path / name)
    assert_round_trip(read_image(tmp_path / name, backend=backend))


def test_nibabel_reads_simpleitk_nifti_in_the_same_order(tmp_path):
    write_sitk(tmp_path / "case.nii.gz")
    assert_round_trip(read_image(tmp_path / "case.nii.gz", backend="nibabel"))


def test_npy_has_unit_spacing(tmp_path):
    np.save(tmp_path / "case.npy", ARRAY)
    image = read_image(tmp_path / "case.npy")
    np.testing.assert_array_equal(image.array, ARRAY)
    assert image.spacing == (1.0, 1.0, 1.0)


def test_corrupt_file_names_itself(tmp_path):
    (tmp_path / "case7.nii.gz").write_bytes(b"not an image")
    with pytest.raises(EvaluationError) as error:
        read_image(tmp_path / "case7.nii.gz")
    assert str(error.value) == "case7.nii.gz could not be read as a .nii.gz image; is the file complete?"


def test_unsupported_extension(tmp_path):
    (tmp_path / "case7.png").write_bytes(b"")
    with pytest.raises(EvaluationError, match=r"^case7.png is not a supported image; use one of .nii.gz, .nii"):
        read_image(tmp_path / "case7.png")


def test_missing_package_is_an_organizer_error(tmp_path, monkeypatch):
    write_sitk(tmp_path / "case.mha")
    write_sitk(tmp_path / "case.nii.gz")
    for package in ("SimpleITK", "nibabel"):
        monkeypatch.setitem(sys.modules, package, None)  # as if not installed: importing it raises ImportError
    with pytest.raises(MissingReaderError) as error:
        read_image(tmp_path / "case.mha")
    assert str(error.value) == "Reading .mha files needs SimpleITK: install it in the evaluation image"
    with pytest.raises(MissingReaderError, match="needs SimpleITK or nibabel"):
        read_image(tmp_path / "case.nii.gz")


def test_case_names_drop_double_extensions():
    assert case_name("case1.nii.gz") == "case1"
    assert case_name("a.b.MHA") == "a.b"
    assert case_name("notes.txt") == "notes.txt"
