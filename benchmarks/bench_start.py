"""The `challenge` command's own start: `challenge --help` and each command's `--help`, new processes.

Each is what a user or a workflow step pays before any work: the interpreter, the imports, the
argument parser. The baseline, in the same run, is a bare `python -c pass` of the same interpreter.
Each figure is the median of `--repeat` runs, the commands interleaved so that load spreads evenly.
Target: `challenge --help` under 0.3 s.

Left out: the work of each command (its --help stops before it), a cold file cache (the first run of
each is dropped).

Run: .venv/bin/python benchmarks/bench_start.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from runner.cli import COMMANDS

CHALLENGE = str(Path(sys.executable).with_name("challenge"))
TARGET_S = 0.3


def once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    probes = {"python -c pass (baseline)": [sys.executable, "-c", "pass"], "challenge --help": [CHALLENGE, "--help"]}
    probes.update({f"challenge {name} --help": [CHALLENGE, name, "--help"] for name in COMMANDS})
    for argv in probes.values():  # warms the file cache
        once(argv)
    runs: dict[str, list[float]] = {label: [] for label in probes}
    for _ in range(args.repeat):
        for label, argv in probes.items():
            runs[label].append(once(argv))
    base = statistics.median(runs["python -c pass (baseline)"])
    print(f"median of {args.repeat} runs each, new processes")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):  # what a user with it set pays too, but say so
        print("  note: PYTHONDONTWRITEBYTECODE is set: each process compiles the modules it imports again")
    for label, values in sorted(runs.items(), key=lambda item: statistics.median(item[1])):
        median = statistics.median(values)
        print(f"  {label:<40} {median:6.3f} s  {median / base:5.1f}x baseline")
    top = statistics.median(runs["challenge --help"])
    print(f"{'PASS' if top < TARGET_S else 'FAIL'}  challenge --help < {TARGET_S} s ({top:.3f} s)")
    sys.exit(0 if top < TARGET_S else 1)


if __name__ == "__main__":
    main()
