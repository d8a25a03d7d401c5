"""The package's one resumable HTTP download (urllib3): image archives (`evaluation.archives`, each request
in a child process it can stop, isolated, with no environment but PATH: `main`) and data sets (`tree.datasets`,
in process).

Each hop of a URL is checked and looked up once (`resolve`): http(s) only, a host that is an IP address or
a name of letters, digits, dots and hyphens, and never a private, loopback or link-local address unless
the caller allows them (a participant's URL must not reach the runner's own networks; an organizer's data
may sit on an intranet); the request then goes to those addresses, each in turn until one answers, never
looked up again. A caller that allows private addresses may ask for the environment's proxies (HTTP_PROXY,
HTTPS_PROXY, NO_PROXY), which then look the name up themselves; TLS trusts certifi's roots, or the
system's (SSL_CERT_FILE, SSL_CERT_DIR) where the caller asks. A request (`request`) asks for the rest of
the part file with a Range, for the body as it is (no content coding, which would unpack past the size
limit), appends a 206 only where its Content-Range starts at the byte asked for (a 200, or a 206 from
byte 0, writes afresh; any other part of the file empties the part, to start over), never past
`max_bytes`, and reports progress. `fetch` follows redirects, each checked the same way. What went wrong
is a `DownloadError` of one `kind`, which each caller words in its own errors.

Knows: urllib3, certifi, runner.errors. Must not import anything else of the package (tree and
evaluation both use it).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import ssl
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
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
HOST = re.compile(r"[A-Za-z0-9_.-]{1,253}")  # a host name once IDNA-encoded (and '_', which some DNS names hold)
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Never on the internet, whatever this interpreter's ipaddress says (Python 3.11.7's is_global misses
# 192.0.0.0/24, 5f00::/16 and 3fff::/20): checked besides its flags.
DENIED = tuple(ipaddress.ip_network(network) for network in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
    "224.0.0.0/4", "240.0.0.0/4",
    "::/128", "::1/128", "100::/64", "2001:db8::/32", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10",
    "fec0::/10", "ff00::/8"))
# IPv6 addresses whose last 32 bits are the IPv4 address a packet reaches: IPv4-mapped, IPv4-translated
# (SIIT), IPv4-compatible, NAT64 (the well-known prefix, and the local-use one).
CARRIERS = tuple(ipaddress.ip_network(network) for network in (
    "::ffff:0:0/96", "::ffff:0:0:0/96", "::/96", "64:ff9b::/96", "64:ff9b:1::/48"))
Progress = Callable[[int, int | None], None]  # (bytes in the part file, its whole size if known)


class DownloadError(ChallengeError):
    """Why a download failed: `detail`, one line, and its `kind`: "address" (no valid http(s) host),
    "private" (an address the caller refused), "unknown_host", "lookup" (the resolver failed), "status"
    (an HTTP error: `status`, `reason`), "too_large", "redirects", "unreachable" (no answer) or "broken"
    (cut short, or not the part asked for: `done` of `total` bytes in the part). `url`: the hop that failed."""

    def __init__(self, kind: str, detail: str, *, url: str, transient: bool = False, status: int | None = None,
                 reason: str = "", done: int = 0, total: int | None = None):
        super().__init__(detail, transient=transient)
        self.kind, self.detail, self.url, self.status, self.reason = kind, detail, url, status, reason
        self.done, self.total = done, total


@dataclass(frozen=True)
class Target:
    """A URL checked: the address it connects to (and `others` the name has, each checked too, tried in
    turn), its host's name (IDNA, ASCII) and port; or the `proxy` that connects for it."""

    url: str
    address: str
    name: str
    port: int | None
    others: tuple[str, ...] = ()
    proxy: str | None = None


Request = Callable[[Target, int], dict[str, Any]]  # (target, bytes already in the part) -> `request`'s answer


