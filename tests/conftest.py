"""Shared fixtures: the real Docker engine, a Python base image built once, and a copy of the repo.

Without a reachable engine the Docker tests are skipped, except under CI (CI=true), where a
missing engine fails the run: a green run that skipped the real engine would prove nothing.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from runner.evaluation.examples import prepare_workspace
from runner.execution.docker_engine import DockerEngine
from tests.github_server import github, origin  # noqa: F401 (fixtures for every test module)
from tests.helpers import CHALLENGE, IMAGES, REPO, RUNNER_UID, base_image_setting, build_tree

TINI = Path("/usr/bin/tini-static")  # a static binary: an image of 1 MB that runs and exits 0


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # any failure to reach the engine
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but no Docker engine is reachable: {exc}")
        pytest.skip(f"no Docker engine reachable: {exc}")
    return client


@pytest.fixture(scope="session")
def engine(docker_client, base_image):
    """The Docker executor the runner uses, on the real engine, with the base image as keeper."""
    with DockerEngine(docker_client, keeper_image=base_image) as docker_engine:
        yield docker_engine


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    """python:3.11-slim where it can be pulled, else the offline Debian base (built once per machine)."""
    return DockerEngine(docker_client).ensure_base(base_image_setting())



@pytest.fixture(scope="session")
def behave(engine, base_image):
    """behave(mode) -> image ID of a container that misbehaves that way; each built once per machine."""
    built: dict[str, str] = {}

    def image(mode: str) -> str:
        if mode not in built:
            built[mode] = engine.build(IMAGES / "behave", name=f"challenge-test/behave-{mode}", base=base_image,
                                       args={"MODE": mode})
        return built[mode]

    return image


@pytest.fixture(scope="session")
def tiny_image(docker_client) -> str:
    """A 1 MB image holding one static binary that prints its version and exits 0."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as rootfs:
        info = rootfs.gettarinfo(str(TINI), arcname="tini")
        info.mode = 0o755
        with open(TINI, "rb") as handle:
            rootfs.addfile(info, handle)
    docker_client.api.import_image_from_data(buffer.getvalue(), repository="challenge-test/tiny", tag="1",
                                             changes=['ENTRYPOINT ["/tini"]', 'CMD ["--version"]'])
    return docker_client.images.get("challenge-test/tiny:1").id


@pytest.fixture
def repo(tmp_path, request) -> Path:
    """A scratch copy of the repository's challenges, site templates and mkdocs.yml: for tests of the
    demo's own challenges; marked `example_alone`, of the example challenge (CHALLENGE) alone, the others
    being no business of the test. A test that needs some challenge with a phase takes `tree` instead."""
    assert not (tmp_path / "repo").exists(), "a test takes the demo's copy (repo) or a built tree (tree), not both"
    root = prepare_workspace(REPO, tmp_path / "repo")
    if request.node.get_closest_marker("example_alone"):
        for folder in (root / "challenges").iterdir():
            if folder.is_dir() and folder.name != CHALLENGE:
                shutil.rmtree(folder)
    return root


@pytest.fixture
def tree(tmp_path) -> Path:
    """A minimal valid tree, built (tests.helpers.build_tree): challenge CHALLENGE with one phase, PHASE
    ("Final test"), and nothing else; a test adds what it needs with tests.helpers.Tree."""
    assert not (tmp_path / "repo").exists(), "a test takes the demo's copy (repo) or a built tree (tree), not both"
    return build_tree(tmp_path / "repo")


@pytest.fixture
def runner_home(tmp_path) -> Iterator[Path]:
    """A folder of the runner that `helpers.as_runner_user` acts as: tmp_path, unless the test process is
    root (root's pytest folders are closed to other users), then a folder of its own, removed afterwards."""
    if os.geteuid() != 0:
        yield tmp_path
        return
    home = Path(tempfile.mkdtemp(prefix="challenge-test-runner-"))
    os.chown(home, RUNNER_UID, RUNNER_UID)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """The example challenge's hidden data: 3 cases, made by its own script."""
    root = tmp_path_factory.mktemp("data-root")
    script = REPO / "challenges" / CHALLENGE / "data" / "make_data.py"
    subprocess.run([sys.executable, str(script), str(root), "--cases", "3"], check=True, capture_output=True)
    return root


