"""The site at scale: 100 challenges with 60,000 results, page generation and the whole build.

A synthetic repository (results written as the runner writes them, with per-case metrics and
per-case runner measurements) gets a git history made with `git fast-import`: the results land
over `--days` days, one commit per challenge and day. Then, each timed:

- page generation through the real command (`challenge build --pages-only`: a new process, its
  imports, reading the tree), fresh (its phases computed in one forked worker per core) and again
  with nothing changed; target < 30 s;
- `challenge check` on the tree (its exit status and first problem printed);
- its parts, timed alone in the same process, one after the other (so they add up to more than the
  fresh generation on several cores): reading results, ranking, history snapshots (each result's row
  made once per phase, as pages does), ranking uncertainty;
- the site build with MkDocs (`sitebuild.build_site`), with the builder's peak RSS (getrusage of
  its children) and the size of build/site; targets < 5 minutes and < 1 GB;
- a baseline built in the same run: MkDocs over as many plain Markdown pages, without results,
  so the ratio tells what the results and their data files cost the builder;
- one new result (committed, as the runner commits it): `challenge build`, the command a user types,
  with the page cache kept and the site build redoing only what changed (MkDocs through
  `runner.site.incremental`; Zensical keeps its own cache); target < 3 s; against the cold generation
  and build of the same run, and, for MkDocs, a clean `mkdocs build` of the same pages (the build
  before it was incremental). The command's own start (`challenge build --help`) is printed beside it.

`--keep DIR` keeps the tree; run again with the same DIR to reuse it (the tree is not rewritten).

Run: .venv/bin/python benchmarks/bench_site.py [--challenges 100] [--results 60000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from runner.ranking.leaderboard import Rows, leaderboard
from runner.ranking.phase_uncertainty import ranking_uncertainty
from runner.site.build import SiteConfig
from runner.tree.history import History
from runner.tree.paths import result_path
from runner.tree.result_model import Result, RunRecord
from runner.tree.store import Store
from runner.tree.submission_model import SubmissionDetails

REPO = Path(__file__).resolve().parents[1]
CHALLENGE = str(Path(sys.executable).with_name("challenge"))
PHASES = ("preliminary", "final")
METRICS = ("dice", "hausdorff")
START = 1_767_225_600  # 2026-01-01T00:00:00Z
DIGEST = "sha256:" + "ab" * 32
PHASE_YML = """title: {title}
submission_kind: algorithm
submissions_open_at: 2026-01-01T00:00:00Z
submissions_close_at: 2026-02-28T00:00:00Z
score_title: Dice (mean)
score_jsonpath: aggregates.dice.mean
score_error_jsonpath: aggregates.dice.std
score_decimal_places: 3
extra_results_columns:
  - path: aggregates.hausdorff.mean
    title: Hausdorff (mean)
    order: asc
    exclude_from_ranking: true
"""
EVALUATION_DOCKERFILE = 'FROM python:3.11-slim\nCOPY evaluate.py /evaluate.py\nENTRYPOINT ["python", "/evaluate.py"]\n'
BUILD = """import resource, sys
from pathlib import Path
from runner.site.build import SiteConfig, build_site
build_site(SiteConfig.read(Path(sys.argv[1])), sys.argv[2])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

times: dict[str, float] = {}


@contextmanager
def timed(stage: str):
    start = time.perf_counter()
    yield
    times[stage] = time.perf_counter() - start
    print(f"  {stage:<44} {times[stage]:8.2f} s", flush=True)


def result(rng: random.Random, slug: str, phase: str, participant: str, sub: str, at: int, cases: int) -> Result:
    skill = rng.uniform(0.5, 0.95)
    per_case = {f"case-{c:03d}": {"dice": min(1.0, max(0.0, rng.gauss(skill, 0.05))),
                                  "hausdorff": rng.uniform(1, 20)} for c in range(cases)}
    aggregates = {m: {"mean": sum(v[m] for v in per_case.values()) / cases, "std": 0.05} for m in METRICS}
    when = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(at))
    runs = {f"case-{c:03d}": {"wall_time_s": rng.uniform(5, 60), "peak_memory_bytes": rng.randint(10**8, 4 * 10**9)}
            for c in range(cases)}
    return Result(challenge=slug, phase=phase, participant=participant, submission=sub, status="succeeded",
                  created_at=when, started_at=when, finished_at=when,
                  metrics={"case": per_case, "aggregates": aggregates}, runner_version="bench",
                  details=SubmissionDetails(title=f"Submission {sub}"),  # the runner copies the submission's
                  algorithm=RunRecord(image=f"ghcr.io/{participant}/algo@{DIGEST}", exit_code=0,
                                      wall_time_s=sum(r["wall_time_s"] for r in runs.values()), cases=runs))