def fetch(url: str, part: Path, *, allow_private: bool, max_bytes: int | None, request: Request,
          proxied: bool = False) -> None:
    """Download `url` into `part`, resuming what is there, following redirects; `request` makes each
    request (`request` below, or the same in a child process); `proxied`: through the environment's proxies."""
    for _ in range(MAX_REDIRECTS + 1):
        target = resolve(url, allow_private=allow_private, proxied=proxied)
        have = size(part)
        redirect = answered(_first_answer(target, have, request), target, have=have, max_bytes=max_bytes)
        if redirect is None:
            return
        url = _joined(url, redirect)
    raise DownloadError("redirects", f"more than {MAX_REDIRECTS} redirects", url=url)


def resolve(url: str, *, allow_private: bool, proxied: bool = False) -> Target:
    """Where a request for `url` goes, looked up once; a private or local address only if `allow_private`.
    `proxied` (only with `allow_private`: nobody checks where a proxy connects): through the proxy the
    environment names for it, if any, which looks the name up itself."""
    if proxied and not allow_private:
        raise ValueError("a proxy connects to addresses nobody checked: proxied needs allow_private")
    scheme, name, port = _host(url)
    if proxied and (proxy := proxy_for(scheme, name, port)):
        return Target(url, name, name, port, proxy=proxy)
    addresses = _looked_up(name, port, url=url)
    if not allow_private and not all(public(address) for address in addresses):
        raise DownloadError("private", f"{printable(name, 200)} is a private or local address", url=url)
    first, *others = dict.fromkeys(str(address) for address in addresses)
    return Target(url, first, name, port, tuple(others))


def public(address: IPAddress) -> bool:
    """Whether `address` is on the internet: global by this Python's ipaddress and outside DENIED, an IPv4
    address carried inside an IPv6 one (CARRIERS, 6to4, Teredo) judged as itself too."""
    if not address.is_global or any(address in network for network in DENIED):
        return False
    return isinstance(address, ipaddress.IPv4Address) or all(public(inner) for inner in _carried(address))


def proxy_for(scheme: str, name: str, port: int | None) -> str | None:
    """The proxy the environment names for `scheme` (HTTP_PROXY, HTTPS_PROXY, as urllib reads them) unless
    NO_PROXY exempts the host; None for none."""
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(_authority(name, port)):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def request(target: Target, part: Path, *, offset: int, max_bytes: int | None,
            read_timeout_s: float = READ_TIMEOUT_S, progress: Progress | None = None,
            system_trust: bool = False) -> dict[str, Any]:
    """GET `target` from its checked address (or through its proxy), the body written to `part` (appended
    from `offset` where the server sent that range); TLS trusts certifi's roots, or the system's where
    `system_trust`. The answer, JSON-ready: status, reason, location, length, and what was received
    (`resumed`, `received`, `too_large`, `error`, `restart`)."""
    headers = {"Host": _authority(target.name, target.port), "Accept-Encoding": "identity",
               "User-Agent": "challenge-runner"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        response = _opened(target, headers, urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=read_timeout_s),
                           _trust(system_trust))
    except urllib3.exceptions.HTTPError as exc:
        return {"error": why(exc)}
    with response:
        answer: dict[str, Any] = {"status": response.status, "reason": _said(response.reason),
                                  "location": _said(response.headers.get("Location"), LOCATION_MAX),
                                  "length": _said(response.headers.get("Content-Length"))}
        if response.status in (200, 206):
            answer.update(_received(response, part, offset=offset, max_bytes=max_bytes, progress=progress,
                                    length=_number(answer["length"])))
    return answer


def answered(answer: dict[str, Any], target: Target, *, have: int, max_bytes: int | None) -> str | None:
    """What an answer means: the redirect's target, None when the part is complete, else a DownloadError.
    Everything in it is the server's to say: numbers are read as ASCII digits only, text as printable."""
    url, host = target.url, printable(target.name, 200)
    status, length, received = (_number(answer.get(k)) for k in ("status", "length", "received"))
    if status in REDIRECTS and isinstance(answer.get("location"), str):
        return str(answer["location"])
    if status == 416 and have:  # nothing after what we have: complete
        return None
    if status is not None and status not in (200, 206):
        reason = printable(str(answer.get("reason") or ""), 100)
        raise DownloadError("status", f"HTTP {status} ({reason}) from {host}", url=url, status=status, reason=reason)
    if answer.get("restart") is True:
        raise DownloadError("broken", "the server sent another part of the file than the one asked for; the "
                            "download starts over", url=url, transient=True)
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


