"""`challenge runner`: a warm runner process that `challenge evaluate --runner SOCKET` hands its work to.

A cold `challenge evaluate` pays, besides its containers, for its own start: the imports, the
engine's connection, a keeper container for /output and its removal. A runner host that evaluates
one submission per workflow job keeps this process running instead (a systemd service beside the
Actions runner); each job's `challenge evaluate --runner SOCKET ...` sends it its arguments, working
folder and CHALLENGE_* variables, and prints what comes back (`warm_client`). The engine, its pool
of /output areas and the built evaluation images stay warm between jobs. A job runs with its client's
folder, variables and output passed to it (`common.Job`): this process's environment, working folder
and consoles stay as they are.

Jobs run one at a time, in the order they arrive. A job is exactly what `challenge evaluate` would
have done in that folder: the same options, locks, results and exit status. If this process dies
mid-job, the client says so and exits 1; the submission stays pending (a result is written whole or
not at all), and the next runner's sweep removes the containers this one left, as for any runner.
A client that goes away does not stop its job: the result is still written.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import math
import os
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol, cast

from rich.console import Console

from runner.execution.sandbox import Executor
from runner.settings import Settings

from . import summary
from .common import Job, SubParsers, UsageError, err
from .evaluate import Warm, evaluate_job, runner_executor
from .warm_client import forwarded

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

READ_TIMEOUT_S = 30.0  # a connection that sends no request, or a client that stops reading, is dropped
SWEEP_EVERY_S = 60.0  # what dead runners left is swept at the first job, then at most this often


def register(sub: SubParsers) -> None:
    r = sub.add_parser("runner", help=summary("runner"))
    r.add_argument("--socket", type=Path, required=True, help="the Unix socket to listen on (made owner-only)")
    r.set_defaults(func=cmd_runner)


def cmd_runner(args: argparse.Namespace) -> int:
    warm = WarmRunner()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # a service stop: leave the loop, close the engines
    with contextlib.closing(warm), _listening(args.socket) as server:
        err.print(f"warm runner listening on {args.socket}", markup=False)
        while True:
            connection, _ = server.accept()
            with connection:
                warm.serve(connection)


@contextlib.contextmanager
def _listening(path: Path) -> Iterator[socket.socket]:
    path = path.resolve()
    _take_over(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)  # whoever can connect runs evaluations as this user: the owner only
    try:
        server.bind(str(path))
    finally:
        os.umask(mask)
    bound = path.stat().st_ino
    server.listen(16)
    try:
        yield server
    finally:
        server.close()
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_ino == bound:  # not a newer runner's socket
                path.unlink()


def _take_over(path: Path) -> None:
    """Remove a dead runner's socket; refuse a live runner's, or any file that is not a socket."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise UsageError(f"--socket {path}: a file that is not a socket is there; name another path")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # nobody answers: a dead runner's
            return
    raise UsageError(f"--socket {path}: a warm runner already listens there")


class ExecutorFactory(Protocol):
    """What opens an executor for a set of GPUs, with its base image's ID (`runner_executor`)."""

    def __call__(self, settings: Settings, *, root: Path, gpus: tuple[str, ...],
                 log: Callable[[str], None]) -> tuple[Executor, str]: ...


