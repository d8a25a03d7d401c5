"""The README's demo command, as a new user pays for it: on a fresh clone, then once more.

A fresh clone of HEAD in a temporary folder (no .venv, no .demo/), and an engine without the
images the demo makes (the offline base, the evaluation and example images: removed by name first),
then `bash scripts/demo.sh --no-serve` timed to its end, as README says to type it; then the same
command again in the same clone (the second run: everything evaluated is resumed, nothing runs twice).
The second run's time is printed as a ratio of the first, measured in the same run. The demo's own
stage lines ("... done in N s") are printed beside the totals.

Left out, and printed: the system packages scripts/setup.sh installs once per machine (debootstrap,
chromium) when they are already there, pip's wheel cache (a machine that never ran pip downloads the
wheels), and the Debian mirror's speed (debootstrap reads the machine's own mirror).

Removes images from the engine: do not run it beside the test suite.
Run: .venv/bin/python benchmarks/bench_demo.py [--keep]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What the demo builds or imports, by name: nothing else on the engine is touched.
DEMO_IMAGES = ("challenge-base", "challenge-eval/*", "challenge-example/*")


def remove_demo_images() -> int:
    names = [line for pattern in DEMO_IMAGES for line in subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", f"reference={pattern}"],
        capture_output=True, text=True, check=True).stdout.split()]
    if names:
        subprocess.run(["docker", "rmi", "--force", *names], capture_output=True, check=False)
    return len(names)


def timed_demo(clone: Path, log: Path) -> float:
    start = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(["bash", "scripts/demo.sh", "--no-serve"], cwd=clone, stdout=out,
                              stderr=subprocess.STDOUT, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"the demo failed ({done.returncode}); its log: {log}")
    return elapsed


def stages(log: Path) -> list[str]:
    return [line.strip() for line in log.read_text(errors="replace").splitlines() if re.search(r"done in \d", line)]


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--keep", action="store_true", help="keep the clone and the demo's logs")
    args = cli.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-demo-"))
    clone = work / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    removed = remove_demo_images()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    print(f"fresh clone of {head.strip()}; {removed} demo images removed from the engine")
    fresh = timed_demo(clone, work / "fresh.log")
    print(f"fresh:  {fresh:7.1f} s  (target under 360 s)")
    for line in stages(work / "fresh.log"):
        print(f"        {line}")
    second = timed_demo(clone, work / "second.log")
    print(f"second: {second:7.1f} s  = {second / fresh:.2f}x the fresh run (target under 60 s)")
    for line in stages(work / "second.log"):
        print(f"        {line}")
    print("left out: system packages already installed (debootstrap, chromium), pip's wheel cache, "
          "the Debian mirror's speed")
    if args.keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
