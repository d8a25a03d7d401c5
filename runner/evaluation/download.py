"""One HTTP request of an image archive's download, run in a process of its own that the runner can stop.

Python cannot bound a blocking read in time: a socket timeout bounds each read, not the whole, so a
server that sends one header byte a minute holds its caller for ever. The runner therefore makes each
request here (`python -m runner.evaluation.download`, the request as JSON on stdin) and ends this
process at its deadline, or as soon as the part file stops growing at the pace it asks
(`archives.Pace`). The request goes to the address the runner checked, never resolved again (a name
that answers a public address first and the runner's own network next cannot send it home), asks for
the body as it is (no content coding, which would unpack past the archive's own limits), and appends
it to the part file, never past `max_bytes`. The answer is one JSON line on stdout: the status, the
redirect's target, what was received, or the error.

Standard library and urllib3 only; nothing here decides whose fault a failure is (`archives` does).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import certifi
import urllib3

CHUNK = 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
LOCATION_MAX = 8 * 1024  # a redirect's target, as much of it as any URL needs
READ_TIMEOUT_S = 3600.0  # the runner stops this process long before; only an orphan ever waits this long


def request(*, url: str, address: str, name: str, port: int | None, part: str, offset: int,
            max_bytes: int) -> dict[str, Any]:
    """GET `url` from `address` (its host's `name`, IDNA, and `port` as the runner checked them), appending
    the body to `part` (from `offset`, which a Range asks for)."""
    parts = urlsplit(url)
    host = (f"[{name}]" if ":" in name else name) + (f":{port}" if port else "")
    headers = {"Host": host, "Accept-Encoding": "identity", "User-Agent": "challenge-runner"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        response = _pool(parts.scheme, name, port, address).urlopen(
            "GET", target, headers=headers, redirect=False, retries=False, preload_content=False,
            decode_content=False)
    except urllib3.exceptions.HTTPError as exc:
        return {"error": _why(exc)}
    with response:
        answer: dict[str, Any] = {"status": response.status, "reason": _said(response.reason),
                                  "location": _said(response.headers.get("Location"), LOCATION_MAX),
                                  "length": _said(response.headers.get("Content-Length"))}
        if response.status in (200, 206):
            answer.update(_save(response, part, append=response.status == 206, max_bytes=max_bytes))
    return answer


def _pool(scheme: str, hostname: str, port: int | None, address: str) -> urllib3.HTTPConnectionPool:
    host = f"[{address}]" if ":" in address else address
    timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S)
    if scheme == "https":  # connected to the address, the certificate checked for the name
        return urllib3.HTTPSConnectionPool(host, port or 443, timeout=timeout, retries=False,
                                           server_hostname=hostname, assert_hostname=hostname,
                                           cert_reqs="CERT_REQUIRED", ca_certs=certifi.where())
    return urllib3.HTTPConnectionPool(host, port or 80, timeout=timeout, retries=False)


def _save(response: urllib3.BaseHTTPResponse, part: str, *, append: bool, max_bytes: int) -> dict[str, Any]:
    """The body as it arrives (one read at a time, so the part file shows the pace), at most `max_bytes`."""
    with open(part, "ab" if append else "wb") as out:
        start = out.tell()
        try:
            while chunk := response.read1(CHUNK):
                out.write(chunk)
                if out.tell() > max_bytes:
                    return {"too_large": True, "received": out.tell() - start}
        except urllib3.exceptions.HTTPError as exc:
            return {"error": _why(exc), "received": out.tell() - start}
        return {"received": out.tell() - start}


def _said(text: str | None, limit: int = 200) -> str | None:
    """What a server said, bounded (the runner reads this process's answer only up to a size)."""
    return None if text is None else text[:limit]


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}".rstrip(": ")


def _orphaned(parent: int) -> None:
    """Ends this process once the runner that started it is gone (killed, not only stopped): an orphan
    would go on appending to a part file the next runner resumes."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def main() -> None:
    threading.Thread(target=_orphaned, args=(os.getppid(),), daemon=True).start()
    print(json.dumps(request(**json.loads(sys.stdin.read()))), flush=True)


if __name__ == "__main__":
    main()