def _first_answer(target: Target, have: int, request: Request) -> dict[str, Any]:
    """The answer of the first of the target's addresses that answers at all (each one was checked)."""
    answer: dict[str, Any] = {}
    for address in (target.address, *target.others):
        answer = request(replace(target, address=address, others=()), have)
        if answer.get("status") is not None:
            break
    return answer


def _joined(url: str, location: str) -> str:
    """A redirect's target, read against the URL that sent it."""
    try:
        return urljoin(url, location)
    except ValueError:  # an unclosed [ in its host, say
        raise DownloadError("address", f"{printable(url, 200)!r} redirects to {printable(location, 200)!r}, which "
                            "has no valid host and port", url=url) from None


def _host(url: str) -> tuple[str, str, int | None]:
    """The scheme, host (an IP address, or a name IDNA-encoded) and port of an http(s) `url`."""
    shown = printable(url, 200)
    try:
        parts = urlsplit(url)
        port, name = parts.port, _host_name(parts.hostname or "")
    except (ValueError, UnicodeError):
        raise DownloadError("address", f"{shown!r} has no valid host and port", url=url) from None
    if parts.scheme not in ("http", "https") or not name:
        raise DownloadError("address", f"{shown!r} is not an http:// or https:// address", url=url)
    return parts.scheme, name, port


def _host_name(host: str) -> str:
    """`host` as it is if an IP address, else IDNA-encoded and made of letters, digits, '.', '-', '_' alone."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    name = host.encode("idna").decode("ascii") if host else ""
    if name and not HOST.fullmatch(name):
        raise ValueError(f"not a host name: {name!r}")
    return name


def _looked_up(name: str, port: int | None, *, url: str) -> list[IPAddress]:
    shown = printable(name, 200)
    try:
        found = socket.getaddrinfo(name, port or 443, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        if exc.errno == socket.EAI_NONAME:
            raise DownloadError("unknown_host", f"host {shown} not found", url=url) from None
        raise DownloadError("lookup", f"could not look up {shown} ({printable(str(exc.strerror), 200)})", url=url,
                            transient=True) from None
    except (OSError, UnicodeError, ValueError) as exc:
        raise DownloadError("lookup", f"could not look up {shown} ({printable(why(exc), 200)})", url=url,
                            transient=True) from None
    return [ipaddress.ip_address(info[4][0]) for info in found]


def _carried(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, where a packet to it may end up."""
    carried = [address.sixtofour, address.teredo[1] if address.teredo else None]
    if any(address in network for network in CARRIERS):
        carried.append(ipaddress.IPv4Address(address.packed[12:]))
    return [inner for inner in carried if inner is not None]


def _authority(name: str, port: int | None) -> str:
    return (f"[{name}]" if ":" in name else name) + (f":{port}" if port else "")


def _trust(system: bool) -> ssl.SSLContext:
    """Verification on, with the system's roots (and SSL_CERT_FILE, SSL_CERT_DIR) or certifi's; a context
    of its own per request (urllib3 sets its hostname check)."""
    return ssl.create_default_context() if system else ssl.create_default_context(cafile=certifi.where())


