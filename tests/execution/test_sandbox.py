"""The Docker executor's limits hold on the real Docker engine."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import pytest

from runner.execution.docker_engine import CHECKOUT, LABEL, OWNER, DockerEngine
from runner.execution.sandbox import NOBODY, NOBODY_GID, Mount, RunAs, RunSpec, SandboxError
from runner.execution.trusted import ImageFiles
from tests.helpers import IMAGES

pytestmark = pytest.mark.docker


def run(engine, image, tmp_path: Path, **limits):
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    spec = RunSpec(image=image, mounts=(Mount(inputs, "/input"),), **limits)
    with engine.output_area(64 * 1024**2) as area:
        return engine.run(spec, area)


def test_unprivileged_user_without_capabilities(engine, behave, tmp_path):
    outcome = run(engine, behave("whoami"), tmp_path)
    assert outcome.ok, outcome.stderr_tail
    assert outcome.stdout_tail[-1] == "uid=65534 caps=0000000000000000 nnp=1 tmp_writable=True"


def test_network_is_unreachable(engine, behave, tmp_path):
    outcome = run(engine, behave("network"), tmp_path)
    assert outcome.exit_code == 1
    assert "Network is unreachable" in outcome.error_line(300)


def test_root_filesystem_is_read_only(engine, behave, tmp_path):
    outcome = run(engine, behave("write-root"), tmp_path)
    assert outcome.error_line(300) == "OSError: [Errno 30] Read-only file system: '/opt/owned'"


def test_time_limit_kills_the_container(engine, behave, tmp_path):
    outcome = run(engine, behave("sleep"), tmp_path, time_limit=2)
    assert outcome.timed_out and not outcome.ok
    assert 2 <= outcome.wall_time_s < 15
    assert outcome.error_line(2) == "The container exceeded its time limit of 2 s and was stopped"


def test_memory_limit_without_swap(engine, behave, tmp_path):
    outcome = run(engine, behave("memory"), tmp_path, memory=256 * 1024**2)
    assert outcome.oom_killed and outcome.exit_code == 137
    assert outcome.error_line(300) == "The container was killed as it exceeded its memory limit"


def test_error_line_is_last_nonempty_stderr_line(engine, behave, tmp_path):
    outcome = run(engine, behave("crash"), tmp_path)
    assert outcome.error_line(300) == "RuntimeError: model weights not found at /opt/model.pt"
    assert outcome.stdout_tail == ["starting"]


def test_only_a_dead_runners_containers_are_removed_by_job(engine, docker_client, base_image):
    """Two runners (two checkouts, two challenge repositories) may run same-named submissions on one
    engine: the one that starts a job removes what a dead runner left, never a live one's run."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    job = f"c/p/team-{uuid.uuid4().hex[:8]}/v1"
    owners = {"dead": f"{host}:{dead.pid}", "live": f"{host}:{os.getppid()}"}
    made = {who: docker_client.containers.create(base_image, ["true"], labels={OWNER: owner, LABEL: job})
            for who, owner in owners.items()}
    try:
        assert engine.remove_labelled(job) == 1
        left = {c.id for c in docker_client.containers.list(all=True, filters={"label": f"{LABEL}={job}"})}
        assert left == {made["live"].id}
    finally:
        for container in made.values():
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)


def test_runs_say_which_runner_and_checkout_started_them(engine, behave, tmp_path, docker_client):
    seen: list[dict[str, str]] = []
    with engine.output_area(64 * 1024**2) as area:
        spec = RunSpec(image=behave("sleep"), job=f"c/p/label-{uuid.uuid4().hex[:8]}/v1", time_limit=1,
                       checkout=tmp_path)
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(engine.run, spec, area)
            while not seen and not running.done():
                seen = [c.labels for c in docker_client.containers.list(filters={"label": f"{LABEL}={spec.job}"})]
            running.result()
    assert seen and seen[0][OWNER] == f"{socket.gethostname()}:{os.getpid()}"
    assert seen[0][CHECKOUT] == str(tmp_path)


# --- the image's declared user ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def declared_user(engine, base_image):
    """declared_user(USER line) -> image ID of an image whose user keeps a module in ~/.local (built once)."""
    built: dict[str, str] = {}

    def image(line: str) -> str:
        if line not in built:
            built[line] = engine.build(IMAGES / "declared-user", name="challenge-test/declared-user", base=base_image,
                                       args={"USER_LINE": line})
        return built[line]

    return image


def run_as_declared(engine, image: str, tmp_path: Path) -> tuple[dict, RunAs]:
    """Run `image` as the runner does (as its declared user, into an area that user owns) on hidden data
    readable only by its owner and the containers' group, as the organizers' guide sets it."""
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    secret = inputs / "secret.txt"
    secret.write_text("hidden")
    os.chown(secret, 0, int(NOBODY_GID))
    secret.chmod(0o640)
    who = engine.run_as(image)
    with engine.output_area(64 * 1024**2, user=who.user) as area:
        outcome = engine.run(RunSpec(image=image, mounts=(Mount(inputs, "/input"),), user=who), area)
        assert outcome.ok, outcome.stderr_tail
        area.collect(tmp_path / "out")
    return json.loads((tmp_path / "out" / "who.json").read_text()), who


@pytest.mark.skipif(os.geteuid() != 0, reason="sets hidden data's owner and group as an admin does")
def test_an_image_declaring_a_user_runs_as_it_and_finds_its_packages(engine, declared_user, tmp_path):
    shown, who = run_as_declared(engine, declared_user("user"), tmp_path)
    uid, _, gid = who.user.partition(":")
    assert shown == {"uid": int(uid), "gid": int(gid), "groups": sorted({int(gid), int(NOBODY_GID)}),
                     "home": "/home/user", "localmod": "home", "secret": "hidden"}
    assert int(uid) not in (0, 65534)


