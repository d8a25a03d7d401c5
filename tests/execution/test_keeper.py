"""The keeper's protocol: the agent's tar of a folder, read back by the runner's side through the
engine's stdout framing, checked by `extract_tar`. Here the agent runs on a thread behind a socket
pair that frames its stdout as the engine does; test_jam runs it inside real keepers."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.execution import keeper_agent
from runner.execution.keeper import KeeperChannel, KeeperGone
from runner.execution.outputs import OutputLimits, UnsafeOutput, extract_tar
from runner.execution.sandbox import Mount, RunSpec, SandboxError


class EngineFramed:
    """The agent's stdout as the engine relays it: each write a stdout frame, some stderr between."""

    def __init__(self, connection: socket.socket):
        self.connection = connection

    def write(self, data: bytes) -> None:
        self.connection.sendall(b"\2\0\0\0" + (4).to_bytes(4, "big") + b"note")  # stderr chatter is skipped
        self.connection.sendall(b"\1\0\0\0" + len(data).to_bytes(4, "big") + data)

    def flush(self) -> None:
        pass


@pytest.fixture
def channel(tmp_path) -> Iterator[tuple[KeeperChannel, Path]]:
    """A channel to an agent serving `tmp_path / "output"`."""
    ours, theirs = socket.socketpair()
    root = tmp_path / "output"
    root.mkdir()

    def agent() -> None:  # until the test closes its end, unread answers and all
        with theirs, theirs.makefile("r") as requests, contextlib.suppress(OSError):
            for line in requests:
                keeper_agent.answer(EngineFramed(theirs), line.strip(), root=str(root))

    thread = threading.Thread(target=agent, daemon=True)
    thread.start()
    yield KeeperChannel(ours, timeout=10), root
    ours.close()
    thread.join(5)


def collect(channel: KeeperChannel, target: Path, limits: OutputLimits = OutputLimits()) -> int:
    answer = channel.ask("collect")
    found = extract_tar(answer, target, strip="output", limits=limits)
    answer.finish()
    return found


def test_a_folder_comes_back_whole_and_the_next_answer_starts_clean(channel, tmp_path):
    chan, root = channel
    (root / "sub" / "deeper").mkdir(parents=True)
    files = {"empty.txt": b"", "small.bin": b"abc", "sub/block.bin": b"x" * 512,
             "sub/deeper/big.bin": os.urandom(keeper_agent.CHUNK + 1), "sub/naïve ✓.json": b"{}"}
    for name, data in files.items():
        (root / name).write_bytes(data)
    for attempt in range(2):
        target = tmp_path / f"copy{attempt}"
        target.mkdir()
        assert collect(chan, target) == len(files)
        assert {p.relative_to(target).as_posix(): p.read_bytes() for p in target.rglob("*") if p.is_file()} == files


def test_what_the_owner_made_unreadable_is_read_all_the_same(channel, tmp_path):
    chan, root = channel
    (root / "locked").mkdir()
    (root / "locked" / "inside.txt").write_text("x")
    (root / "secret.txt").write_text("y")
    (root / "secret.txt").chmod(0)
    (root / "locked").chmod(0)
    target = tmp_path / "copy"
    target.mkdir()
    assert collect(chan, target) == 2
    assert (target / "locked" / "inside.txt").read_text() == "x" and (target / "secret.txt").read_text() == "y"
    # Root reads them anyway (the tests run as root): that the agent gave the permission back shows in the modes.
    assert stat.S_IMODE((root / "secret.txt").stat().st_mode) == 0o400
    assert stat.S_IMODE((root / "locked").stat().st_mode) == 0o500


def listening(path: Path) -> socket.socket:
    made = socket.socket(socket.AF_UNIX)
    made.bind(str(path))
    return made


@pytest.mark.parametrize("make, reason", [
    (lambda root: (root / "link").symlink_to("/etc/shadow"), "/output/link is a link"),
    (lambda root: os.link(root / "a", root / "b"), "/output/[ab] is a link"),
    (lambda root: os.mkfifo(root / "pipe"), "/output/pipe is not a regular file or folder"),
    (lambda root: listening(root / "sock"), "/output/sock is not a regular file or folder"),
])
def test_links_fifos_and_sockets_are_described_not_followed_and_refused(channel, tmp_path, make, reason):
    chan, root = channel
    (root / "a").write_text("a")
    made = make(root)
    with contextlib.closing(made) if made else contextlib.nullcontext(), pytest.raises(UnsafeOutput, match=reason):
        collect(chan, tmp_path / "copy")