def _opened(target: Target, headers: dict[str, str], timeout: urllib3.Timeout,
            context: ssl.SSLContext) -> urllib3.BaseHTTPResponse:
    parts = urlsplit(target.url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if target.proxy:
        proxy = urllib3.ProxyManager(target.proxy, proxy_headers=_proxy_headers(target.proxy), timeout=timeout,
                                     retries=False, cert_reqs="CERT_REQUIRED", ssl_context=context)
        return proxy.urlopen("GET", f"{parts.scheme}://{headers['Host']}{path}", headers=headers, redirect=False,
                             retries=False, preload_content=False, decode_content=False)
    return _pool(parts.scheme, target, timeout, context).urlopen(
        "GET", path, headers=headers, redirect=False, retries=False, preload_content=False, decode_content=False)


def _proxy_headers(proxy: str) -> dict[str, str]:
    """A proxy's credentials, where its URL holds them (http://user:password@host:port), as urllib sends them."""
    auth = urllib3.util.parse_url(proxy).auth
    return urllib3.make_headers(proxy_basic_auth=auth) if auth else {}


def _pool(scheme: str, target: Target, timeout: urllib3.Timeout,
          context: ssl.SSLContext) -> urllib3.HTTPConnectionPool:
    host = f"[{target.address}]" if ":" in target.address else target.address
    if scheme == "https":  # connected to the address, the certificate checked for the name
        return urllib3.HTTPSConnectionPool(host, target.port or 443, timeout=timeout, retries=False,
                                           server_hostname=target.name, assert_hostname=target.name,
                                           cert_reqs="CERT_REQUIRED", ssl_context=context)
    return urllib3.HTTPConnectionPool(host, target.port or 80, timeout=timeout, retries=False)


def _received(response: urllib3.BaseHTTPResponse, part: Path, *, offset: int, max_bytes: int | None,
              progress: Progress | None, length: int | None) -> dict[str, Any]:
    """A 200 or 206 answer's body in `part`: appended where it is the range asked for (its Content-Range
    starts at `offset`), written afresh where it is the file from its start (a 200, or a 206 from byte 0).
    Any other part (a 206 that starts elsewhere, does not say where, or comes in pieces) is not saved,
    and the part file is emptied, to start over."""
    if response.status == 200:
        return _save(response, part, resumed=False, max_bytes=max_bytes, progress=progress, length=length)
    start = None if _multipart(response) else _range_start(response)
    if start not in (0, offset):
        part.write_bytes(b"")
        return {"restart": True}
    return _save(response, part, resumed=start == offset, max_bytes=max_bytes, progress=progress, length=length)


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
            return {"resumed": resumed, "error": why(exc), "received": out.tell() - start}
        return {"resumed": resumed, "received": out.tell() - start}


def _multipart(response: urllib3.BaseHTTPResponse) -> bool:
    """Whether a 206 holds several ranges (multipart/byteranges), each with its own Content-Range."""
    return str(response.headers.get("Content-Type", "")).strip().lower().startswith("multipart/")


def _range_start(response: urllib3.BaseHTTPResponse) -> int | None:
    """Where a 206 answer starts (Content-Range: bytes START-END/SIZE); None if it does not say, -1 if unreadable."""
    said = response.headers.get("Content-Range")
    if said is None:
        return None
    start = str(said).strip().removeprefix("bytes ").split("-", 1)[0].strip()
    return int(start) if NUMBER.fullmatch(start) else -1


def _number(value: object) -> int | None:
    """A count a server sent (a status, a Content-Length), as ASCII digits only."""
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    return int(text) if NUMBER.fullmatch(text) else None


def _said(text: str | None, limit: int = 200) -> str | None:
    """What a server said, bounded (a runner reads a child's answer only up to a size)."""
    return None if text is None else text[:limit]


def why(exc: BaseException) -> str:
    """An exception as one short line: its type and the first line of what it says."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}".rstrip(": ")


def _orphaned(parent: int) -> None:
    """Ends a child once the runner that started it is gone (killed, not only stopped): an orphan would
    go on appending to a part file the next runner resumes."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def main() -> None:
    """A child's one request: its arguments as JSON on stdin, the answer as one JSON line on stdout. Never
    through a proxy, and certifi's roots alone, whatever the environment says."""
    threading.Thread(target=_orphaned, args=(os.getppid(),), daemon=True).start()
    ask = json.loads(sys.stdin.read())
    target = Target(ask["url"], ask["address"], ask["name"], ask["port"])
    print(json.dumps(request(target, Path(ask["part"]), offset=ask["offset"], max_bytes=ask["max_bytes"])),
          flush=True)


if __name__ == "__main__":
    main()