def write_tree(root: Path, *, challenges: int, results: int, cases: int, days: int, seed: int) -> None:
    """The challenges on disk and, through `git fast-import`, their history: one commit per
    challenge and day holding that day's results."""
    rng = random.Random(seed)
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(REPO / "site", root / "site")
    per_phase = results // (challenges * len(PHASES))
    commits: dict[int, list[tuple[str, bytes]]] = {}  # day * challenges + challenge (-1: the setup) -> files
    for i in range(challenges):
        slug = f"challenge-{i:03d}"
        files = {f"challenges/{slug}/challenge.yml": f"name: Challenge {i}\nheadline: Synthetic challenge {i}\n",
                 f"challenges/{slug}/index.md": f"# Challenge {i}\n\nA synthetic challenge.\n"}
        files.update({f"challenges/{slug}/phases/{p}.yml": PHASE_YML.format(title=p.title()) for p in PHASES})
        files[f"challenges/{slug}/evaluation/Dockerfile"] = EVALUATION_DOCKERFILE  # its phases take algorithms
        commits.setdefault(-1, []).extend((rel, text.encode()) for rel, text in files.items())
        for phase in PHASES:
            for n in range(per_phase):
                participant, sub, day = f"team-{n % max(per_phase // 5, 2):03d}", f"s{n:04d}", n * days // per_phase
                data = result(rng, slug, phase, participant, sub, START + day * 86400 + i, cases).to_json().encode()
                commits.setdefault(day * challenges + i, []).append(
                    (f"challenges/{slug}/results/{phase}/{participant}/{sub}.json", data))
    for files in commits.values():
        for rel, data in files:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    fast_import(root, commits, challenges)


