"""A million results: the repository, `challenge check` and `challenge build` at a living benchmark's scale.

A synthetic repository of `--challenges` challenges (two phases each) and `--results` results, each
with the submission file it answers, lands over `--days` days through one `git fast-import` stream:
one commit per challenge and day, holding that day's submissions and results (the runner commits a
day's results of one challenge together). Results are shaped as bench_site writes them (`--cases`
per-case metrics and per-case runner measurements). Then, each timed in a new process, as a user
or a workflow pays it:

- the repository: its packed size, its files and its widest folder (GitHub's guidance: at most
  3,000 entries in a folder, 10 GB on disk), `git clone --no-local` (objects only) and the checkout
  of its working tree (what every workflow's `actions/checkout` pays), `git status`, and the
  runner's commit of one more result;
- `challenge check` on the whole tree (exit status and its first lines);
- `challenge build` from nothing (page generation and MkDocs); target < 10 minutes;
- one new result, committed as the runner commits it, then `challenge build` again; target < 10 s;
- `challenge serve` idle, its whole process tree, over `--serve-seconds`; target < 1 % of a core;
- the built site's size and files (GitHub Pages: at most 1 GB), and each command's peak memory:
  the largest sum of the proportional set sizes of the command and every process below it (forked
  workers' shared pages counted once), sampled from /proc every 0.2 s (a shorter peak can be missed).

Left out: the network (a clone here reads a local repository over git's own protocol), GitHub's
own packing on the server, the Docker evaluations (bench_evaluate measures those).

`--keep DIR` keeps the repository; run again with the same DIR to measure it again without
rewriting it (the working clone, its page cache and site are made afresh each run, or with
`--reuse-clone` only the page cache and site: the repository's figures are then left out).

Run: .venv/bin/python benchmarks/bench_scale.py [--challenges 300] [--results 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from bench_serve import serve_idle
from bench_site import CHALLENGE, EVALUATION_DOCKERFILE, PHASE_YML, PHASES, REPO, START, finish, result, size

figures: dict[str, float] = {}
GIT = ["git", "-c", "user.name=Runner", "-c", "user.email=runner@example.org"]


def stage(name: str, seconds: float, peak: int | None = None) -> None:
    figures[name] = round(seconds, 2)
    memory = f"   peak {peak / 2**20:7.0f} MiB" if peak is not None else ""
    print(f"  {name:<52} {seconds:9.2f} s{memory}", flush=True)


def tree_memory(pid: int) -> int:
    """Bytes of memory `pid` and every process below it hold, from /proc: each one's proportional set size
    (a page shared by n processes counts 1/n in each), so forked workers sharing their parent's pages are
    not counted once per worker as resident sizes would."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            rollup = Path(f"/proc/{current}/smaps_rollup").read_text()
            total += int(rollup.split("\nPss:", 1)[1].split()[0]) * 1024
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended meanwhile
    return total


