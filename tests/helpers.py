"""What several test modules share: a builder of small challenge trees (`Tree`, `build_tree`), the
names they use by default, and writers of submissions, results and commits. Fixtures live in
conftest.py; plain helpers live here."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.execution.measure import GpuUnreadable, nvml_gpus
from runner.settings import Settings
from runner.tree.gitfiles import blob_id
from runner.tree.paths import TreePaths
from runner.tree.result_model import Provenance, Result, RunRecord
from runner.tree.store import Store

REPO = Path(__file__).resolve().parents[1]
IMAGES = Path(__file__).parent / "images"
CHALLENGE = "ellipsoid-segmentation"
PHASE = "final-test"

UTC = dt.UTC
NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
IMAGE = "ghcr.io/alice/algo@sha256:" + "a" * 64
DIGEST = "sha256:" + "cd" * 32


# --- small challenge trees ----------------------------------------------------------------------
# A test builds the tree it needs: one challenge, the phases it names, each field it names over the
# defaults below, rather than a copy of the demo's challenges. What the defaults build passes
# `challenge check` (tests/test_trees.py).

OPENS = dt.datetime(2026, 1, 1, tzinfo=UTC)
CLOSES = dt.datetime(2027, 12, 31, 23, 59, 59, tzinfo=UTC)
CHALLENGE_FIELDS: dict[str, Any] = {"headline": "A challenge built for one test"}
PHASE_FIELDS: dict[str, Any] = {"submission_kind": "algorithm", "submissions_open_at": OPENS,
                                "submissions_close_at": CLOSES, "score_title": "Dice (mean)",
                                "score_jsonpath": "aggregates.dice.mean", "score_default_sort": "desc"}
EVALUATION = 'FROM scratch\nENTRYPOINT ["/evaluate"]\n'  # never built: check only asks that it is there
SITE_FILES = ("site", "mkdocs.yml")  # the site's templates and configuration: the repository's own


class _Written(yaml.SafeDumper):
    """YAML as an organizer writes it: a moment in UTC as 2026-01-01T00:00:00Z."""


_Written.add_representer(dt.datetime, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:timestamp", value.isoformat().replace("+00:00", "Z")))


def _yaml(data: Mapping[str, Any]) -> str:
    return yaml.dump(dict(data), Dumper=_Written, sort_keys=False, allow_unicode=True)


def title_of(slug: str) -> str:
    """The name a default gives a slug: final-test -> Final test."""
    return slug.replace("-", " ").capitalize()


def _fields(defaults: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """`changes` over `defaults`; a change to None leaves the field out (its model default applies)."""
    return {k: v for k, v in {**defaults, **changes}.items() if v is not None}


@dataclass(frozen=True)
class Tree:
    """A challenge tree under `root`, written file by file: `challenge`, then each `phase` it needs."""

    root: Path

    @property
    def paths(self) -> TreePaths:
        return TreePaths(self.root)

    def challenge(self, slug: str = CHALLENGE, *, evaluation: bool = True, **fields: Any) -> Path:
        """challenges/<slug>/challenge.yml: a name from the slug, a headline and `fields` (None leaves a
        default out); with `evaluation`, an evaluation/Dockerfile for the phases to be evaluated by."""
        path = self.paths.challenge_file(slug)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_yaml(_fields({"name": slug.replace("-", " ").title(), **CHALLENGE_FIELDS}, fields)))
        if evaluation:
            dockerfile = self.paths.evaluation(slug) / "Dockerfile"
            dockerfile.parent.mkdir(parents=True, exist_ok=True)
            dockerfile.write_text(EVALUATION)
        return path

    def phase(self, slug: str = PHASE, *, challenge: str = CHALLENGE, **fields: Any) -> Path:
        """challenges/<challenge>/phases/<slug>.yml: a title from the slug (final-test: Final test), open
        from 2026-01-01 to the end of 2027, scored by aggregates.dice.mean, and `fields` over these (None
        leaves a default out)."""
        path = self.paths.phase_file(challenge, slug)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_yaml(_fields({"title": title_of(slug), **PHASE_FIELDS}, fields)))
        return path

    def results(self, scores: Mapping[str, float | None], *, phase: str = PHASE) -> None:
        """A submission v1 and its result for each participant, scored `scores[participant]` (None:
        failed), as `add_result` writes them in challenge CHALLENGE."""
        for participant, dice in scores.items():
            add_result(self.root, participant, "v1", dice, status="succeeded" if dice is not None else "failed",
                       error=None if dice is not None else "Algorithm failed: boom", phase=phase)

    def site(self) -> None:
        """The site's templates and mkdocs.yml, and the guides beside the challenges, from this repository:
        what `challenge build` needs besides the challenges."""
        for name in SITE_FILES:
            source, target = REPO / name, self.root / name
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            else:
                shutil.copy2(source, target)
        for guide in (REPO / "challenges").glob("*.md"):
            shutil.copy2(guide, self.paths.base / guide.name)


def build_tree(root: Path, phases: Iterable[str] = (PHASE,), *, challenge: str = CHALLENGE, site: bool = False,
               scores: Mapping[str, float | None] | None = None, **phase_fields: Any) -> Path:
    """A minimal valid tree under `root`: challenge `challenge` with `phases` (each with `phase_fields`
    over the defaults), the scores' results in the first phase, the site only if asked; `root`."""
    phases = tuple(phases)
    if scores and challenge != CHALLENGE:
        raise ValueError("add_result writes results in CHALLENGE only")
    tree = Tree(root)
    tree.challenge(challenge)
    for slug in phases:
        tree.phase(slug, challenge=challenge, **phase_fields)
    if scores:
        tree.results(scores, phase=phases[0])
    if site:
        tree.site()
    return root