def make_deeper_than_the_kernel_allows(root: Path) -> None:
    """Folders nested past PATH_MAX (4096), made as a participant can: one level at a time, relative."""
    here = os.open(root, os.O_RDONLY)
    for _ in range(50):
        os.mkdir("d" * 100, dir_fd=here)
        deeper = os.open("d" * 100, os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = deeper
    os.close(here)


def test_what_the_agent_may_not_read_is_the_participants_refusal_and_the_channel_goes_on(channel, tmp_path,
                                                                                        monkeypatch):
    chan, root = channel
    (root / "theirs.bin").write_text("x")
    lstat = os.lstat

    def not_ours(path):  # a file of another user, mode 0600: tests run as root, so it is made up
        if str(path).endswith("theirs.bin"):
            raise PermissionError(13, "Permission denied", str(path))
        return lstat(path)

    monkeypatch.setattr(keeper_agent.os, "lstat", not_ours)
    with pytest.raises(UnsafeOutput, match=r"^/output could not be read: \[Errno 13\] Permission denied"):
        collect(chan, tmp_path / "copy")
    assert chan.usable  # the answer was read to its end frame


def test_a_tree_past_the_kernels_limit_is_refused_by_the_host_as_it_streams(channel, tmp_path):
    chan, root = channel
    make_deeper_than_the_kernel_allows(root)
    with pytest.raises(UnsafeOutput, match="is a path longer than 1024 characters"):
        collect(chan, tmp_path / "copy")  # long before the agent reaches the kernel's limit


def test_what_the_agent_cannot_empty_it_says_for_the_shell_to_do(channel):
    chan, root = channel
    make_deeper_than_the_kernel_allows(root)
    assert "File name too long" in chan.ask("empty").finish()
    assert chan.usable


def test_the_agents_own_failure_is_a_keeper_gone_not_a_refusal(channel, tmp_path):
    chan, root = channel
    root.rmdir()  # not something a participant can do: /output is the volume's root
    with pytest.raises(KeeperGone, match=r"the keeper failed \(\[Errno 2\] No such file"):
        collect(chan, tmp_path / "copy")
    assert not chan.usable
    with pytest.raises(KeeperGone):
        chan.ask("collect")


def test_an_unknown_request_is_the_agents_failure(channel):
    chan, _ = channel
    with pytest.raises(KeeperGone, match="unknown request 'format c:'"):
        chan.ask("format c:").finish()


def test_no_request_is_sent_while_an_answer_is_left_unread(channel, tmp_path):
    chan, root = channel
    for i in range(1001):
        (root / f"f{i}").write_text("x")
    with pytest.raises(UnsafeOutput, match="more than 1000 files"):
        collect(chan, tmp_path / "copy", OutputLimits(max_files=1000))
    assert not chan.usable
    with pytest.raises(KeeperGone, match="last answer was left unread"):
        chan.ask("empty")


def test_empty_opens_closed_folders_and_leaves_the_area_as_made(channel, tmp_path):
    chan, root = channel
    (root / "closed" / "inner").mkdir(parents=True)
    (root / "closed" / "inner" / "f").write_text("x")
    (root / "closed" / "inner").chmod(0)
    (root / "closed").chmod(0o500)
    (root / "top.txt").write_text("y")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "kept.txt").write_text("z")
    (root / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    root.chmod(0o500)
    assert chan.ask("empty").finish() == ""
    assert list(root.iterdir()) == [] and stat.S_IMODE(root.stat().st_mode) == 0o700
    assert (tmp_path / "elsewhere" / "kept.txt").read_text() == "z"  # a link is removed, not followed


# A default ACL u::---,g::---,o::--- in the kernel's form: a version, then (tag, permissions, id) entries.
NO_PERMISSION = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, 0, 0xFFFFFFFF) for tag in (0x01, 0x04, 0x20))


def test_empty_takes_off_what_a_run_left_on_output_itself(channel):
    chan, root = channel
    os.setxattr(root, "system.posix_acl_default", NO_PERMISSION)
    os.setxattr(root, "user.note", b"for the next run")
    os.utime(root, (4_000_000_000, 1))
    os.chown(root, -1, os.getgid() + 1)  # a group of its own the run gave it
    flagged = set_flags(root, NODUMP | NOATIME)  # chattr +d +A, where this file system keeps flags
    assert chan.ask("empty").finish() == ""
    assert os.listxattr(root) == [] and stat.S_IMODE(root.stat().st_mode) == 0o700
    assert abs(time.time() - root.stat().st_mtime) < 60 and abs(time.time() - root.stat().st_atime) < 60
    assert root.stat().st_gid == os.getgid()
    assert not flagged or flags_of(root) & (NODUMP | NOATIME) == 0


