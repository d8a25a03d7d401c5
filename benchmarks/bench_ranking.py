"""Ranking with uncertainty at scale: 500 teams x 200 cases x 5 metrics, 1000 bootstrap samples.

Run: .venv/bin/python benchmarks/bench_ranking.py [--teams 500] [--cases 200] [--samples 1000]
Prints seconds per stage (wall clock) and each stage against a baseline measured in the same run:
a plain pandas groupby-mean-then-rank of every metric. Target: under 10 s in all, and at least 10x
faster than challengeR (aggregate-then-rank, bootstrap, Kendall's tau) where R and challengeR are installed
(`setup_challenger`: R and challengeR's dependencies from Debian; challengeR, and `relations`, which Debian does
not package, from their sources under build/, in a temporary library). Without them the pandas baseline is
the only comparison, and the benchmark says so. challengeR's bootstrap is slow: `--challenger-samples N`
times it on N samples and scales the time to --samples (bootstrap time is linear in the samples), and says so.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from runner.ranking.methods import (
    Metric,
    RankSpec,
    flare_rank,
    rank,
    significance,
    task_matrix,
)
from runner.ranking.uncertainty import bootstrap

METRICS = (Metric("DSC"), Metric("NSD"), Metric("HD95", smaller_better=True),
           Metric("time", smaller_better=True), Metric("memory", smaller_better=True))


def synthetic(teams: int, cases: int, seed: int = 0) -> pd.DataFrame:
    """Long format with a metric column; skill shared across metrics, 1% failed cases (NaN)."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(size=(teams, 1))
    frames = []
    for metric in METRICS:
        sign = -1 if metric.smaller_better else 1
        values = np.round(sign * 0.05 * skill + rng.normal(scale=0.1, size=(teams, cases)) + 0.7, 3)
        values[rng.random(values.shape) < 0.01] = np.nan
        frames.append(pd.DataFrame({"task": metric.name, "metric": metric.name,
                                    "case": np.tile([f"case{c:03d}" for c in range(cases)], teams),
                                    "algorithm": np.repeat([f"team{t:03d}" for t in range(teams)], cases),
                                    "value": values.ravel()}))
    return pd.concat(frames, ignore_index=True)


def baseline(frame: pd.DataFrame) -> None:
    means = frame.groupby(["task", "algorithm"])["value"].mean()
    means.groupby(level="task").rank(method="min", ascending=False)


