"""Pairing each ground-truth image with the participant's prediction, and checking their grids agree.

A case is named by its file name without the image extension, so `case1.nii.gz` and `case1.mha`
are both case `case1`: a prediction may use any supported format, whatever the ground truth uses.
Problems with the participant's folder raise EvaluationError, one line naming the case(s);
problems with the ground-truth folder raise RuntimeError, since they are the organizer's to fix.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .errors import EvaluationError, listing
from .images import COMPANION_EXTENSIONS, IMAGE_EXTENSIONS, Backend, Image, case_name, image_extension, read_image
from .tables import check_keys


@dataclass(frozen=True)
class Case:
    """One case: its name and the two files to compare."""

    name: str
    prediction: Path
    ground_truth: Path


def match_cases(predictions: Path | str, ground_truth: Path | str, *, allow_extra: bool = False) -> list[Case]:
    """Every ground-truth case with its prediction, sorted by name.

    Raises EvaluationError for a case with two predictions, missing predictions and (unless
    `allow_extra`) predictions or other files that match no case. Hidden files, folders and .raw
    companions of .mhd headers are ignored.
    """
    truth = _ground_truth_files(Path(ground_truth))
    found, strays = _prediction_files(Path(predictions))
    _check_duplicates(found)
    if not found and not strays:
        raise EvaluationError(_nothing_found(Path(predictions), truth))
    check_keys(truth, found, what="predictions", allow_extra=allow_extra)
    if strays and not allow_extra:
        raise EvaluationError(
            f"Unexpected files {listing(strays)}: predictions must be {_formats()} files named after their case"
        )
    return [Case(name=name, prediction=found[name][0], ground_truth=truth[name]) for name in truth]


def check_geometry(case: str, prediction: Image, truth: Image, *, spacing_rtol: float = 1e-4) -> None:
    """EvaluationError unless the prediction's shape equals the truth's and its spacing agrees within `spacing_rtol`.

    The tolerance absorbs NIfTI's float32 spacing against a text header's decimal one; a real
    resampling mistake differs far more.
    """
    if prediction.array.shape != truth.array.shape:
        raise EvaluationError(
            f"Case {case}: the prediction has shape {_shape(prediction)}, expected {_shape(truth)}"
        )
    if not all(math.isclose(p, t, rel_tol=spacing_rtol) for p, t in zip(prediction.spacing, truth.spacing)):
        raise EvaluationError(
            f"Case {case}: the prediction has spacing {_mm(prediction.spacing)}, expected {_mm(truth.spacing)}"
        )


def load_case(case: Case, *, spacing_rtol: float = 1e-4, backend: Backend = "auto") -> tuple[Image, Image]:
    """(prediction, ground truth) of `case`, read and checked with check_geometry."""
    truth = read_image(case.ground_truth, backend=backend)
    prediction = read_image(case.prediction, backend=backend)
    check_geometry(case.name, prediction, truth, spacing_rtol=spacing_rtol)
    return prediction, truth


def _ground_truth_files(folder: Path) -> dict[str, Path]:
    """Case name to file; the organizer's folder must hold one image per case."""
    if not folder.is_dir():
        raise RuntimeError(f"Ground-truth folder {folder} does not exist")
    files, _others = _images_by_case(folder)
    doubled = {name: paths for name, paths in files.items() if len(paths) > 1}
    if doubled:
        name, paths = next(iter(sorted(doubled.items())))
        raise RuntimeError(f"Ground truth has {len(paths)} files for case {name}: {listing(p.name for p in paths)}")
    if not files:
        raise RuntimeError(f"No ground-truth images ({_formats()}) in {folder}")
    return {name: paths[0] for name, paths in sorted(files.items())}


def _prediction_files(folder: Path) -> tuple[dict[str, list[Path]], list[str]]:
    if not folder.is_dir():
        raise EvaluationError(f"No predictions found: {folder} is not a folder")
    return _images_by_case(folder)


def _images_by_case(folder: Path) -> tuple[dict[str, list[Path]], list[str]]:
    """Image files grouped by case name, and the names of other (non-hidden, non-companion) files."""
    files: defaultdict[str, list[Path]] = defaultdict(list)
    strays = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or not path.is_file():
            continue
        if image_extension(path) is not None:
            files[case_name(path)].append(path)
        elif not path.name.lower().endswith(COMPANION_EXTENSIONS):
            strays.append(path.name)
    return dict(files), strays


def _check_duplicates(found: dict[str, list[Path]]) -> None:
    for name, paths in sorted(found.items()):
        if len(paths) > 1:
            raise EvaluationError(
                f"Case {name} has {len(paths)} predictions ({listing(p.name for p in paths)}); submit one file per case"
            )


def _nothing_found(folder: Path, truth: dict[str, Path]) -> str:
    """The message for an empty submission, pointing at a nested folder when there is one (a zipped folder)."""
    example = next(iter(truth.values())).name
    nested = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "__MACOSX")))
    if nested:
        return (
            f"No predictions found at the top level of the submission (only the folder {nested[0]}/); "
            f"expected files such as {example}"
        )
    return f"No predictions found; expected {len(truth)} files such as {example}"


def _formats() -> str:
    return ", ".join(IMAGE_EXTENSIONS)


def _shape(image: Image) -> str:
    return "(" + ", ".join(str(n) for n in image.array.shape) + ")"


def _mm(spacing: tuple[float, ...]) -> str:
    return "(" + ", ".join(f"{s:g}" for s in spacing) + ") mm"
