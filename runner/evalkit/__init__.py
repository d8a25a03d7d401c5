"""evalkit: the pieces every evaluation container re-implements, written once and tested.

Must not import anything else from `runner`: evaluation images get a copy of this folder alone
(`COPY evalkit/ /opt/evaluation/evalkit/`) and import it as `evalkit`, so every import inside it
is relative and reaches no further than this folder. It needs numpy and scipy; reading images needs
SimpleITK (any format) or nibabel (NIfTI only), imported only when an image is read.

A segmentation challenge's evaluate.py::

    from evalkit import EvaluationError, load_case, match_cases, segmentation_metrics, write_metrics

    cases = {}
    for case in match_cases("/input", "/opt/ml/input/data/ground_truth"):
        prediction, truth = load_case(case)
        cases[case.name] = segmentation_metrics(truth.array > 0, prediction.array > 0, truth.spacing,
                                                tolerance_mm=2.0, empty="flare")
    write_metrics(cases, "/output/metrics.json")

An EvaluationError left uncaught ends the container with its message as the last stderr line,
which grand-challenge.org shows the participant: each message names the case, what is wrong and
what was expected.

Conventions, documented in each module: arrays and spacings in numpy axis order ([z, y, x]);
surface metrics exactly as google-deepmind/surface-distance; classification metrics as
scikit-learn; detection as LUNA16's FROC and CPM.
"""

from .cases import Case, check_geometry, load_case, match_cases
from .classification import accuracy, auroc, balanced_accuracy, log_loss
from .detection import CPM_FP_RATES, Candidate, Froc, Lesion, cpm, froc, sensitivity_at
from .errors import EvaluationError, MissingReaderError
from .images import IMAGE_EXTENSIONS, Image, case_name, read_image
from .report import aggregate, write_metrics
from .segmentation import dice, iou, segmentation_metrics
from .surface import (
    SurfaceDistances,
    compute_average_surface_distance,
    compute_dice_coefficient,
    compute_robust_hausdorff,
    compute_surface_dice_at_tolerance,
    compute_surface_distances,
    compute_surface_overlap_at_tolerance,
)
from .tables import check_keys, index_rows, parse_float, read_csv

__all__ = [
    "CPM_FP_RATES",
    "IMAGE_EXTENSIONS",
    "Candidate",
    "Case",
    "EvaluationError",
    "Froc",
    "Image",
    "Lesion",
    "MissingReaderError",
    "SurfaceDistances",
    "accuracy",
    "aggregate",
    "auroc",
    "balanced_accuracy",
    "case_name",
    "check_geometry",
    "check_keys",
    "compute_average_surface_distance",
    "compute_dice_coefficient",
    "compute_robust_hausdorff",
    "compute_surface_dice_at_tolerance",
    "compute_surface_distances",
    "compute_surface_overlap_at_tolerance",
    "cpm",
    "dice",
    "froc",
    "index_rows",
    "iou",
    "load_case",
    "log_loss",
    "match_cases",
    "parse_float",
    "read_csv",
    "read_image",
    "segmentation_metrics",
    "sensitivity_at",
    "write_metrics",
]
