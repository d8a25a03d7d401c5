"""`challenge serve` with many result files: the watcher's idle cost and the edit-to-page latency.

On a copy of the example challenge plus N result files (N = 0, 10,000, 50,000 by default, shaped
as tests/helpers.py writes them, ten per participant), each in a child process of its own:

- idle CPU over `--seconds`: the file-event watcher (`serve.regenerate_on_edits`, inotify through
  watchfiles) against the polling it replaced (`serve.tree_signature` each second), measured
  in the same run as the CPU time of the watching process (all its threads); also the CPU each
  spent starting (the watcher walks the tree once to set its inotify watches);
- latency: the time from saving `challenges/<c>/index.md` to `build/stage/<c>/index.md` holding
  the new text, with the real page generation (median of `--repeats`), and of it the watcher's
  share: from the save to the page generation starting (the rest is page generation);
- `challenge serve` itself, the whole process tree (every process it started, should it start any):
  its idle CPU over `--seconds` once it says "serving on", as a share of one core; target < 1 %;
- with `--html`, also the time to the page served by `challenge serve` (the site rebuilt into
  build/site), polled on 127.0.0.1.

Run: .venv/bin/python benchmarks/bench_serve.py [--counts 0,10000,50000] [--seconds 10] [--repeats 5] [--html]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from runner.evaluation.examples import prepare_workspace

REPO = Path(__file__).resolve().parents[1]

CHALLENGE, PHASE = "ellipsoid-segmentation", "final-test"
WHEN = "2026-03-01T10:00:00+00:00"
# The watching process: `watch` (file events, no-op regeneration), `poll` (tree_signature each
# second, as before), or `serve` (file events, real page generation). Its main thread answers
# "cpu" on stdin with the process CPU time; anything else stops it.
CHILD = """
import sys, threading, time
from pathlib import Path
from runner.cli.common import settings_here
from runner.cli.site import generate_pages
from runner.site import serve
mode, root = sys.argv[1], Path(sys.argv[2])
folders = [root / "challenges", root / "site" / "templates", root / "site" / "assets"]
stop = threading.Event()
def say(line):
    print(line, flush=True)
say(f"base {time.process_time()}")
def generate():
    say(f"start {time.time()}")
    generate_pages(root, settings_here())
def watch(regenerate):
    serve.regenerate_on_edits(folders, regenerate, lambda line: say("log " + line), stop, ready=lambda: say("ready"))
def poll():
    seen = serve.tree_signature(folders)
    say("ready")
    while not stop.wait(1.0):
        now = serve.tree_signature(folders)
        if now != seen:
            seen = now
if mode == "serve":
    generate_pages(root, settings_here())
targets = {"watch": lambda: watch(lambda: None), "poll": poll, "serve": lambda: watch(generate)}
target = targets[mode]
thread = threading.Thread(target=target, daemon=True)
thread.start()
for line in sys.stdin:
    if line.strip() != "cpu":
        break
    say(f"cpu {time.process_time()}")