def nvml_readable() -> bool:
    """Whether this host reads NVML (a GPU host), where tests of a host without it cannot run."""
    try:
        nvml_gpus()
    except GpuUnreadable:
        return False
    return True


def write_submission(repo: Path, participant: str, sub_id: str, image: str, phase: str = PHASE) -> Path:
    path = repo / "challenges" / CHALLENGE / "submissions" / phase / participant / f"{sub_id}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"phase: {phase}\nimage: {image}\n")
    return path


def sub(participant: str = "alice", sub_id: str = "v1", phase: str = PHASE, challenge: str = CHALLENGE) -> str:
    return f"challenges/{challenge}/submissions/{phase}/{participant}/{sub_id}.yml"


def text(image: str = IMAGE, phase: str = PHASE) -> str:
    return f"phase: {phase}\nimage: {image}\ntitle: Threshold\n"


def edit_yaml(path: Path, **changes) -> None:
    data = yaml.safe_load(path.read_text()) if path.exists() else {}
    path.write_text(yaml.safe_dump({**data, **changes}, sort_keys=False))


def phase_file(repo: Path, phase: str = PHASE) -> Path:
    return repo / "challenges" / CHALLENGE / "phases" / f"{phase}.yml"


def write_result(repo: Path, participant: str, sub_id: str, *, status: str = "succeeded",
                 created: dt.datetime = NOW - dt.timedelta(hours=1), phase: str = PHASE) -> None:
    stamp = created.isoformat(timespec="seconds")
    result = Result(challenge=CHALLENGE, phase=phase, participant=participant, submission=sub_id, status=status,
                    created_at=stamp, started_at=stamp, finished_at=stamp,
                    metrics={"aggregates": {"dice": {"mean": 0.8}}} if status == "succeeded" else None,
                    error=None if status == "succeeded" else "Algorithm failed: boom")
    path = repo / "challenges" / CHALLENGE / "results" / phase / participant / f"{sub_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.to_json())


def add_result(repo: Path, participant: str, sub_id: str, dice: float | None, status: str = "succeeded",
               error: str | None = None, *, cases: list[float] | None = None, phase: str = PHASE,
               logs: dict[str, str] | None = None) -> None:
    """A result whose Dice mean is `dice`; `cases` adds per-case Dice values (metrics["case"])."""
    store = Store(repo)
    # Each participant's own image: the same digest under two participants is flagged (tree/sharing.py).
    own = "sha256:" + hashlib.sha256(participant.encode()).hexdigest()
    path = write_submission(repo, participant, sub_id, f"ghcr.io/{participant}/a@{own}", phase=phase)
    metrics = None if dice is None else {"aggregates": {"dice": {"mean": dice, "std": 0.01, "min": dice - 0.1},
                                                          "jaccard": {"mean": dice / 2, "std": 0.02}}}
    if cases is not None:
        metrics["case"] = {f"case-{i:03d}": {"dice": v, "jaccard": v / 2} for i, v in enumerate(cases)}
    when = "2026-03-01T10:00:00+00:00"
    store.write_result(store.submission(path), Result(
        challenge=CHALLENGE, phase=phase, participant=participant, submission=sub_id, status=status,
        created_at=when, started_at=when, finished_at=when, metrics=metrics, error=error, logs=logs,
        algorithm=RunRecord(image=f"ghcr.io/{participant}/a@{DIGEST}", exit_code=0, wall_time_s=1.0,
                            cases=None if cases is None else {f"case-{i:03d}": {"wall_time_s": 1.5 + i}
                                                              for i in range(len(cases))})))