def timed(stage, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    result = stage(*args, **kwargs)
    return time.perf_counter() - start, result


def taus(ranks: np.ndarray) -> list[float]:
    return [stats.kendalltau(ranks[0], r).statistic for r in ranks]


CHALLENGER = """
.libPaths(c("{lib}", .libPaths()))
suppressMessages(library(challengeR))
data <- read.csv("{csv}")
start <- Sys.time()
challenge <- as.challenge(data, by = "task", algorithm = "algorithm", case = "case", value = "value",
                          smallBetter = FALSE, na.treat = 0)
ranking <- aggregateThenRank(challenge, FUN = mean, ties.method = "min")
ranked <- Sys.time()
booted <- bootstrap(ranking, nboot = {samples})
cat(as.numeric(difftime(ranked, start, units = "secs")), as.numeric(difftime(Sys.time(), ranked, units = "secs")),
    "\\n")
"""


# Sources under build/ installed into the temporary library, in this order, where present: clones of
# github.com/cran/relations (not in Debian) and github.com/wiesenfa/challengeR.
SOURCES = ("relations", "challengeR")


def setup_challenger(work: Path) -> Path | None:
    """A temporary R library holding challengeR, built from its source where R and all of its dependencies
    are installed; None (and why, printed) where they are not."""
    if not shutil.which("Rscript"):
        print("challengeR: R is not installed (apt-get install r-base-core); comparing with pandas only")
        return None
    build = Path(__file__).resolve().parents[1] / "build"
    if not (build / "challengeR").is_dir():
        print(f"challengeR: no source in {build / 'challengeR'}; comparing with pandas only")
        return None
    lib = work / "R-library"
    lib.mkdir()
    for source in (build / name for name in SOURCES if (build / name).is_dir()):
        done = subprocess.run(["R", "CMD", "INSTALL", f"--library={lib}", str(source)], capture_output=True,
                              text=True, env={**os.environ, "R_LIBS": str(lib)})
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
            print(f"challengeR: R CMD INSTALL {source.name} failed ({why}); comparing with pandas only")
            return None
    return lib


def challenger_seconds(frame: pd.DataFrame, samples: int) -> tuple[float, float] | None:
    """challengeR's aggregate-then-rank and its bootstrap on the same data, each in seconds, or None without it."""
    with tempfile.TemporaryDirectory() as tmp:
        lib = setup_challenger(Path(tmp))
        if lib is None:
            return None
        csv = Path(tmp) / "data.csv"
        frame.drop(columns="metric").to_csv(csv, index=False)
        script = CHALLENGER.format(lib=lib, csv=csv, samples=samples)
        done = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, check=True)
        ranked, booted = done.stdout.split()[-2:]
        return float(ranked), float(booted)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--teams", type=int, default=500)
    p.add_argument("--cases", type=int, default=200)
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--challenger-samples", type=int, help="bootstrap samples challengeR is timed on, scaled to "
                                                           "--samples (default: --samples)")
    args = p.parse_args()
    frame = synthetic(args.teams, args.cases)
    base, _ = timed(baseline, frame)
    stages = {
        "aggregate-then-rank (mean)": timed(rank, frame.drop(columns="metric"))[0],
        "FLARE rank-then-average over the 5 metrics": timed(flare_rank, frame, METRICS)[0],
        f"bootstrap x{args.samples}, Kendall tau, significance map": 0.0,
    }
    parts = {"significance map": 0.0, "Kendall tau": 0.0}  # timed again alone, inside the bootstrap
    for metric in METRICS:
        group, spec = frame[frame["task"] == metric.name], RankSpec(smaller_better=metric.smaller_better)
        seconds, summary = timed(bootstrap, group, spec, samples=args.samples)
        stages[f"bootstrap x{args.samples}, Kendall tau, significance map"] += seconds
        parts["significance map"] += timed(significance, task_matrix(group, spec)[1], spec)[0]
        parts["Kendall tau"] += timed(taus, summary.ranks)[0]
    print(f"{args.teams} teams x {args.cases} cases x {len(METRICS)} metrics, {args.samples} bootstrap samples"
          f" (seconds, wall clock, all metrics)")
    print(f"  {'baseline: pandas groupby mean, then rank':<58} {base:7.3f} s  {1:8.1f} x baseline")
    for name, seconds in stages.items():
        print(f"  {name:<58} {seconds:7.3f} s  {seconds / base:8.1f} x baseline")
    for name, seconds in parts.items():
        print(f"    {'of which ' + name + ' (timed alone)':<56} {seconds:7.3f} s")
    total = sum(stages.values())
    print(f"  {'total':<58} {total:7.3f} s  ({total / len(METRICS):.3f} s a metric; target: under 10 s in all)")
    timed_on = args.challenger_samples or args.samples
    theirs = challenger_seconds(frame, timed_on)
    if theirs is not None:
        booted = stages[f"bootstrap x{args.samples}, Kendall tau, significance map"]
        ours = stages["aggregate-then-rank (mean)"] + booted
        ranked, booted_theirs = theirs
        scaled = ranked + booted_theirs * args.samples / timed_on
        how = "" if timed_on == args.samples else (f" (ranking {ranked:.1f} s, bootstrap {booted_theirs:.1f} s timed "
                                                   f"on {timed_on} samples and scaled)")
        print(f"  challengeR, aggregate-then-rank and bootstrap x{args.samples}: {scaled:.1f} s{how}; "
              f"ours {ours:.2f} s: {scaled / ours:.1f} x faster (target: 10 x)")
    else:
        print("  challengeR not run: the only baseline is pandas' aggregate-then-rank above")


if __name__ == "__main__":
    main()
