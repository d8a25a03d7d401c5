"""Reading prediction and ground-truth images into numpy arrays with their voxel spacing.

Axis order: every reader returns the array in SimpleITK's numpy order, the reverse of the file's
(x, y, z) index order, so a 3D volume is indexed [z, y, x]; `spacing` lists the voxel size in mm
in that same order (z, y, x). The nibabel reader transposes its (x, y, z) array to match, so a
NIfTI prediction and an MHA ground truth of the same grid compare equal whichever package read
them. Multi-component (vector) images keep the component axis last; `spacing` covers only the
spatial axes.

SimpleITK and nibabel are imported only when a file needs them, so a classification challenge's
image never needs either.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import numpy as np

from .errors import EvaluationError, MissingReaderError

Backend = Literal["auto", "simpleitk", "nibabel"]

NIFTI_EXTENSIONS = (".nii.gz", ".nii")
ITK_EXTENSIONS = (".mha", ".mhd", ".nrrd", ".nhdr")
NUMPY_EXTENSIONS = (".npy",)
IMAGE_EXTENSIONS = NIFTI_EXTENSIONS + ITK_EXTENSIONS + NUMPY_EXTENSIONS
# Files that carry the voxels of a header file above (case.mhd + case.raw); never cases themselves.
COMPANION_EXTENSIONS = (".raw", ".zraw", ".raw.gz")


@dataclass(frozen=True)
class Image:
    """An image's voxels and spacing (mm), both in numpy axis order: [z, y, x] for a 3D volume."""

    array: np.ndarray[Any, Any]
    spacing: tuple[float, ...]


def image_extension(path: Path | str) -> str | None:
    """The supported extension `path` ends with (case-insensitive; '.nii.gz' before '.gz'), or None."""
    name = Path(path).name.lower()
    return next((ext for ext in IMAGE_EXTENSIONS if name.endswith(ext)), None)


def case_name(path: Path | str) -> str:
    """The file name without its image extension: 'case1.nii.gz' -> 'case1'."""
    name = Path(path).name
    ext = image_extension(name)
    return name[: -len(ext)] if ext else name


def read_image(path: Path | str, *, backend: Backend = "auto") -> Image:
    """Read a NIfTI, MHA/MHD, NRRD or .npy file (see the module docstring for the axis order).

    `backend` picks the package for NIfTI: "auto" tries SimpleITK, then nibabel. .npy files hold
    no spacing and get 1 mm on every axis. An unreadable file raises EvaluationError naming it, as
    a participant's corrupt prediction is theirs to fix; a missing package raises MissingReaderError.
    """
    path = Path(path)
    ext = image_extension(path)
    if ext is None:
        raise EvaluationError(f"{path.name} is not a supported image; use one of {', '.join(IMAGE_EXTENSIONS)}")
    if not path.is_file():
        raise EvaluationError(f"{path.name} does not exist or is not a file")
    if ext in NUMPY_EXTENSIONS:
        return _read_npy(path)
    reader = _pick_reader(ext, backend)
    try:
        return reader(path)
    except (MissingReaderError, MemoryError):
        raise
    except Exception:  # each package fails in its own way on a corrupt file; the participant needs one line
        raise EvaluationError(f"{path.name} could not be read as a {ext} image; is the file complete?") from None


def _pick_reader(ext: str, backend: Backend) -> Callable[[Path], Image]:
    """The reader function for this extension, honouring `backend`, or MissingReaderError."""
    nifti = ext in NIFTI_EXTENSIONS
    if backend == "nibabel" and not nifti:
        raise ValueError(f"nibabel reads NIfTI only, not {ext}")
    if backend in ("auto", "simpleitk") and _optional("SimpleITK") is not None:
        return _read_simpleitk
    if nifti and backend in ("auto", "nibabel") and _optional("nibabel") is not None:
        return _read_nibabel
    wanted = {"auto": "SimpleITK or nibabel" if nifti else "SimpleITK", "simpleitk": "SimpleITK"}.get(backend, backend)
    raise MissingReaderError(f"Reading {ext} files needs {wanted}: install it in the evaluation image")


def _optional(module: str) -> ModuleType | None:
    """Import `module` if installed; the import happens here, at first use, never at package import."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def _read_simpleitk(path: Path) -> Image:
    sitk: Any = importlib.import_module("SimpleITK")
    image = sitk.ReadImage(str(path))
    array = sitk.GetArrayFromImage(image)
    spacing = tuple(float(s) for s in reversed(image.GetSpacing()))
    return Image(array=array, spacing=spacing)


def _read_nibabel(path: Path) -> Image:
    nib: Any = importlib.import_module("nibabel")
    image = nib.load(str(path))
    data = np.asanyarray(image.dataobj)
    zooms = image.header.get_zooms()[: data.ndim]
    # nibabel indexes [x, y, z]; transposing gives SimpleITK's [z, y, x] (the same voxels in file order).
    return Image(array=np.ascontiguousarray(data.T), spacing=tuple(float(z) for z in reversed(zooms)))


def _read_npy(path: Path) -> Image:
    try:
        array = np.load(path, allow_pickle=False)
    except Exception:  # pickled objects, truncated files, wrong magic: all mean "not a plain array"
        raise EvaluationError(f"{path.name} could not be read as a numpy array (.npy without pickles)") from None
    return Image(array=array, spacing=(1.0,) * array.ndim)
