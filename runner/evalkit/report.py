"""Writing /output/metrics.json in grand-challenge.org's shape.

{"case": {case: {metric: value}}, "aggregates": {metric: {"mean", "std", "min", "max", "median"}}}

Leaderboards read it through JSONPath (e.g. `aggregates.dsc.mean`). NaN and inf are not JSON, so
they are written as null, which grand-challenge reads as "no value": a result missing its ranked
metric is shown unranked. Aggregates use every case: one NaN makes the mean and std NaN (null)
rather than silently averaging the cases that worked; an inf makes the mean inf (null) while min,
max and median stay meaningful. Replace undefined values with a worst value before writing (as
FLARE does) when that is the challenge's rule. std is the population standard deviation (ddof=0).
The mean and median of finite values are exact on the decimals the values print as, rounded once.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

STATISTICS = ("mean", "std", "min", "max", "median")


def aggregate(cases: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean, std, min, max and median of every numeric metric over all cases.

    A metric missing from some case counts as NaN there; metrics holding strings or booleans
    (file names, flags) in any case are not aggregated.
    """
    names = list(dict.fromkeys(name for metrics in cases.values() for name in metrics))
    result = {}
    for name in names:
        values = [metrics.get(name, math.nan) for metrics in cases.values()]
        if all(_is_number(v) for v in values):
            result[name] = _statistics(np.asarray(values, dtype=np.float64))
    return result


def write_metrics(
    cases: Mapping[str, Mapping[str, Any]],
    path: Path | str,
    extra_aggregates: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write {"case": cases, "aggregates": aggregate(cases) | extra_aggregates} to `path`; return it.

    The file appears whole or not at all (written beside it, then renamed), so a crash never
    leaves half a JSON file for the runner to read. `extra_aggregates` (e.g. a CPM or an AUROC over
    all cases) may not reuse a per-case metric's name.
    """
    aggregates: dict[str, Any] = dict(aggregate(cases))
    clash = sorted(set(aggregates) & set(extra_aggregates or {}))
    if clash:
        raise ValueError(f"extra_aggregates repeats per-case metrics: {', '.join(clash)}")
    aggregates.update(extra_aggregates or {})
    document = _jsonable({"case": {str(k): v for k, v in cases.items()}, "aggregates": aggregates})
    _write_atomically(Path(path), json.dumps(document, indent=2, allow_nan=False) + "\n")
    return dict(document)


def _statistics(values: np.ndarray[Any, np.dtype[np.float64]]) -> dict[str, float]:
    if np.isnan(values).any():
        return dict.fromkeys(STATISTICS, math.nan)
    exact = _decimals(values) if np.isfinite(values).all() else None
    with np.errstate(invalid="ignore"):  # inf - inf inside std is NaN, which is what we want
        return {
            "mean": float(np.mean(values)) if exact is None else float(sum(exact, Fraction(0)) / len(exact)),
            "std": float(np.std(values)),
            "min": float(np.min(values)),
            "max": float(np.max(values)),
            "median": float(np.median(values)) if exact is None else float(_middle(exact)),
        }


def _decimals(values: np.ndarray[Any, np.dtype[np.float64]]) -> list[Fraction]:
    """The values as the decimals they print as (0.1 is one tenth), sorted: their mean and median,
    rounded once, are equal for results equal on paper and for cases in any order, as the
    leaderboards' rankings take them (runner/ranking/exact.py; this kit is copied alone)."""
    return sorted(Fraction(repr(v)) for v in values.tolist())


def _middle(ordered: list[Fraction]) -> Fraction:
    return (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)


def _jsonable(value: Any) -> Any:
    """Plain JSON types: numpy scalars and arrays unwrapped, NaN and ±inf as None, keys as strings."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(handle, 0o644)  # mkstemp's 0600 would hide the file from a runner running as another user
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