def add_signed_result(repo: Path, store: Store, participant: str, dice: float, *,
                      data: str = "sha256:" + "d" * 64, now: dt.datetime | None = None,
                      evaluation_image: str = "sha256:" + "e" * 64, status: str = "succeeded") -> Path:
    """A submission and its result as the runner writes it: with provenance, signed by the store's key."""
    path = write_submission(repo, participant, "v1", f"ghcr.io/{participant}/a@sha256:{'a' * 64}")
    origin = Provenance(submission_blob=blob_id(path.read_bytes()), phase_blob=blob_id(phase_file(repo).read_bytes()),
                        algorithm=f"ghcr.io/{participant}/a@sha256:{'a' * 64}", evaluation_image=evaluation_image,
                        evaluation_context="sha256:" + "c" * 64, data={"ground-truth": data}, data_manifest=data,
                        runner_commit=None, signed_at="")
    return store.write_result(store.submission(path), Result(
        challenge=CHALLENGE, phase=PHASE, participant=participant, submission="v1", status=status,
        created_at="2026-03-01T10:00:00+00:00", started_at="2026-03-01T10:00:00+00:00",
        finished_at="2026-03-01T10:00:00+00:00",
        metrics={"aggregates": {"dice": {"mean": dice}}} if status == "succeeded" else None,
        error=None if status == "succeeded" else "Algorithm failed: boom",
        provenance=origin), now=now)


def commit(repo: Path, when: str, message: str = "results") -> None:
    """Commit everything under challenges/ with `when` as author and committer date."""
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_NAME": "runner",
           "GIT_AUTHOR_EMAIL": "runner@example.org", "GIT_COMMITTER_NAME": "runner",
           "GIT_COMMITTER_EMAIL": "runner@example.org"}
    subprocess.run(["git", "add", "-A", "challenges"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=repo, check=True, env=env)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def served(site: Path) -> Iterator[str]:
    """A built site served on 127.0.0.1 while the block runs; its base URL."""
    handler = functools.partial(QuietHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{server.server_port}/"
        server.shutdown()


def wait_for(browser: Any, css: str, count: int = 1) -> list[Any]:
    """The elements matching `css` once at least `count` are on the page (10 s at most)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, 10).until(
        lambda b: (found := b.find_elements(By.CSS_SELECTOR, css)) and len(found) >= count and found)


SCREENS = [(390, 844), (1280, 900)]  # a phone and a desktop, in CSS pixels


@contextlib.contextmanager
def window_size(browser: Any, width: int, height: int) -> Iterator[None]:
    """The browser's window at `width` x `height` for the block, then as it was (the fixture is shared)."""
    size = browser.get_window_size()
    browser.set_window_size(width, height)
    try:
        yield
    finally:
        browser.set_window_size(size["width"], size["height"])


def fits_across(browser: Any, *elements: Any) -> bool:
    """Whether each element, scrolled into view, shows whole across the window, and the page never scrolls
    sideways (what overflows scrolls inside its own box)."""
    width = browser.execute_script("return document.documentElement.clientWidth")
    for element in elements:
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        box = element.rect
        if not element.is_displayed() or box["x"] < 0 or box["x"] + box["width"] > width:
            return False
    return browser.execute_script("return document.documentElement.scrollWidth") <= width


@contextlib.contextmanager
def public_base_name(docker_client, base_image: str) -> Iterator[None]:
    """The documents build FROM python:3.11-slim, as a participant with Docker Hub does; where it
    cannot be pulled, the offline base stands in under that name while the blocks run."""
    name = "python:3.11-slim"
    have = bool(docker_client.images.list(name=name))
    if not have:
        docker_client.images.get(base_image).tag(name)
    try:
        yield
    finally:
        if not have:
            docker_client.images.remove(name, noprune=True)


def base_image_setting() -> str | None:
    """The base image the runner is given here: $CHALLENGE_BASE_IMAGE, else none (the default's)."""
    return Settings.of(env=os.environ, cwd=Path.cwd()).base_image


# --- a runner that is not root ------------------------------------------------------------------

RUNNER_UID = 4242  # the runner's user where the tests run as root (organizers.md: a user in the docker group)


@contextlib.contextmanager
def as_runner_user() -> Iterator[None]:
    """The test process acting, while inside, as a runner that is not root: as root (whom no permission
    stops) it takes RUNNER_UID as its effective uid and gid, and the group of the engine's socket as its
    only other group, and is root again afterwards. A test process that is not root is such a runner
    already, and is left as it is."""
    if os.geteuid() != 0:
        yield
        return
    gid, groups = os.getegid(), os.getgroups()
    socket = Path(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://"))
    os.setgroups([socket.stat().st_gid] if socket.exists() else [])
    os.setegid(RUNNER_UID)
    os.seteuid(RUNNER_UID)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(gid)
        os.setgroups(groups)