def measured(name: str, argv: list[str], *, cwd: Path, check: bool = True,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `argv` in a new process, timed, with the peak memory of its whole process tree."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peak[0] = max(peak[0], tree_memory(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    stage(name, time.perf_counter() - start, peak[0])
    figures[f"{name} peak MiB"] = round(peak[0] / 2**20)
    run = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    if check and run.returncode:
        sys.exit(f"{' '.join(argv[:4])} failed ({run.returncode}): {(err or out).strip()[-2000:]}")
    return run


def image(participant: str) -> str:
    """Each participant's own image (one image under two participants is flagged by `challenge check`)."""
    return f"ghcr.io/{participant}/algo@sha256:{hashlib.sha256(participant.encode()).hexdigest()}"


def submission_text(participant: str, sub: str, phase: str) -> bytes:
    return f"phase: {phase}\nimage: {image(participant)}\ntitle: Submission {sub}\n".encode()


def result_bytes(rng: random.Random, slug: str, phase: str, participant: str, sub: str, *, at: int,
                 cases: int) -> bytes:
    record = result(rng, slug, phase, participant, sub, at, cases)
    assert record.algorithm is not None
    return replace(record, algorithm=replace(record.algorithm, image=image(participant))).to_json().encode()


def days_files(*, challenges: int, results: int, cases: int, days: int,
               seed: int) -> Iterator[tuple[int, list[tuple[str, bytes]]]]:
    """(commit time, files) per commit, oldest first: the challenges' setup, then one commit per day and
    challenge with the submissions and results that landed that day."""
    rng = random.Random(seed)
    per_phase = results // (challenges * len(PHASES))
    teams = max(per_phase // 5, 2)
    setup: list[tuple[str, bytes]] = []
    for i in range(challenges):
        slug = f"challenge-{i:03d}"
        setup += [(f"challenges/{slug}/challenge.yml", f"name: Challenge {i}\nheadline: Synthetic {i}\n".encode()),
                  (f"challenges/{slug}/index.md", f"# Challenge {i}\n\nA synthetic challenge.\n".encode()),
                  (f"challenges/{slug}/evaluation/Dockerfile", EVALUATION_DOCKERFILE.encode())]
        setup += [(f"challenges/{slug}/phases/{p}.yml", PHASE_YML.format(title=p.title()).encode()) for p in PHASES]
    yield START - 86400, setup
    for day in range(days):
        for i in range(challenges):
            slug, files, at = f"challenge-{i:03d}", [], START + day * 86400 + i
            for phase in PHASES:
                # Result n lands on day n * days // per_phase: the ones with that day.
                for n in range(-(-day * per_phase // days), -(-(day + 1) * per_phase // days)):
                    participant, sub = f"team-{n % teams:04d}", f"s{n:05d}"
                    base = f"challenges/{slug}/%s/{phase}/{participant}/{sub}"
                    files.append((base % "submissions" + ".yml", submission_text(participant, sub, phase)))
                    files.append((base % "results" + ".json",
                                  result_bytes(rng, slug, phase, participant, sub, at=at, cases=cases)))
            if files:
                yield at, files


def write_repository(origin: Path, args: argparse.Namespace) -> None:
    """The synthetic history, streamed into `git fast-import` (a bare repository: no working tree yet)."""
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    importer = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=origin, stdin=subprocess.PIPE)
    assert importer.stdin is not None
    commits = 0
    for at, files in days_files(challenges=args.challenges, results=args.results, cases=args.cases,
                                days=args.days, seed=1):
        out = [f"commit refs/heads/main\ncommitter Runner <runner@example.org> {at} +0000\ndata 7\nresults\n".encode()]
        out += [f"M 100644 inline {rel}\ndata {len(data)}\n".encode() + data + b"\n" for rel, data in files]
        importer.stdin.write(b"".join(out))
        commits += 1
    importer.stdin.close()
    if importer.wait():
        sys.exit("git fast-import failed")
    print(f"    {commits} commits")


def pack_bytes(git_dir: Path) -> int:
    return sum(p.stat().st_size for p in (git_dir / "objects" / "pack").glob("*.pack"))


def repository_figures(origin: Path, clone: Path) -> None:
    """Size, files and widest folder of the repository; clone, checkout, status and one commit, timed."""
    packed = pack_bytes(origin)
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", "main"], cwd=origin, check=True,
                            capture_output=True, text=True).stdout.splitlines()
    widest = Counter(path.rsplit("/", 1)[0] for path in listed).most_common(1)[0]
    figures.update({"repository packed bytes": packed, "repository files": len(listed),
                    "widest folder entries": widest[1]})
    print(f"    packed {packed / 2**30:.2f} GiB; {len(listed)} files in HEAD; widest folder {widest[0]} "
          f"({widest[1]} entries; GitHub's guidance: at most 3,000)")
    shutil.rmtree(clone, ignore_errors=True)
    measured("git clone --no-local --no-checkout", ["git", "clone", "-q", "--no-local", "--no-checkout",
                                                    str(origin), str(clone)], cwd=origin.parent)
    figures["clone packed bytes"] = pack_bytes(clone / ".git")  # as git packs it to send, deltas found
    print(f"    the clone's pack: {figures['clone packed bytes'] / 2**30:.2f} GiB")
    measured("git checkout (the working tree)", ["git", "checkout", "-q", "main"], cwd=clone)
    measured("git status", ["git", "status", "--porcelain"], cwd=clone)


def new_result(clone: Path, args: argparse.Namespace) -> None:
    """One more submission and its result, committed as the runner commits them."""
    slug, phase, participant, sub = "challenge-000", PHASES[-1], "team-new", "s99999"
    base = f"challenges/{slug}/%s/{phase}/{participant}/{sub}"
    record = result_bytes(random.Random(2), slug, phase, participant, sub, at=START + args.days * 86400,
                          cases=args.cases)
    for rel, data in ((base % "submissions" + ".yml", submission_text(participant, sub, phase)),
                      (base % "results" + ".json", record)):
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_bytes(data)
    # Dated after the history's last commit, as the runner's next commit is: a commit dated before its parent
    # (the synthetic history ends in the future) makes every range walk of git's go through the whole history.
    when = f"@{START + args.days * 86400 + 3600} +0000"
    measured("git add and commit one result", ["sh", "-c", f"git add challenges/{slug} && "
                                               f"{' '.join(GIT)} commit -q -m 'one result'"], cwd=clone,
             env={**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--challenges", type=int, default=300)
    ap.add_argument("--results", type=int, default=1_000_000)
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--days", type=int, default=730)
    ap.add_argument("--builder", choices=("mkdocs", "zensical"), default="mkdocs")
    ap.add_argument("--serve-seconds", type=float, default=10.0, help="how long challenge serve is watched idle")
    ap.add_argument("--keep", type=Path, help="work here and keep the repository (default: a temporary folder)")
    ap.add_argument("--reuse-clone", action="store_true",
                    help="with --keep: measure the commands on the last run's checkout (repository figures left out)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    origin, clone = work / "origin.git", work / "clone"
    print(f"{args.challenges} challenges x {len(PHASES)} phases, {args.results} results with their submissions, "
          f"{args.cases} cases each, {args.days} days of history, in {work}")
    if not (origin / "HEAD").is_file():
        start = time.perf_counter()
        write_repository(origin, args)
        stage("writing the synthetic history (fast-import)", time.perf_counter() - start)
    if args.reuse_clone and (clone / ".git").is_dir():  # the last run's checkout, back at the repository's head
        subprocess.run(["git", "reset", "-q", "--hard", "origin/main"], cwd=clone, check=True)
        subprocess.run(["git", "clean", "-q", "-fdx", "challenges"], cwd=clone, check=True)
        shutil.rmtree(clone / "build", ignore_errors=True)
        shutil.rmtree(clone / "site", ignore_errors=True)
    else:
        repository_figures(origin, clone)
    shutil.copytree(REPO / "site", clone / "site")  # the current templates and scripts, as a site's repository has
    shutil.copy2(REPO / "mkdocs.yml", clone / "mkdocs.yml")
    checked = measured("challenge check", [CHALLENGE, "--root", str(clone), "check"], cwd=clone, check=False)
    print(f"    exit {checked.returncode}; {(checked.stdout + checked.stderr).strip().splitlines()[:3]}")
    measured(f"challenge build, from nothing ({args.builder})",
             [CHALLENGE, "--root", str(clone), "build", "--builder", args.builder], cwd=clone)
    site_bytes, site_files = size(clone / "build" / "site")
    new_result(clone, args)
    measured(f"one new result: challenge build ({args.builder})",
             [CHALLENGE, "--root", str(clone), "build", "--builder", args.builder], cwd=clone)
    figures.update({"site bytes": site_bytes, "site files": site_files})
    start = time.perf_counter()
    idle = serve_idle(clone, args.serve_seconds)  # its own build first (the cache warm), then idle
    figures["challenge serve idle share of a core"] = round(idle / args.serve_seconds, 4)
    print(f"  challenge serve, idle: {idle * 1000:.0f} ms of CPU over {args.serve_seconds:.0f} s, its whole process "
          f"tree ({time.perf_counter() - start:.0f} s in all, its start and build included)")
    print(f"\nsite: {site_files} files, {site_bytes / 2**20:.0f} MiB")
    cold, one = figures[f"challenge build, from nothing ({args.builder})"], figures[
        f"one new result: challenge build ({args.builder})"]
    checks = {"challenge build from nothing < 10 min": cold < 600, "one new result < 10 s": one < 10,
              "site < 1 GB": site_bytes < 2**30, "challenge check passes": checked.returncode == 0,
              "challenge serve idle < 1 % of a core": idle / args.serve_seconds < 0.01,
              "widest folder <= 3,000 entries": figures.get("widest folder entries", 0) <= 3000,
              "repository < 10 GB packed": figures.get("clone packed bytes", 0) < 10 * 2**30}
    finish(checks, dict(figures), work=None if args.keep else work)


if __name__ == "__main__":
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    main()
