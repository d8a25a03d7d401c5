"""CSV tables (predictions for classification or detection, ground-truth labels) with the stdlib csv module.

Every problem in a participant's file becomes an EvaluationError that names the file, the line
and the column, because that one line is all the participant sees.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import EvaluationError, listing

Row = dict[str, str]


def read_csv(path: Path | str, *, required_columns: Sequence[str] = (), delimiter: str = ",") -> list[Row]:
    """Rows of a CSV file with a header line, as dicts of stripped strings.

    A UTF-8 byte-order mark (spreadsheets write one) is dropped. Missing file, non-UTF-8 text, no
    header, a missing required column or a row with too many or too few fields raise
    EvaluationError.
    """
    path = Path(path)
    if not path.is_file():
        raise EvaluationError(f"Expected a file {path.name}; it is missing")
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            return _parse(csv.reader(handle, delimiter=delimiter), path.name, required_columns)
    except UnicodeDecodeError:
        raise EvaluationError(f"{path.name} is not UTF-8 text") from None
    except csv.Error as exc:
        raise EvaluationError(f"{path.name} is not valid CSV: {exc}") from None


def _parse(reader: Iterable[list[str]], name: str, required: Sequence[str]) -> list[Row]:
    lines = iter(reader)
    header = [cell.strip() for cell in next(lines, [])]
    if not any(header):
        raise EvaluationError(f"{name} is empty; expected a header line with {', '.join(required) or 'column names'}")
    missing = [column for column in required if column not in header]
    if missing:
        raise EvaluationError(f"{name} has no column {', '.join(missing)}; found columns {', '.join(header)}")
    rows = []
    for number, cells in enumerate(lines, start=2):
        if not any(cell.strip() for cell in cells):
            continue  # blank lines, common at the end of hand-edited files
        if len(cells) != len(header):
            raise EvaluationError(f"{name} line {number} has {len(cells)} fields; expected {len(header)}")
        rows.append({column: cell.strip() for column, cell in zip(header, cells)})
    return rows


def parse_float(value: str, *, column: str, where: str) -> float:
    """`value` as a finite float, or EvaluationError naming `where` (e.g. 'predictions.csv case7')."""
    try:
        number = float(value)
    except ValueError:
        raise EvaluationError(f"{where}: {column} {value!r} is not a number") from None
    if not math.isfinite(number):
        raise EvaluationError(f"{where}: {column} is {value}; expected a finite number")
    return number


def index_rows(rows: Iterable[Row], *, key: str, source: str) -> dict[str, Row]:
    """Rows keyed by their `key` column; a key given twice raises EvaluationError naming it."""
    indexed: dict[str, Row] = {}
    for row in rows:
        value = row[key]
        if value in indexed:
            raise EvaluationError(f"{source} lists {key} {value} more than once; give one row per {key}")
        indexed[value] = row
    return indexed


def check_keys(expected: Iterable[str], found: Iterable[str], *, what: str, allow_extra: bool = False) -> None:
    """Missing, then unexpected, keys as EvaluationError: 'Missing predictions for 2 of 10 cases: a, b'."""
    wanted, given = list(expected), set(found)
    missing = [key for key in wanted if key not in given]
    if missing:
        raise EvaluationError(f"Missing {what} for {len(missing)} of {len(wanted)} cases: {listing(missing)}")
    extra = sorted(given - set(wanted))
    if extra and not allow_extra:
        raise EvaluationError(f"Unexpected {what} for cases not in the test set: {listing(extra)}")
