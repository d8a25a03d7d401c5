"""The package's one resumable HTTP download (urllib3): image archives (`evaluation.archives`, each request
in a child process it can stop: `python -m runner.tree.download`) and data sets (`tree.datasets`, in process).

Each hop of a URL is checked and looked up once (`resolve`): http(s) only, and never a private, loopback
or link-local address unless the caller allows them (a participant's URL must not reach the runner's own
networks; an organizer's data may sit on an intranet); the request then goes to that address, never
looked up again. A request (`request`) asks for the rest of the part file with a Range, for the body as it
is (no content coding, which would unpack past the size limit), appends a 206 unless its Content-Range
starts elsewhere (else writes afresh), never past `max_bytes`, and reports progress. `fetch` follows redirects,
each checked the same way. What went wrong is a `DownloadError` of one `kind`, which each caller words
in its own errors.

Knows: urllib3, certifi, runner.errors. Must not import anything else of the package (tree and
evaluation both use it).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import certifi
import urllib3

from runner.errors import ChallengeError, printable

CHUNK = 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 3600.0  # a child's: the runner stops it long before; only an orphan ever waits this long
LOCATION_MAX = 8 * 1024  # a redirect's target, as much of it as any URL needs
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
NUMBER = re.compile(r"[0-9]{1,19}")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
Progress = Callable[[int, int | None], None]  # (bytes in the part file, its whole size if known)


class DownloadError(ChallengeError):
    """Why a download failed: `detail`, one line, and its `kind`: "address" (no valid http(s) host),
    "private" (an address the caller refused), "unknown_host", "lookup" (the resolver failed), "status"
    (an HTTP error: `status`, `reason`), "too_large", "redirects", "unreachable" (no answer) or "broken"
    (cut short: `done` of `total` bytes in the part). `url`: the hop that failed."""

    def __init__(self, kind: str, detail: str, *, url: str, transient: bool = False, status: int | None = None,
                 reason: str = "", done: int = 0, total: int | None = None):
        super().__init__(detail, transient=transient)
        self.kind, self.detail, self.url, self.status, self.reason = kind, detail, url, status, reason
        self.done, self.total = done, total


@dataclass(frozen=True)
class Target:
    """A URL checked: the address it connects to, its host's name (IDNA, ASCII) and port."""

    url: str
    address: str
    name: str
    port: int | None


Request = Callable[[Target, int], dict[str, Any]]  # (target, bytes already in the part) -> `request`'s answer


def fetch(url: str, part: Path, *, allow_private: bool, max_bytes: int | None, request: Request) -> None:
    """Download `url` into `part`, resuming what is there, following redirects; `request` makes each
    request (`request` below, or the same in a child process)."""
    for _ in range(MAX_REDIRECTS + 1):
        target = resolve(url, allow_private=allow_private)
        have = size(part)
        redirect = answered(request(target, have), target, have=have, max_bytes=max_bytes)
        if redirect is None:
            return
        url = urljoin(url, redirect)
    raise DownloadError("redirects", f"more than {MAX_REDIRECTS} redirects", url=url)