NODUMP, NOATIME = 0x40, 0x80  # FS_NODUMP_FL, FS_NOATIME_FL


def flags_of(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        found = bytearray(8)
        fcntl.ioctl(fd, keeper_agent.FS_IOC_GETFLAGS, found)
        return int.from_bytes(found[:4], "little")
    finally:
        os.close(fd)


def set_flags(path: Path, flags: int) -> bool:
    """Whether the flags could be set here (tmpfs keeps them from Linux 6.0)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, keeper_agent.FS_IOC_SETFLAGS, (flags_of(path) | flags).to_bytes(4, "little") + bytes(4))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def stays(path, name):  # removed without a word, yet still there
    pass


def not_permitted(path, name):  # the kernel refuses its removal
    raise PermissionError(13, "Permission denied", str(path))


@pytest.mark.parametrize("removexattr, reason", [
    (stays, "attributes left that the keeper may not remove: user.kept"),
    (not_permitted, "[Errno 13] Permission denied"),
])
def test_an_attribute_the_agent_cannot_remove_refuses_the_empty(channel, monkeypatch, removexattr, reason):
    chan, root = channel
    os.setxattr(root, "user.kept", b"x")
    monkeypatch.setattr(keeper_agent.os, "removexattr", removexattr)
    assert reason in chan.ask("empty").finish()
    assert chan.usable


def test_a_keeper_that_dies_mid_answer_is_gone_with_its_last_words(tmp_path):
    ours, theirs = socket.socketpair()
    theirs.sendall(b"\1\0\0\0\0\0\0\5d\0\0\4\0")  # a data frame of 1024 bytes announced, none sent
    theirs.sendall(b"\2\0\0\0\0\0\0\x0bMemoryError")
    theirs.shutdown(socket.SHUT_WR)
    chan = KeeperChannel(ours, timeout=10)
    with theirs, contextlib.closing(chan), pytest.raises(KeeperGone, match=r"ended its connection \(MemoryError\)"):
        extract_tar(chan.ask("collect"), tmp_path, strip="output")


def test_a_keeper_that_stops_answering_times_out(tmp_path):
    ours, theirs = socket.socketpair()
    chan = KeeperChannel(ours, timeout=0.2)
    with theirs, contextlib.closing(chan):
        with pytest.raises(KeeperGone, match="stopped answering"):
            extract_tar(chan.ask("collect"), tmp_path, strip="output")


def test_headers_keep_the_mode_of_what_was_found(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "f").chmod(0o640)
    info = keeper_agent.member(str(tmp_path / "f"), "output/f", os.lstat(tmp_path / "f"))
    assert (info.type, info.size, info.mode) == (b"0", 1, 0o640)
    assert stat.S_IMODE(os.lstat(tmp_path / "f").st_mode) == 0o640


@pytest.mark.docker
def test_an_area_whose_keeper_died_fails_transiently_and_is_replaced(engine, tmp_path):
    with engine.output_area(1024**2) as area:
        area.keeper.kill()
        with pytest.raises(SandboxError, match="reading /output: the keeper") as failed:
            area.collect(tmp_path / "lost")
        assert failed.value.transient
        area.prepare()  # before the next run: a new keeper and volume
        target = tmp_path / "copy"
        target.mkdir()
        assert area.collect(target) == 0
        area.keeper.reload()
        assert area.keeper.status == "running"


@pytest.mark.docker
def test_a_tree_too_deep_for_the_agent_is_emptied_by_the_shell(engine, behave, tmp_path):
    with engine.output_area(16 * 1024**2) as area:
        assert engine.run(RunSpec(image=behave("deep-tree")), area).ok
        assert area.empty() and not area.dirty
        target = tmp_path / "copy"
        target.mkdir()
        assert area.collect(target) == 0


@pytest.mark.docker
def test_the_agent_itself_reads_and_empties_what_its_writer_closed(engine, behave, tmp_path):
    """As the area's user, not root: without the agent's chmods, collect would be refused and emptying
    would fall to the shell."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    with engine.output_area(16 * 1024**2) as area:
        assert engine.run(RunSpec(image=behave("unreadable"), mounts=(Mount(inputs, "/input"),)), area).ok
        target = tmp_path / "copy"
        target.mkdir()
        assert area.collect(target) == 1 and (target / "notes" / "run.txt").read_text() == "x"
        assert area.channel.ask("empty").finish() == ""


AREA = 8 * 1024**2  # a size no other test's areas have: each test below gets back its own area from the pool


def left_by(engine, image: str) -> tuple[str, list[str]]:
    """The volume of the area a run of `image` wrote into, and what the run printed; the area is back
    in the pool, emptied."""
    with engine.output_area(AREA) as area:
        outcome = engine.run(RunSpec(image=image), area)
        assert outcome.ok, outcome.stderr_tail
        volume = area.volume.name
    engine.drain()
    return volume, outcome.stdout_tail


def found_by_the_next_run(engine, behave, volume: str) -> dict[str, object]:
    """What a run (mode read-output) into that same area finds of /output itself; it has written a nested folder."""
    with engine.output_area(AREA) as area:
        assert area.volume.name == volume  # emptied and pooled, not replaced
        outcome = engine.run(RunSpec(image=behave("read-output")), area)
    assert outcome.ok, outcome.stderr_tail
    return json.loads(outcome.stdout_tail[-1])


AS_MADE = {"attributes": [], "mode": "0o700", "times_now": True}


@pytest.mark.docker
def test_a_default_acl_left_on_output_is_not_the_next_runs(engine, behave):
    """A default ACL without permissions on /output: the next submission given the area could not write
    into the folders it makes, a failure recorded as its own."""
    volume, _ = left_by(engine, behave("acl-on-output"))
    assert found_by_the_next_run(engine, behave, volume) == AS_MADE


@pytest.mark.docker
def test_user_attributes_left_on_output_are_not_the_next_runs(engine, behave):
    """user.* attributes on /output: data for the next submission, outside the area's size."""
    volume, said = left_by(engine, behave("attribute-on-output"))
    if said == ["user attributes refused"]:  # the run checks first, before any other step
        pytest.skip("this kernel's tmpfs keeps no user.* attributes (Linux 6.6 or later does)")
    assert found_by_the_next_run(engine, behave, volume) == AS_MADE


@pytest.mark.docker
def test_what_a_run_left_on_output_itself_goes_when_the_shell_empties_its_tree(engine, behave):
    """The agent cannot empty a tree past the kernel's limit, the shell does: /output itself is reset all the same."""
    volume, _ = left_by(engine, behave("deep-tree-and-acl-on-output"))
    assert found_by_the_next_run(engine, behave, volume) == AS_MADE


@pytest.mark.docker
def test_an_attribute_no_run_can_set_is_left_and_the_area_kept(engine, docker_client, base_image):
    """security.* needs CAP_SYS_ADMIN, which no run has, and a security module labels every file with one
    (SELinux's): were it refused, no area would ever be pooled on such a host."""
    set_attribute = "import os; os.setxattr('/output', 'security.kept', b'x')"
    with engine.output_area(AREA) as area:
        docker_client.containers.run(base_image, ["python3", "-c", set_attribute], entrypoint=[], user="0",
                                     cap_add=["SYS_ADMIN"], network_mode="none", volumes=area.mount(), remove=True)
        assert area.empty() and not area.dirty


def test_the_pool_keeps_a_few_areas_not_one_per_user_ever_run(engine, docker_client):
    """Each declared user of each image has areas of its own; a warm runner lets the oldest go. Counted
    on the engine: the tmpfs volumes this runner holds, and whose they are."""
    from runner.execution.docker_engine import MAX_IDLE_AREAS, OWNER

    users = [f"{4000 + i}:{4000 + i}" for i in range(MAX_IDLE_AREAS + 2)]
    for user in users:
        with engine.output_area(1024**2, user=user):
            pass
    engine.drain()
    with engine.output_area(1024**2, user=users[-1]):  # the next job: the areas let go are removed first
        pass
    mine = docker_client.volumes.list(filters={"label": f"{OWNER}={socket.gethostname()}:{os.getpid()}"})
    held = sorted(o["o"].split(",uid=")[1].split(",mode")[0].replace(",gid=", ":")
                  for o in (v.attrs["Options"] for v in mine) if o["o"].startswith(f"size={1024**2},"))
    assert held == users[-MAX_IDLE_AREAS:]
