"""Overhead of `challenge evaluate` against bare `docker run` of the same containers, same run.

A do-nothing algorithm and a do-nothing evaluation (it writes a constant metrics.json) are run
(1) by bare `docker run --rm` with the same input/output mounts, and (2) by `challenge evaluate`,
in batch mode (one algorithm run) and per-case mode (20 runs), each call a new process; then (3) by
`challenge evaluate --runner SOCKET`, one submission per call handed to a warm runner (`challenge
runner`). Targets (issues 3 and 13): one submission at most 1.15 x bare; per-case at most 0.15 s per
case above bare docker run.

Run: .venv/bin/python benchmarks/bench_evaluate.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runner.evaluation.queue import EVALUATION_CONTEXT
from runner.execution.docker_engine import DockerEngine
from runner.execution.sandbox import Executor

CASES = 20
QUEUE = 10
CHALLENGE = "bench"
NOOP_ALGORITHM = "pass\n"
NOOP_EVALUATION = 'open("/output/metrics.json", "w").write(\'{"aggregates": {"score": 1}}\')\n'
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    engine = DockerEngine()
    base = engine.ensure_base()
    with tempfile.TemporaryDirectory() as tmp:
        root, data_root, out = Path(tmp) / "repo", Path(tmp) / "data", Path(tmp) / "out"
        out.mkdir(mode=0o777)
        out.chmod(0o777)
        image = write_tree(root, base, engine)
        write_data(data_root)
        evaluation = engine.build(root / "challenges" / CHALLENGE / "evaluation", name=f"challenge-eval/{CHALLENGE}",
                                  base=base, extra_context=EVALUATION_CONTEXT)  # the image the runner builds
        ours(root, data_root, base)  # warm: images built, caches of the engine filled
        figures = {}
        for mode, runs in (("batch", 1), ("per-case", CASES)):
            inputs = data_root / CHALLENGE / mode / "inputs"
            bare_s, ours_s = [], []
            for n in range(args.repeats):
                bare_s.append(bare(image, evaluation, inputs, out, runs))
                submit(root, mode, image, n)
                ours_s.append(ours(root, data_root, base))
            figures[mode] = (statistics.median(bare_s), statistics.median(ours_s))
        # Steady state: a runner draining a queue of QUEUE submissions in one call.
        inputs = data_root / CHALLENGE / "batch" / "inputs"
        bare_queue = sum(bare(image, evaluation, inputs, out, 1) for _ in range(QUEUE))
        for n in range(QUEUE):
            submit(root, "batch", image, 1000 + n)
        figures["queue"] = (bare_queue, ours(root, data_root, base))
        # One submission per call, handed to a warm runner (what a runner host keeps as a service).
        socket_path = Path(tmp) / "runner.sock"
        runner = warm_runner(socket_path)
        try:
            ours(root, data_root, base, "--runner", str(socket_path))  # warm: its first job starts the engine
            bare_s, ours_s = [], []
            for n in range(args.repeats):
                bare_s.append(bare(image, evaluation, inputs, out, 1))
                submit(root, "batch", image, 2000 + n)
                ours_s.append(ours(root, data_root, base, "--runner", str(socket_path)))
            figures["warm"] = (statistics.median(bare_s), statistics.median(ours_s))
        finally:
            runner.terminate()
            runner.wait()
    startup = timed_startup()
    b, o = figures["batch"]
    print(f"batch     bare docker run {b:6.2f} s   challenge evaluate {o:6.2f} s   ratio {o / b:.2f} (a cold process)")
    b, o = figures["warm"]
    print(f"warm      bare docker run {b:6.2f} s   challenge evaluate --runner {o:6.2f} s   ratio {o / b:.2f} "
          "(target <= 1.15)")
    b, o = figures["per-case"]
    print(f"per-case  bare docker run {b:6.2f} s   challenge evaluate {o:6.2f} s   ratio {o / b:.2f}   "
          f"{(o - b) / CASES:+.3f} s per case (target <= 0.15)")
    b, o = figures["queue"]
    print(f"queue of {QUEUE} in one call: bare {b:6.2f} s   challenge evaluate {o:6.2f} s   ratio {o / b:.2f}   "
          f"{(o - b) / QUEUE:+.3f} s per submission")
    print(f"fixed per call: `challenge evaluate` process start (imports, no work) {startup:.2f} s, "
          "plus one /output keeper container per call")


def timed_startup() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "runner.cli", "evaluate", "--help"], check=True, capture_output=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