def fast_import(root: Path, commits: dict[int, list[tuple[str, bytes]]], challenges: int) -> None:
    """Commit each group of files at its day, all in one `git fast-import` stream."""
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    stream = root / "history.fi"
    with open(stream, "wb") as out:
        for key in sorted(commits):
            at = START - 86400 if key < 0 else START + (key // challenges) * 86400 + key % challenges
            out.write(f"commit refs/heads/main\ncommitter Runner <runner@example.org> {at} +0000\n"
                      "data 7\nresults\n".encode())
            for rel, data in commits[key]:
                out.write(f"M 100644 inline {rel}\ndata {len(data)}\n".encode() + data + b"\n")
    with open(stream, "rb") as handle:
        subprocess.run(["git", "fast-import", "--quiet"], cwd=root, stdin=handle, check=True)
    subprocess.run(["git", "reset", "-q"], cwd=root, check=True)
    stream.unlink()


def parts(store: Store) -> None:
    """Each part of page generation alone, to show where its time goes."""
    with timed("  reading results"):
        loaded = {(s, p): store.results(s, p) for s in store.slugs() for p in store.phases(s)}
    made = {key: Rows(store.phase(*key)) for key in loaded}  # each result's row, shared by its phase's snapshots
    with timed("  ranking (one leaderboard per phase)"):
        boards = {key: leaderboard(made[key].phase, results, made=made[key]) for key, results in loaded.items()}
    history = History(store)
    current = {key: {result_path(*key, r.participant, r.submission): r for r in results}
               for key, results in loaded.items()}  # as pages shares them
    with timed("  history: walking git, reading blobs"):
        found = {key: [history.results(snap, current[key]) for snap in history.snapshots(*key)] for key in loaded}
    with timed("  history: ranking each snapshot"):
        for key, snaps in found.items():
            for results in snaps:
                leaderboard(made[key].phase, results, made=made[key])
    with timed("  ranking uncertainty (bootstrap per phase)"):
        for key, board in boards.items():
            ranking_uncertainty(store.phase(*key), board, loaded[key])


def build(root: Path, builder: str) -> int:
    """Build the site in a child process; returns the peak RSS of the builder, in KiB."""
    out = subprocess.run([sys.executable, "-c", BUILD, str(root), builder], check=True, capture_output=True,
                         text=True, cwd=REPO)
    return int(out.stdout.split()[-1])


def challenge(root: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The `challenge` command in a new process, as a user runs it."""
    run = subprocess.run([CHALLENGE, "--root", str(root), *argv], capture_output=True, text=True)
    if check and run.returncode:
        sys.exit(f"challenge {' '.join(argv)} failed ({run.returncode}): {run.stderr.strip()[-2000:]}")
    return run


def size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def baseline(root: Path, pages_count: int) -> Path:
    """As many plain Markdown pages, nested like the generated ones, with the same mkdocs.yml."""
    stage = root / "build" / "stage"
    shutil.rmtree(root, ignore_errors=True)  # from an earlier run with --keep
    (root / "site" / "overrides").mkdir(parents=True)
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    for i in range(pages_count):
        page = stage / f"section-{i // 10:03d}" / f"page-{i:05d}.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"# Page {i}\n\n" + "Plain text without results. " * 40 + "\n")
    return root


def one_new_result(root: Path, args: argparse.Namespace) -> None:
    """Commit one more result to the first challenge's final phase, as the runner does, then build the
    site again with `challenge build`, its page cache and site kept."""
    rel = f"challenges/challenge-000/results/{PHASES[-1]}/team-new/s9999.json"
    new = result(random.Random(2), "challenge-000", PHASES[-1], "team-new", "s9999",
                 START + args.days * 86400, args.cases)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(new.to_json().encode())
    subprocess.run(["git", "add", rel], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=Runner", "-c", "user.email=runner@example.org", "commit", "-q", "-m",
                    "one result"], cwd=root, check=True)
    with timed("challenge build --help (the command's start)"):
        challenge(root, "build", "--help")
    with timed(f"one new result: challenge build ({args.builder})"):
        challenge(root, "build", "--builder", args.builder)
    if args.builder == "mkdocs":  # the build as it was before it became incremental, for the ratio
        with timed("one new result: mkdocs build --clean (before)"):
            subprocess.run([sys.executable, "-m", "mkdocs", "build", "--clean", "--quiet", "-f",
                            "mkdocs.generated.yml", "-d", str(root / "build" / "site-clean")], cwd=root, check=True,
                           capture_output=True)
        shutil.rmtree(root / "build" / "site-clean")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--challenges", type=int, default=100)
    ap.add_argument("--results", type=int, default=60_000)
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--builder", choices=("mkdocs", "zensical"), default="mkdocs")
    ap.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-site-"))
    root = work / "repo"
    print(f"{args.challenges} challenges x {len(PHASES)} phases, {args.results} results, {args.cases} cases each, "
          f"{args.days} days of history, in {work}")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):  # what a user with it set pays too, but say so
        print("  note: PYTHONDONTWRITEBYTECODE is set: every command compiles its modules again (about 1.5 s each "
              "at 300 challenges on a slow machine)")
    if not (root / ".git").is_dir():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        with timed("writing the synthetic tree and its git history"):
            write_tree(root, challenges=args.challenges, results=args.results, cases=args.cases, days=args.days,
                       seed=1)
    else:
        subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)
        last = subprocess.run(["git", "log", "-1", "--format=%s"], cwd=root, capture_output=True, text=True).stdout
        if last.strip() == "one result":  # an earlier run's new result
            subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=root, check=True)
        shutil.copytree(REPO / "site", root / "site", dirs_exist_ok=True)  # the current templates and scripts
    config, store = SiteConfig.read(root), Store(root)
    shutil.rmtree(root / "build", ignore_errors=True)
    with timed("page generation, empty cache"):
        challenge(root, "build", "--pages-only")
    with timed("page generation again, nothing changed"):
        challenge(root, "build", "--pages-only")
    staged = [p for p in config.stage.rglob("*") if p.is_file()]
    with timed("challenge check"):
        checked = challenge(root, "check", check=False)
    print(f"    exit {checked.returncode}; {(checked.stdout + checked.stderr).strip().splitlines()[:3]}")
    parts(store)
    with timed(f"site build ({args.builder})"):
        rss = build(root, args.builder)
    site_bytes, site_files = size(config.site)
    md_pages = sum(1 for p in staged if p.suffix == ".md")
    base = baseline(work / "baseline", md_pages)
    with timed(f"baseline: {md_pages} plain pages ({args.builder})"):
        base_rss = build(base, args.builder)
    base_bytes, _ = size(base / "build" / "site")
    ratio = times[f"site build ({args.builder})"] / times[f"baseline: {md_pages} plain pages ({args.builder})"]
    one_new_result(root, args)
    fresh, warm = times["page generation, empty cache"], times["page generation again, nothing changed"]
    whole = fresh + times[f"site build ({args.builder})"]
    one = times[f"one new result: challenge build ({args.builder})"]
    print(f"one new result to a built site: {one:.2f} s, {one / whole:.3f} x the cold generation and build "
          f"({whole:.2f} s)")
    print(f"\nstaged files: {len(staged)} ({md_pages} Markdown pages)")
    print(f"site: {site_files} files, {site_bytes / 2**20:.0f} MiB; builder peak RSS {rss / 1024:.0f} MiB")
    print(f"baseline: {base_bytes / 2**20:.0f} MiB, builder peak RSS {base_rss / 1024:.0f} MiB; "
          f"build time ratio against it {ratio:.2f}")
    checks = {"page generation < 30 s, empty cache": fresh < 30, "page generation < 30 s, warm cache": warm < 30,
              "whole build < 5 min": whole < 300, "one new result to a built site < 3 s": one < 3,
              "challenge check passes": checked.returncode == 0,
              "site < 1 GB": site_bytes < 2**30, "builder RSS < 1 GB": rss < 2**20}
    finish(checks, {"times_s": {k: round(v, 2) for k, v in times.items()}, "site_bytes": site_bytes,
                    "site_files": site_files, "builder_peak_rss_kib": rss, "baseline_peak_rss_kib": base_rss,
                    "ratio_to_baseline": round(ratio, 2)}, work=None if args.keep else work)


def finish(checks: dict[str, bool], figures: dict[str, object], *, work: Path | None) -> None:
    """Each target PASS or FAIL, the figures as one JSON line, `work` removed; exits 1 if a target failed."""
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    print(json.dumps(figures))
    if work is not None:
        shutil.rmtree(work)
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    main()
