"""The runner's side of an output area's keeper (`keeper_agent`): requests on its stdin, answers read
from its stdout, both through one attached connection to the engine.

The engine frames what a container without a terminal writes: 8 bytes (the stream: 1 stdout, 2 stderr;
three zero bytes; the size, big-endian), then the bytes. Inside stdout, the agent frames its answers
(see `keeper_agent`). Whatever goes wrong on the connection (the keeper died, stopped answering, failed
itself) is `KeeperGone`; what the agent could not read of /output is the participant's, `UnsafeOutput`.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from runner.execution.outputs import UnsafeOutput

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

AGENT = (Path(__file__).with_name("keeper_agent.py")).read_text()
STDOUT = 1


class KeeperGone(Exception):
    """The keeper's connection failed, ended, or was left mid-answer: the area must be replaced."""


class KeeperChannel:
    """One keeper's attached stdin and stdout. Not thread-safe: one request at a time, and a request
    only once the last answer was read to its end (else its rest would be read as the next one's)."""

    def __init__(self, attached: object, *, timeout: float):
        # The engine's hijacked connection: a raw socket, or a file wrapping one that also keeps the HTTP
        # response alive (collected, it would close the socket).
        self.attached = attached
        # cast: docker-py is untyped; attach_socket gives a socket (over SSH or a named pipe, one with its methods).
        self.connection = cast(socket.socket, getattr(attached, "_sock", attached))
        self.connection.settimeout(timeout)
        self.frame_left = 0  # stdout bytes left in the engine's current frame
        self.stderr = b""  # the agent's last words, if it crashed (a traceback)
        self.answer: Answer | None = None  # the last one asked for
        self.failed: str | None = None  # why this channel can carry no more requests

    @property
    def usable(self) -> bool:
        return self.failed is None and (self.answer is None or self.answer.ended)

    def ask(self, request: str) -> Answer:
        if not self.usable:
            raise KeeperGone(self.failed or "the keeper's last answer was left unread")
        try:
            self.connection.sendall(request.encode() + b"\n")
        except OSError as exc:
            raise self.gone(f"the keeper did not take the request ({exc})") from None
        self.answer = Answer(self)
        return self.answer

    def gone(self, why: str) -> KeeperGone:
        self.failed = why
        return KeeperGone(why)

    def stdout(self, limit: int) -> bytes:
        """Up to `limit` bytes of the agent's stdout (at least one)."""
        while self.frame_left == 0:
            header = self._exactly(8)
            stream, size = header[0], int.from_bytes(header[4:], "big")
            if stream == STDOUT:
                self.frame_left = size
            else:  # stderr: only a crashing agent writes there
                self.stderr = (self.stderr + self._exactly(size))[-2000:]
        data = self._some(min(limit, self.frame_left))
        self.frame_left -= len(data)
        return data

    def stdout_exactly(self, size: int) -> bytes:
        return _exactly(self.stdout, size)

    def _exactly(self, size: int) -> bytes:
        return _exactly(self._some, size)

    def _some(self, limit: int) -> bytes:
        try:
            data = self.connection.recv(limit)
        except OSError as exc:  # a timeout included: a keeper that stopped answering
            raise self.gone(f"the keeper stopped answering ({exc})") from None
        if not data:
            last = self.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no reason given"]
            raise self.gone(f"the keeper ended its connection ({last[0]})")
        return data

    def close(self) -> None:
        self.failed = self.failed or "closed"
        self.connection.close()
        closing = getattr(self.attached, "close", None)
        if closing is not None:
            closing()


class Answer(io.RawIOBase):
    """One answer: its data (a tar stream) as a file, then its end frame. Reading past the end of a
    data stream whose agent could not read /output raises that, as the participant's refusal."""

    def __init__(self, channel: KeeperChannel):
        self.channel = channel
        self.data_left = 0  # bytes left in the agent's current data frame
        self.ended = False
        self.refusal = ""  # the end frame's text: why the participant's /output could not be read or emptied
        self.skipped = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        self._check()
        while self.data_left == 0 and not self.ended:
            self._next_frame()
        if self.refusal:
            raise UnsafeOutput(f"/output could not be read: {self.refusal[:300]}")
        with memoryview(buffer) as view:
            if self.ended or not len(view):
                return 0
            data = self.channel.stdout(min(len(view), self.data_left))
            view[:len(data)] = data
        self.data_left -= len(data)
        return len(data)

    def finish(self) -> str:
        """Read to the end frame (a tar's own end comes before it), so the next answer starts clean;
        the participant's refusal, if any (empty when the request was done). `skipped` counts the data
        bytes it passed over."""
        self._check()
        while not self.ended:
            if self.data_left:
                passed = len(self.channel.stdout(self.data_left))
                self.data_left -= passed
                self.skipped += passed
            else:
                self._next_frame()
        return self.refusal

    def _check(self) -> None:
        if self.channel.failed:  # an x frame, a timeout: nothing more of this answer can be trusted
            raise KeeperGone(self.channel.failed)

    def _next_frame(self) -> None:
        header = self.channel.stdout_exactly(5)
        kind, size = header[:1], int.from_bytes(header[1:], "big")
        if kind == b"d":
            self.data_left = size
            return
        text = self.channel.stdout_exactly(size).decode("utf-8", "replace")
        self.ended = True
        if kind == b"e":
            self.refusal = text
        elif kind == b"x":
            raise self.channel.gone(f"the keeper failed ({text[:300]})")
        else:
            raise self.channel.gone(f"the keeper answered a frame of unknown kind {kind!r}")


def _exactly(read: Callable[[int], bytes], size: int) -> bytes:
    """`size` bytes from `read(limit)`, which returns at least one byte a call."""
    parts: list[bytes] = []
    left = size
    while left:
        part = read(left)
        parts.append(part)
        left -= len(part)
    return b"".join(parts)
