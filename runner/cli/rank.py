"""`challenge rank`: rank per-case results (a CSV file: task, case, algorithm, value) with challengeR's
methods, optionally with bootstrap rank intervals, as a table, CSV or JSON."""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path
from typing import cast, get_args

import pandas as pd
from rich.table import Table

from runner.ranking.methods import (
    COLUMNS,
    Aggregate,
    Method,
    PAdjust,
    RankSpec,
    Ties,
    rank,
)
from runner.ranking.uncertainty import bootstrap

from . import summary
from .common import SubParsers, UsageError, print_table

MISSING_TOKENS = {"", "NA", "NaN", "nan", "null"}
TITLES = {"aggregate-then-rank": "{aggregate}", "rank-then-aggregate": "{aggregate} rank",
          "test-then-rank": "share beaten"}


def register(sub: SubParsers) -> None:
    r = sub.add_parser("rank", help=summary("rank"))
    r.add_argument("file", type=Path, help="CSV file: task, case, algorithm, value (NA or empty: missing)")
    r.add_argument("--method", choices=get_args(Method), default="aggregate-then-rank")
    r.add_argument("--aggregate", choices=get_args(Aggregate), default="mean")
    r.add_argument("--smaller-better", action="store_true", help="smaller values are better (default: larger)")
    r.add_argument("--ties", choices=get_args(Ties), default="min")
    r.add_argument("--missing", type=_missing, default="drop",
                   help="drop a missing value (default), or replace it with this number")
    r.add_argument("--p-adjust", choices=get_args(PAdjust), default="none")
    r.add_argument("--alpha", type=float, default=0.05)
    r.add_argument("--bootstrap", type=_positive, metavar="N",
                   help="add the median rank and 95%% interval over N bootstrap samples of the cases")
    r.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    r.add_argument("--format", choices=("table", "csv", "json"), default="table")
    r.set_defaults(func=cmd_rank)


def cmd_rank(args: argparse.Namespace) -> int:
    try:
        spec = RankSpec(method=args.method, aggregate=args.aggregate, smaller_better=args.smaller_better,
                        ties=args.ties, missing=args.missing, alpha=args.alpha, p_adjust=args.p_adjust)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    results = read_results(args.file)
    ranking = rank(results, spec)
    if args.bootstrap:
        ranking = _with_intervals(ranking, results, spec=spec, samples=args.bootstrap, seed=args.seed)
    if args.format == "json":
        records = ranking.to_dict("records")
        print(json.dumps([{k: _plain(v) for k, v in r.items()} for r in records], indent=2))
    elif args.format == "csv":
        print(ranking.to_csv(index=False), end="")
    else:
        print_table(_table(ranking, spec=spec, path=args.file))
    return 0


def read_results(path: Path) -> pd.DataFrame:
    """The long-format results in a CSV file; a bad row is a UsageError naming file, line and column."""
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise UsageError(f"{path}:1: {missing[0]}: missing column (need {', '.join(COLUMNS)})")
        rows: list[list[str | float]] = []
        first_line: dict[tuple[str | float, ...], int] = {}
        for row in reader:
            line = reader.line_num
            rows.append(_parse_row(row, path, line))
            key = tuple(rows[-1][:3])
            if key in first_line:
                raise UsageError(f"{path}:{line}: case: {key[2]} has a second value for case {key[1]} "
                                 f"of task {key[0]} (first on line {first_line[key]})")
            first_line[key] = line
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _parse_row(row: dict[str, str | None], path: Path, line: int) -> list[str | float]:
    cells = {column: (row[column] or "").strip() for column in COLUMNS}  # None: a cell a short row lacks
    for column in ("task", "case", "algorithm"):
        if not cells[column]:
            raise UsageError(f"{path}:{line}: {column}: empty")
    text = cells["value"]
    try:
        value = math.nan if text in MISSING_TOKENS else float(text)
    except ValueError:
        raise UsageError(f"{path}:{line}: value: not a number: {text!r}") from None
    return [cells["task"], cells["case"], cells["algorithm"], value]


def _with_intervals(ranking: pd.DataFrame, results: pd.DataFrame, *, spec: RankSpec, samples: int,
                    seed: int) -> pd.DataFrame:
    intervals = []
    for task, group in results.groupby("task", sort=False):
        summary = bootstrap(group, spec, samples=samples, seed=seed)
        intervals.append(pd.DataFrame({"task": task, "algorithm": summary.algorithms,
                                       "median_rank": summary.median_rank.values(),
                                       "ci_low": summary.ci_low.values(), "ci_high": summary.ci_high.values()}))
    return ranking.merge(pd.concat(intervals), on=["task", "algorithm"], how="left")


def _table(ranking: pd.DataFrame, *, spec: RankSpec, path: Path) -> Table:
    value = TITLES[spec.method].format(aggregate=spec.aggregate)
    table = Table(title=f"{path.name}: {spec.method}")
    intervals = "median_rank" in ranking
    headers = ["Task", "Rank", "Algorithm", value.capitalize()] + (["Median rank", "95% interval"] if intervals else [])
    for name in headers:
        table.add_column(name, justify="left" if name in ("Task", "Algorithm") else "right")
    for r in ranking.itertuples():
        cells = [str(r.task), _number(r.rank), str(r.algorithm), _number(r.value)]
        if intervals:
            cells += [_number(r.median_rank), f"{_number(r.ci_low)}–{_number(r.ci_high)}"]
        table.add_row(*cells)
    return table


def _number(v: object) -> str:
    number = cast(float, v)  # a ranking's ranks and values are floats (NaN: none); pandas-stubs says any scalar
    return "–" if pd.isna(number) else f"{number:.4g}"


def _plain(v: object) -> object:
    """JSON-ready: numpy scalars to Python, NaN to null."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and math.isnan(v) else v


def _missing(text: str) -> str | float:
    if text == "drop":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'drop' or a number, not {text!r}") from None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not {text!r}")
    return int(text)