stop.set()
thread.join(30)
"""


class Child:
    """A watching process, its output lines read by a thread so that every wait is bounded."""

    def __init__(self, args: list[str]):
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.said: list[str] = []  # every line, for what a timeout reports
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
            self.said.append(line.rstrip("\n"))

    def expect(self, prefix: str, seconds: float) -> str:
        """The next line starting with `prefix`, waiting at most `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line.startswith(prefix):
                return line
        raise TimeoutError(f"no line starting with {prefix!r} within {seconds} s (exit code {self.proc.poll()})")

    def cpu(self) -> float:
        self.proc.stdin.write("cpu\n")
        self.proc.stdin.flush()
        return float(self.expect("cpu ", 30).split()[1])

    def close(self) -> None:
        """Stop it: 'stop' on stdin for the watchers, SIGTERM for `challenge serve`; kill if stuck."""
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


def watcher(mode: str, root: Path) -> Child:
    return Child([sys.executable, "-c", CHILD, mode, str(root)])


def write_results(root: Path, start: int, stop: int) -> None:
    """Results `start`..`stop`, ten per participant, shaped as tests/helpers.write_result writes them."""
    base = root / "challenges" / CHALLENGE / "results" / PHASE
    rng = random.Random(start)
    for i in range(start, stop):
        path = base / f"team-{i // 10:05d}" / f"s{i % 10}.json"
        if i % 10 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "challenge": CHALLENGE, "phase": PHASE, "participant": path.parent.name, "submission": path.stem,
            "status": "succeeded", "created_at": WHEN, "started_at": WHEN, "finished_at": WHEN,
            "metrics": {"aggregates": {"dice": {"mean": round(rng.uniform(0.5, 0.95), 4)}}}}))


def idle_cpu(mode: str, root: Path, seconds: float) -> tuple[float, float]:
    """(CPU seconds to start after imports, CPU seconds over `seconds` idle) of a watching process."""
    child = watcher(mode, root)
    try:
        base = float(child.expect("base ", 120).split()[1])
        child.expect("ready", 300)
        started = child.cpu()
        time.sleep(seconds)
        return started - base, child.cpu() - started
    finally:
        child.close()


def edit(root: Path, marker: str) -> None:
    page = root / "challenges" / CHALLENGE / "index.md"
    lines = [ln for ln in page.read_text().splitlines() if not ln.startswith("Benchmark edit")]
    page.write_text("\n".join([*lines, "", f"Benchmark edit {marker}", ""]))


def wait_for(check, seconds: float, every: float = 0.01) -> float:
    """Seconds until `check()` is true, polling every `every`; TimeoutError past `seconds`."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > seconds:
            raise TimeoutError(f"not seen within {seconds} s")
        time.sleep(every)
    return time.monotonic() - start


def staged_latency(root: Path, repeats: int) -> tuple[list[float], list[float]]:
    """Seconds from saving the organizer's page to its staged copy holding the edit, and to the
    watcher starting the page generation (the watcher's own share), `repeats` times."""
    staged = root / "build" / "stage" / CHALLENGE / "index.md"
    child = watcher("serve", root)
    totals, detected = [], []
    try:
        child.expect("ready", 600)
        for i in range(repeats):
            marker = f"{i} {time.time()}"
            edit(root, marker)
            saved = time.time()
            totals.append(wait_for(lambda m=marker: staged.is_file() and m in staged.read_text(), 600))
            detected.append(float(child.expect("start ", 600).split()[1]) - saved)
            child.expect("log regenerated", 600)  # the generation has ended: the next edit is a batch of its own
    finally:
        child.close()
    return totals, detected


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()
    except OSError:
        return ""


def tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) of `pid` and every process below it, from /proc."""
    ticks, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended meanwhile
    return ticks / os.sysconf("SC_CLK_TCK")


def serve_idle(root: Path, seconds: float) -> float:
    """CPU seconds the whole `challenge serve` process tree spends over `seconds` once serving."""
    child = Child([sys.executable, "-m", "runner.cli", "--root", str(root), "serve", "--port", str(free_port())])
    try:
        child.expect("serving on", 600)
        time.sleep(1)  # the line is printed from the watcher's first pass: let it end
        before = tree_cpu(child.proc.pid)
        time.sleep(seconds)
        return tree_cpu(child.proc.pid) - before
    finally:
        child.close()


def html_latency(root: Path, repeats: int) -> list[float]:
    """Seconds from saving the organizer's page to `challenge serve` serving the edit."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/{CHALLENGE}/"
    child = Child([sys.executable, "-m", "runner.cli", "--root", str(root), "serve", "--port", str(port)])
    totals = []
    try:
        wait_for(lambda: bool(fetch(url)), 600, every=0.5)
        for i in range(repeats):
            marker = f"{i} {time.time()}"
            edit(root, marker)
            try:
                totals.append(wait_for(lambda m=marker: m in fetch(url), 600, every=0.05))
            except TimeoutError as exc:
                said = "\n".join(child.said[-20:])
                raise TimeoutError(f"{exc}: edit {marker!r}; challenge serve said:\n{said}") from None
    finally:
        child.close()
    return totals


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def measure(root: Path, count: int, args: argparse.Namespace) -> dict:
    row: dict = {"results": count}
    row["watch_start_s"], row["watch_idle_s"] = idle_cpu("watch", root, args.seconds)
    row["poll_start_s"], row["poll_idle_s"] = idle_cpu("poll", root, args.seconds)
    row["serve_idle_s"] = serve_idle(root, args.seconds)
    totals, detected = staged_latency(root, args.repeats)
    row["staged_s"], row["detected_s"] = median(totals), median(detected)
    row["staged_all_s"] = [round(t, 3) for t in totals]
    if args.html:
        row["html_s"] = median(html_latency(root, args.repeats))
    print(f"  N={count:,}: watcher idle {row['watch_idle_s'] * 1000:.0f} ms, polling idle "
          f"{row['poll_idle_s'] * 1000:.0f} ms, challenge serve (its process tree) idle "
          f"{row['serve_idle_s'] * 1000:.0f} ms = {100 * row['serve_idle_s'] / args.seconds:.2f} % of a core "
          f"(target < 1 %), save->staged {row['staged_s']:.2f} s", flush=True)
    return row


def table(rows: list[dict], seconds: float, repeats: int, html: bool) -> None:
    head = (f"{'results':>8} | {'idle CPU over ' + str(int(seconds)) + ' s':^29} | {'start CPU':^17} | "
            f"{'save -> staged page, median of ' + str(repeats):^36}")
    print("\n" + head + (" | save -> served HTML" if html else ""))
    print(f"{'':>8} | {'watcher':>8} {'polling':>9} {'ratio':>9} | {'watcher':>8} {'polling':>8} | "
          f"{'total':>8} {'of which the watcher':>27}")
    for r in rows:
        ratio = r["poll_idle_s"] / max(r["watch_idle_s"], 1e-3)
        print(f"{r['results']:>8,} | {r['watch_idle_s'] * 1000:>6.0f}ms {r['poll_idle_s'] * 1000:>7.0f}ms "
              f"{ratio:>8.0f}x | {r['watch_start_s']:>7.2f}s {r['poll_start_s']:>7.2f}s | "
              f"{r['staged_s']:>7.2f}s {r['detected_s']:>26.2f}s"
              + (f" | {r['html_s']:.2f} s" if html else ""))
    print("of which the watcher: save -> page generation starts (the quiet period it waits for, so that a "
          "burst is one regeneration, plus event delivery);\nthe rest is page generation. Start CPU: after "
          "imports, to ready (the watcher walks the tree once). Ratio's floor for the watcher: 1 ms.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="0,10000,50000", help="result counts, ascending, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0, help="idle window for the CPU measurement")
    ap.add_argument("--repeats", type=int, default=5, help="edits timed per count")
    ap.add_argument("--html", action="store_true", help="also time the page served by `challenge serve`")
    ap.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    counts = sorted(int(c) for c in args.counts.split(","))
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-serve-"))
    root = prepare_workspace(REPO, work / "repo")
    rows, written, began = [], 0, time.monotonic()
    try:
        for count in counts:
            start = time.monotonic()
            write_results(root, written, count)
            written = count
            print(f"wrote {count:,} results ({time.monotonic() - start:.1f} s); measuring", flush=True)
            rows.append(measure(root, count, args))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    table(rows, args.seconds, args.repeats, args.html)
    print(f"total {time.monotonic() - began:.0f} s")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
