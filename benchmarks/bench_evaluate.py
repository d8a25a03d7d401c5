"""Overhead of `challenge evaluate` against bare `docker run` of the same containers, same run.

A do-nothing algorithm and a do-nothing evaluation (it writes a constant metrics.json) are run
(1) by bare `docker run --rm` with the same input/output mounts; (2) by `challenge evaluate`, each call
a new process (a cold one), in batch mode (one algorithm run) and per-case mode (20 runs); (3) by the
least any cold process can do (`floor_evaluate.py`: docker-py and the tree's models imported, the
phase and submission validated, both containers run with the sandbox's options and removed); and
(4) by `challenge evaluate --runner SOCKET`, one submission per call handed to a warm runner
(`challenge runner`). Cold calls come in `--cold` triples (bare, cold, floor; which goes first
rotates), warm ones in `--pairs` interleaved pairs (which goes first alternates). A warm job is timed
until its containers are removed too (the runner removes them in the background after it answers;
bare `docker run --rm` waits for it). Each ratio is the median of its triples' or pairs' ratios,
with its 95 % interval (order statistics: no assumption on the shape of the ratios). Targets
(issues 3, 13, 26): one submission through a warm runner at most 1.15 x bare; a cold `challenge
evaluate` process at most 1.5 x; per case at most 0.15 s above bare docker run.

Left out: emptying a pooled /output area, which the runner's keeper does before the area's next use
(one agent call, milliseconds) and which bare `docker run` has no counterpart of; image builds (done
once, before timing). What the floor leaves out is in floor_evaluate.py.

Run: .venv/bin/python benchmarks/bench_evaluate.py [--cold 15] [--repeats 5] [--pairs 30]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from runner.evaluation.queue import EVALUATION_CONTEXT
from runner.execution.docker_engine import LABEL, DockerEngine
from runner.execution.sandbox import Executor
from runner.settings import Settings

CASES = 20
QUEUE = 10
CHALLENGE = "bench"
NOOP_ALGORITHM = "pass\n"
NOOP_EVALUATION = 'open("/output/metrics.json", "w").write(\'{"aggregates": {"score": 1}}\')\n'
FLOOR = Path(__file__).with_name("floor_evaluate.py")
DOCKERFILE = 'ARG BASE\nFROM ${BASE}\nCOPY main.py /main.py\nENTRYPOINT ["python3", "/main.py"]\n'


def write_tree(root: Path, base: str, engine: Executor) -> str:
    """A one-challenge repository with a batch and a per-case phase; returns the algorithm image ID."""
    challenge = root / "challenges" / CHALLENGE
    (challenge / "phases").mkdir(parents=True)
    (challenge / "evaluation").mkdir()
    (challenge / "challenge.yml").write_text("name: Benchmark\nheadline: Overhead of the runner\n")
    for mode in ("batch", "per-case"):
        (challenge / "phases" / f"{mode}.yml").write_text(
            f"title: {mode}\nsubmission_kind: algorithm\nscore_jsonpath: aggregates.score\ninference_mode: {mode}\n")
    (challenge / "evaluation" / "Dockerfile").write_text(DOCKERFILE)
    (challenge / "evaluation" / "main.py").write_text(NOOP_EVALUATION)
    algo = root / "algorithm"
    algo.mkdir()
    (algo / "Dockerfile").write_text(DOCKERFILE)
    (algo / "main.py").write_text(NOOP_ALGORITHM)
    return engine.build(algo, name="challenge-bench/noop-algorithm", base=base)


def write_data(data_root: Path) -> None:
    for mode in ("batch", "per-case"):
        folder = data_root / CHALLENGE / mode
        (folder / "ground-truth").mkdir(parents=True)
        (folder / "inputs").mkdir()
        for i in range(CASES if mode == "per-case" else 1):
            (folder / "inputs" / f"case-{i:03d}.bin").write_bytes(b"\0" * 1024)


def submit(root: Path, mode: str, image: str, n: int) -> None:
    path = root / "challenges" / CHALLENGE / "submissions" / mode / "bench" / f"run{n}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"phase: {mode}\nimage: {image}\n")


def bare(image: str, evaluation: str, data: Path, out: Path, runs: int) -> float:
    """The same containers by bare `docker run`: `runs` algorithm runs, then one evaluation."""
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", f"{data}:/input:ro",
                        "-v", f"{out}:/output", image], check=True, capture_output=True)
    subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", f"{out}:/input:ro",
                    "-v", f"{out}:/output", evaluation], check=True, capture_output=True)
    return time.perf_counter() - start


def ours(root: Path, data_root: Path, base: str, *runner: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "runner.cli", "--root", str(root), "evaluate", "--pending",
                           "--data-root", str(data_root), "--allow-local-images", "--base-image", base,
                           "--cache-dir", str(root / "no-cache" / str(time.time_ns())), *runner],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"challenge evaluate exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - start


def warm_runner(socket_path: Path) -> subprocess.Popen:
    runner = subprocess.Popen([sys.executable, "-m", "runner.cli", "runner", "--socket", str(socket_path)],
                              stderr=subprocess.PIPE, text=True)
    assert runner.stderr is not None
    runner.stderr.readline()  # "warm runner listening on ..."
    return runner


def floor(root: Path, evaluation: str, inputs: Path, out: Path, submission: Path) -> float:
    """The least a cold process does (floor_evaluate.py), a new process, until its containers are removed."""
    scores = out / "floor-scores"
    scores.mkdir(mode=0o777, exist_ok=True)
    scores.chmod(0o777)
    start = time.perf_counter()
    subprocess.run([sys.executable, str(FLOOR), str(root / "challenges" / CHALLENGE / "phases" / "batch.yml"),
                    str(submission), evaluation, str(inputs), str(out), str(scores)], check=True)
    return time.perf_counter() - start


def cold_triples(root: Path, data_root: Path, base: str, *, image: str, evaluation: str, out: Path,
                 count: int) -> list[dict[str, float]]:
    """`count` triples of one batch submission: bare `docker run`s, a cold `challenge evaluate`, the floor;
    which goes first rotates."""
    inputs = data_root / CHALLENGE / "batch" / "inputs"
    submission = root.parent / "floor" / "v1.yml"  # outside the tree: never pending
    submission.parent.mkdir(exist_ok=True)
    submission.write_text(f"phase: batch\nimage: {image}\n")
    floor(root, evaluation, inputs, out, submission)  # warm: the floor's files in the page cache

    def cold(n: int) -> float:
        submit(root, "batch", image, n)
        return ours(root, data_root, base)

    runs = {"bare": lambda n: bare(image, evaluation, inputs, out, 1), "cold": cold,
            "floor": lambda n: floor(root, evaluation, inputs, out, submission)}
    order = list(runs)
    triples = []
    for n in range(count):
        turn = order[n % 3:] + order[:n % 3]
        triples.append({who: runs[who](n) for who in turn})
    return triples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=15, help="bare, cold process and floor, interleaved")
    parser.add_argument("--repeats", type=int, default=5, help="per-case runs against bare")
    parser.add_argument("--pairs", type=int, default=30, help="warm runner against bare, interleaved")
    args = parser.parse_args()
    engine = DockerEngine()
    base = engine.ensure_base(Settings.of(env=os.environ, cwd=Path.cwd()).base_image)
    with tempfile.TemporaryDirectory() as tmp:
        root, data_root, out = Path(tmp) / "repo", Path(tmp) / "data", Path(tmp) / "out"
        out.mkdir(mode=0o777)
        out.chmod(0o777)
        image = write_tree(root, base, engine)
        write_data(data_root)
        evaluation = engine.build(root / "challenges" / CHALLENGE / "evaluation", name=f"challenge-eval/{CHALLENGE}",
                                  base=base, extra_context=EVALUATION_CONTEXT)  # the image the runner builds
        ours(root, data_root, base)  # warm: images built, caches of the engine filled
        triples = cold_triples(root, data_root, base, image=image, evaluation=evaluation, out=out, count=args.cold)
        inputs = data_root / CHALLENGE / "per-case" / "inputs"
        bare_s, ours_s = [], []
        for n in range(args.repeats):
            bare_s.append(bare(image, evaluation, inputs, out, CASES))
            submit(root, "per-case", image, n)
            ours_s.append(ours(root, data_root, base))
        per_case = (statistics.median(bare_s), statistics.median(ours_s))
        # Steady state: a runner draining a queue of QUEUE submissions in one call.
        inputs = data_root / CHALLENGE / "batch" / "inputs"
        bare_queue = sum(bare(image, evaluation, inputs, out, 1) for _ in range(QUEUE))
        for n in range(QUEUE):
            submit(root, "batch", image, 1000 + n)
        queue = (bare_queue, ours(root, data_root, base))
        pairs = warm_pairs(root, data_root, base, engine=engine, image=image, evaluation=evaluation, out=out,
                           count=args.pairs, socket_path=Path(tmp) / "runner.sock")
    startup = timed_startup()
    for who, target in (("cold", "a cold process, target <= 1.5"),
                        ("floor", "the least any cold process does, floor_evaluate.py")):
        print(f"{who:9} {summary([(t['bare'], t[who]) for t in triples])} ({target})")
    print(f"warm      {summary(pairs)} (challenge evaluate --runner, its containers removed; target <= 1.15)")
    b, o = per_case
    print(f"per-case  bare docker run {b:6.2f} s   challenge evaluate {o:6.2f} s   ratio {o / b:.2f}   "
          f"{(o - b) / CASES:+.3f} s per case (target <= 0.15)")
    b, o = queue
    print(f"queue of {QUEUE} in one call: bare {b:6.2f} s   challenge evaluate {o:6.2f} s   ratio {o / b:.2f}   "
          f"{(o - b) / QUEUE:+.3f} s per submission")
    print(f"fixed per call: `challenge evaluate` process start (imports, no work) {startup:.2f} s, "
          "plus one /output keeper container per call")


def warm_pairs(root: Path, data_root: Path, base: str, *, engine: DockerEngine, image: str, evaluation: str,
               out: Path, count: int, socket_path: Path) -> list[tuple[float, float]]:
    """One submission per call handed to a warm runner (what a runner host keeps as a service), against
    bare, `count` interleaved pairs: (bare, warm) each."""
    inputs = data_root / CHALLENGE / "batch" / "inputs"
    runner = warm_runner(socket_path)
    try:
        ours(root, data_root, base, "--runner", str(socket_path))  # warm: its first job starts the engine
        pairs = []
        for n in range(count):
            submit(root, "batch", image, 2000 + n)
            timings = {}
            for who in (("bare", "warm") if n % 2 == 0 else ("warm", "bare")):
                timings[who] = (bare(image, evaluation, inputs, out, 1) if who == "bare" else
                                until_removed(engine, lambda: ours(root, data_root, base, "--runner",
                                                                   str(socket_path))))
            pairs.append((timings["bare"], timings["warm"]))
        return pairs
    finally:
        runner.terminate()
        runner.wait()


def summary(pairs: list[tuple[float, float]]) -> str:
    """Median times of (bare, ours) pairs, and the median of their ratios with its 95 % interval."""
    ratios = sorted(o / b for b, o in pairs)
    low, high = median_interval(ratios)
    bare_s, ours_s = statistics.median(b for b, _ in pairs), statistics.median(o for _, o in pairs)
    return (f"bare {bare_s:5.2f} s   ours {ours_s:5.2f} s   ratio {statistics.median(ratios):.2f}, "
            f"95 % interval {low:.2f}-{high:.2f} over {len(pairs)} "
            f"interleaved runs; single ratios {ratios[0]:.2f}-{ratios[-1]:.2f}")


def until_removed(engine: DockerEngine, job: Callable[[], float]) -> float:
    """The job's time until the engine holds none of its run containers (polled every 10 ms)."""
    start = time.perf_counter()
    job()
    while engine.client.containers.list(all=True, filters={"label": LABEL}, sparse=True):
        time.sleep(0.01)
    return time.perf_counter() - start


def median_interval(ordered: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of sorted values: the j-th smallest and the j-th largest,
    j the largest for which a binomial(n, 1/2) is below j with probability at most (1-confidence)/2 (the
    extremes when n is too small for that)."""
    n = len(ordered)
    j, below = 0, 0.0
    while j < n // 2 and (below := below + math.comb(n, j) / 2**n) <= (1 - confidence) / 2:
        j += 1
    return ordered[max(j - 1, 0)], ordered[n - max(j, 1)]


def timed_startup() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "runner.cli", "evaluate", "--help"], check=True, capture_output=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