def resolve(url: str, *, allow_private: bool) -> Target:
    """Where a request for `url` goes, looked up once; a private or local address only if `allow_private`."""
    parts = urlsplit(url)
    try:
        port, name = parts.port, (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        raise DownloadError("address", f"{printable(url, 200)!r} has no valid host and port", url=url) from None
    if parts.scheme not in ("http", "https") or not name:
        raise DownloadError("address", f"{printable(url, 200)!r} is not an http:// or https:// address", url=url)
    try:
        found = socket.getaddrinfo(name, port or 443, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        if exc.errno == socket.EAI_NONAME:
            raise DownloadError("unknown_host", f"host {name} not found", url=url) from None
        raise DownloadError("lookup", f"could not look up {name} ({exc.strerror})", url=url, transient=True) from None
    addresses = [ipaddress.ip_address(info[4][0]) for info in found]
    if not allow_private and not all(public(address) for address in addresses):
        raise DownloadError("private", f"{name} is a private or local address", url=url)
    return Target(url, str(addresses[0]), name, port)


def public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether `address` is on the internet, an IPv4 address carried inside an IPv6 one (mapped,
    compatible, 6to4, Teredo, NAT64) judged as itself too."""
    if not address.is_global:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return True
    carried = [address.ipv4_mapped, address.sixtofour, address.teredo[1] if address.teredo else None]
    if address in NAT64 or address.packed[:12] == bytes(12):  # 64:ff9b::/96, and ::a.b.c.d (IPv4-compatible)
        carried.append(ipaddress.IPv4Address(address.packed[12:]))
    return all(inner is None or inner.is_global for inner in carried)


def request(target: Target, part: Path, *, offset: int, max_bytes: int | None,
            read_timeout_s: float = READ_TIMEOUT_S, progress: Progress | None = None) -> dict[str, Any]:
    """GET `target` from its checked address, the body written to `part` (appended from `offset` where the
    server sent that range). The answer, JSON-ready: status, reason, location, length, and what was
    received (`resumed`, `received`, `too_large`, `error`)."""
    parts = urlsplit(target.url)
    name, port = target.name, target.port
    host = (f"[{name}]" if ":" in name else name) + (f":{port}" if port else "")
    headers = {"Host": host, "Accept-Encoding": "identity", "User-Agent": "challenge-runner"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        response = _pool(parts.scheme, target, read_timeout_s).urlopen(
            "GET", path, headers=headers, redirect=False, retries=False, preload_content=False, decode_content=False)
    except urllib3.exceptions.HTTPError as exc:
        return {"error": _why(exc)}
    with response:
        answer: dict[str, Any] = {"status": response.status, "reason": _said(response.reason),
                                  "location": _said(response.headers.get("Location"), LOCATION_MAX),
                                  "length": _said(response.headers.get("Content-Length"))}
        if response.status in (200, 206):
            resumed = response.status == 206 and _range_start(response) in (offset, None)  # None: not said
            answer.update(_save(response, part, resumed=resumed, max_bytes=max_bytes, progress=progress,
                                length=_number(answer["length"])))
    return answer


def answered(answer: dict[str, Any], target: Target, *, have: int, max_bytes: int | None) -> str | None:
    """What an answer means: the redirect's target, None when the part is complete, else a DownloadError.
    Everything in it is the server's to say: numbers are read as ASCII digits only, text as printable."""
    url, host = target.url, urlsplit(target.url).hostname
    status, length, received = (_number(answer.get(k)) for k in ("status", "length", "received"))
    if status in REDIRECTS and isinstance(answer.get("location"), str):
        return str(answer["location"])
    if status == 416 and have:  # nothing after what we have: complete
        return None
    if status is not None and status not in (200, 206):
        reason = printable(str(answer.get("reason") or ""), 100)
        raise DownloadError("status", f"HTTP {status} ({reason}) from {host}", url=url, status=status, reason=reason)
    start = have if answer.get("resumed") is True else 0
    if answer.get("too_large") or (max_bytes is not None and length is not None and start + length > max_bytes):
        raise DownloadError("too_large", f"larger than {max_bytes} bytes", url=url)
    error = printable(str(answer.get("error") or ""), 200)
    if status is None:
        raise DownloadError("unreachable", error or "no answer", url=url, transient=True)
    if error or (length is not None and (received or 0) < length):
        raise DownloadError("broken", error or f"the connection ended after {received} of {length} bytes", url=url,
                            transient=True, done=start + (received or 0),
                            total=None if length is None else start + length)
    return None


def size(part: Path) -> int:
    try:
        return part.stat().st_size
    except FileNotFoundError:
        return 0


def _pool(scheme: str, target: Target, read_timeout_s: float) -> urllib3.HTTPConnectionPool:
    host = f"[{target.address}]" if ":" in target.address else target.address
    timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=read_timeout_s)
    if scheme == "https":  # connected to the address, the certificate checked for the name
        return urllib3.HTTPSConnectionPool(host, target.port or 443, timeout=timeout, retries=False,
                                           server_hostname=target.name, assert_hostname=target.name,
                                           cert_reqs="CERT_REQUIRED", ca_certs=certifi.where())
    return urllib3.HTTPConnectionPool(host, target.port or 80, timeout=timeout, retries=False)


def _save(response: urllib3.BaseHTTPResponse, part: Path, *, resumed: bool, max_bytes: int | None,
          progress: Progress | None, length: int | None) -> dict[str, Any]:
    """The body as it arrives (one read at a time, so the part file shows the pace), at most `max_bytes`."""
    with open(part, "ab" if resumed else "wb") as out:
        start = out.tell()
        total = None if length is None else start + length
        try:
            while chunk := response.read1(CHUNK):
                out.write(chunk)
                if max_bytes is not None and out.tell() > max_bytes:
                    return {"resumed": resumed, "too_large": True, "received": out.tell() - start}
                if progress is not None:
                    progress(out.tell(), total)
        except urllib3.exceptions.HTTPError as exc:
            return {"resumed": resumed, "error": _why(exc), "received": out.tell() - start}
        return {"resumed": resumed, "received": out.tell() - start}


def _range_start(response: urllib3.BaseHTTPResponse) -> int | None:
    """Where a 206 answer starts (Content-Range: bytes START-END/SIZE); None if it does not say, -1 if unreadable."""
    said = response.headers.get("Content-Range")
    if said is None:
        return None
    start = str(said).removeprefix("bytes ").split("-", 1)[0]
    return int(start) if NUMBER.fullmatch(start) else -1


def _number(value: object) -> int | None:
    """A count a server sent (a status, a Content-Length), as ASCII digits only."""
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    return int(text) if NUMBER.fullmatch(text) else None


def _said(text: str | None, limit: int = 200) -> str | None:
    """What a server said, bounded (a runner reads a child's answer only up to a size)."""
    return None if text is None else text[:limit]


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}".rstrip(": ")


def _orphaned(parent: int) -> None:
    """Ends a child once the runner that started it is gone (killed, not only stopped): an orphan would
    go on appending to a part file the next runner resumes."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def main() -> None:
    """A child's one request: its arguments as JSON on stdin, the answer as one JSON line on stdout."""
    threading.Thread(target=_orphaned, args=(os.getppid(),), daemon=True).start()
    ask = json.loads(sys.stdin.read())
    target = Target(ask["url"], ask["address"], ask["name"], ask["port"])
    print(json.dumps(request(target, Path(ask["part"]), offset=ask["offset"], max_bytes=ask["max_bytes"])),
          flush=True)


if __name__ == "__main__":
    main()