class WarmRunner:
    """The engines and base images kept between jobs, one per set of GPUs and base image asked for, each
    opened by `open_executor` at the first job that asks for it."""

    def __init__(self, open_executor: ExecutorFactory = runner_executor) -> None:
        self.open_executor = open_executor
        self.executors: dict[tuple[tuple[str, ...], str | None], tuple[Executor, str]] = {}
        self.swept_at = -math.inf  # time.monotonic() of the last job that swept

    def sweep_due(self) -> bool:
        """Whether this job sweeps: a sweep is a few requests to the engine, a tenth of a do-nothing job."""
        if time.monotonic() - self.swept_at < SWEEP_EVERY_S:
            return False
        self.swept_at = time.monotonic()
        return True

    def executor(self, settings: Settings, *, root: Path, log: Callable[[str], None]) -> tuple[Executor, str]:
        key = (settings.gpus, settings.base_image)
        if key not in self.executors:
            self.executors[key] = self.open_executor(settings, root=root, gpus=settings.gpus, log=log)
        return self.executors[key]

    def serve(self, connection: socket.socket) -> None:
        """One job; whatever goes wrong with it is that job's one line and status 1, never the runner's end."""
        connection.settimeout(READ_TIMEOUT_S)
        try:
            request = _request(connection.makefile("r", encoding="utf-8").readline())
        except OSError:  # it sent nothing in time
            return
        if request is None:
            return  # not a client of ours: nothing to answer
        argv, cwd, env = request
        client = _Client(connection)
        try:
            job = Job(env={k: v for k, v in env.items() if forwarded(k)}, cwd=_folder(cwd),
                      out=_console(client, "out"), err=_console(client, "err"))
            status = self._job(argv, job)
        except Exception as exc:  # any at all: the next job must still find a runner
            client.send({"err": f"error: the warm runner could not run this job: {type(exc).__name__}: {exc}\n"})
            status = 1
        client.send({"exit": status})

    def _job(self, argv: list[str], job: Job) -> int:
        from runner.cli import guarded, parser  # the package imports this module: a cycle at import time

        try:
            args = parser(argv, parser_class=_parser_class(job)).parse_args(argv)
        except SystemExit as exc:  # argparse has printed why
            return exc.code if isinstance(exc.code, int) else 2
        if args.command != "evaluate":
            job.err.print(f"error: a warm runner runs `challenge evaluate` only, not {args.command!r}", markup=False)
            return 2
        return guarded(lambda: self._evaluate(args, job), verbose=args.verbose, err=job.err)

    def _evaluate(self, args: argparse.Namespace, job: Job) -> int:
        """`challenge evaluate` on the engine kept for its GPUs and base image (no engine yet, no base image:
        this job's error, as evaluate says it)."""
        executor, base = self.executor(job.settings(args), root=(job.cwd / args.root).resolve(), log=job.err.print)
        return evaluate_job(args, job=job, warm=Warm(executor, base, sweep_dead=self.sweep_due()))

    def close(self) -> None:
        for executor, _ in self.executors.values():
            executor.close()


def _request(line: str) -> tuple[list[str], str, dict[str, str]] | None:
    """A client's request line as (argv, cwd, env); None if it is not one."""
    try:
        request = json.loads(line)
    except ValueError:
        return None
    if not isinstance(request, dict):
        return None
    argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env", {})
    if not (isinstance(argv, list) and all(isinstance(word, str) for word in argv) and isinstance(cwd, str)
            and isinstance(env, dict) and all(isinstance(value, str) for value in env.values())):
        return None
    return argv, cwd, env


class _Client:
    """The connection a job answers on; a client that left is written to no more (its job goes on)."""

    def __init__(self, connection: socket.socket):
        self.connection, self.gone = connection, False

    def send(self, message: dict[str, str | int]) -> None:
        if self.gone:
            return
        try:
            self.connection.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            self.gone = True


class _Sink(io.TextIOBase):
    """A text stream whose writes go to the client as JSON lines under `key` (out or err)."""

    def __init__(self, client: _Client, key: str):
        self.client, self.key = client, key

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self.client.send({self.key: text})
        return len(text)


def _console(client: _Client, key: str) -> Console:
    """A console whose output goes to the client under `key` (out or err)."""
    # rich types Console.file as IO[str]; it uses only what a text stream (TextIOBase) has
    return Console(file=cast(IO[str], _Sink(client, key)), highlight=False, soft_wrap=True)


def _parser_class(job: Job) -> type[argparse.ArgumentParser]:
    """A parser that writes its usage, errors and help to `job`'s consoles, not this process's streams."""

    class JobParser(argparse.ArgumentParser):
        def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
            if message:
                (job.out if file is sys.stdout else job.err).file.write(message)

    return JobParser


def _folder(cwd: str) -> Path:
    """The client's working folder; the error os.chdir would raise where it is not one."""
    path = Path(cwd)
    if not path.is_dir():
        code = errno.ENOTDIR if path.exists() else errno.ENOENT
        raise OSError(code, os.strerror(code), cwd)
    return path