@pytest.mark.skipif(os.geteuid() != 0, reason="sets hidden data's owner and group as an admin does")
@pytest.mark.parametrize("line", ["root", "toor", "0:0"])
def test_an_image_declaring_root_however_named_runs_as_nobody(engine, declared_user, tmp_path, line):
    shown, who = run_as_declared(engine, declared_user(line), tmp_path)
    assert who == RunAs()
    assert (shown["uid"], shown["gid"], shown["home"], shown["secret"]) == (65534, 65534, "/tmp", "hidden")


def test_an_image_declaring_a_user_it_does_not_define_is_refused(engine, declared_user):
    with pytest.raises(SandboxError, match="the image's USER 'ghost' is not in its /etc/passwd"):
        engine.run_as(declared_user("ghost"))


def test_who_an_image_runs_as_is_read_from_it_once_per_image_id(docker_client, base_image, declared_user, tmp_path):
    """A cold runner process finds the image's /etc/passwd and /etc/group kept by image ID in its state folder,
    and reads no container of the image for them; a damaged record is read from the image again."""
    image = declared_user("user")
    folder = tmp_path / "image-files"

    def run_as_in_a_new_engine() -> tuple[RunAs, list[str]]:
        created: list[str] = []
        with DockerEngine(docker_client, keeper_image=base_image, image_files=ImageFiles(folder)) as engine:
            create = engine.client.api.create_container
            engine.client.api.create_container = lambda *a, **k: created.append(a[0]) or create(*a, **k)
            try:
                return engine.run_as(image), created
            finally:
                del engine.client.api.create_container

    first, created = run_as_in_a_new_engine()
    assert created == [image] and first.user != NOBODY
    assert [p.name for p in folder.iterdir()] == [f"{image.removeprefix('sha256:')}.json"]
    assert run_as_in_a_new_engine() == (first, [])
    next(folder.iterdir()).write_text("{")
    assert run_as_in_a_new_engine() == (first, [image])


@pytest.mark.parametrize("recipe, message", [
    ("echo '65534:x:0:' >> /etc/group", "the image's /etc/group names a group '65534'"),
    ("mv /etc/group /etc/group.real && ln -s /etc/group.real /etc/group", "the image's /etc/group is not a plain file"),
])
def test_an_image_whose_group_file_could_hand_out_root_group_is_refused(engine, base_image, tmp_path, recipe, message):
    """The engine looks groups up by name in the image's own /etc/group, even those it is given as numbers."""
    (tmp_path / "Dockerfile").write_text(f"ARG BASE\nFROM ${{BASE}}\nRUN {recipe}\n")
    image = engine.build(tmp_path, name="challenge-test/numbered-group", base=base_image)
    with pytest.raises(SandboxError, match=message):
        engine.run_as(image)


def test_a_volume_the_image_declares_is_a_small_tmpfs_and_leaves_nothing(engine, base_image, docker_client, tmp_path):
    (tmp_path / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nRUN mkdir /big && chmod 777 /big\nVOLUME /big\n")
    image = engine.build(tmp_path, name="challenge-test/volume", base=base_image)
    before = {v.name for v in docker_client.volumes.list()}
    fill = "dd if=/dev/zero of=/big/fill bs=1M count=64 2>/dev/null; stat -c %s /big/fill; mount | grep ' /big '"
    spec = RunSpec(image=image, command=("sh", "-c", fill), tmp_size=8 * 1024**2, user=engine.run_as(image))
    outcome = engine.run(spec)
    engine.drain()
    assert outcome.stdout_tail[0] == str(8 * 1024**2)  # 64 MiB asked, 8 MiB written
    assert outcome.stdout_tail[1].startswith("tmpfs on /big type tmpfs") and "size=8192k" in outcome.stdout_tail[1]
    assert {v.name for v in docker_client.volumes.list()} == before  # no anonymous volume left behind


@pytest.mark.parametrize("volume, said", [
    ("/input/planted", "/input/planted, inside /input"),
    ("//input/planted", "//input/planted, inside /input"),  # read as the engine cleans it
    ("/tmp/../input/planted", "/tmp/../input/planted, inside /input"),
])
def test_an_image_declaring_a_volume_inside_a_read_only_mount_cannot_start(engine, base_image, tmp_path, volume, said):
    """The engine would make the folder in the read-only hidden inputs: refused at every start as the engine's
    own trouble, so the submission stayed pending for ever. Now the image's failure, said at once."""
    outcome, inputs = run_declaring(engine, base_image, tmp_path, volume)
    assert not outcome.ok and list(inputs.iterdir()) == []
    assert outcome.error_line(300) == (f"The container could not start: the image declares VOLUME {said}, which the "
                                       "runner mounts read-only")


def test_a_relative_volume_cannot_start_and_one_inside_output_runs(engine, base_image, tmp_path):
    outcome, _ = run_declaring(engine, base_image, tmp_path, "input/planted")
    assert outcome.error_line(300) == ("The container could not start: the image declares VOLUME input/planted, "
                                       "which is not an absolute path")
    outcome, _ = run_declaring(engine, base_image, tmp_path, "/output/cache")  # a scratch tmpfs, as ever
    assert outcome.ok, outcome.stderr_tail


def run_declaring(engine, base_image, tmp_path: Path, volume: str):
    (tmp_path / "Dockerfile").write_text(f'ARG BASE\nFROM ${{BASE}}\nVOLUME ["{volume}"]\n')
    image = engine.build(tmp_path, name="challenge-test/volume-in-mount", base=base_image)
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    with engine.output_area(16 * 1024**2) as area:
        return engine.run(RunSpec(image=image, mounts=(Mount(inputs, "/input"),), command=("true",)), area), inputs
