"""The package's one downloader (`runner.tree.download`) against servers that misbehave on purpose: raw
HTTP answers from a socket on 127.0.0.1, written byte for byte, and a TLS server whose certificate only
the system's store (SSL_CERT_FILE) trusts."""

from __future__ import annotations

import http.server
import ipaddress
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.tree import download

Answers = dict[str, bytes]  # a request's path -> the whole answer, status line to body


@pytest.fixture
def raw() -> Iterator[tuple[str, Answers, list[str]]]:
    """A server that answers each path with the bytes given for it (404 otherwise), and records each
    request's head; its base URL."""
    answers: Answers = {}
    heads: list[str] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def answer(connection: socket.socket) -> None:
        with connection:
            head = b""
            while b"\r\n\r\n" not in head and (more := connection.recv(65536)):
                head += more
            heads.append(head.decode("latin-1"))
            path = head.split(b" ", 2)[1].decode("latin-1") if head.count(b" ") >= 2 else "/"
            connection.sendall(answers.get(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", answers, heads
    listener.close()


def fetcher(part: Path, **options: Any) -> Callable[[str], None]:
    """`download.fetch` into `part` as a data set calls it (private addresses allowed: the server is local)."""
    def fetch(url: str) -> None:
        download.fetch(url, part, allow_private=True, max_bytes=10**6,
                       request=lambda target, have: download.request(target, part, offset=have, max_bytes=10**6,
                                                                     read_timeout_s=5, **options))
    return fetch


def redirect(location: bytes) -> bytes:
    return b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"


@pytest.mark.parametrize("location", [b"http://[::1/x", b"http://evil\x1b[31mRED\x1b[0m.invalid/x"])
def test_a_redirect_to_a_malformed_address_is_an_address_error(raw, tmp_path, location):
    """An unclosed [ in a redirect's host once raised ValueError from urljoin, past every caller's handler."""
    url, answers, _ = raw
    answers["/x"] = redirect(location)
    with pytest.raises(download.DownloadError) as caught:
        fetcher(tmp_path / "x.part")(f"{url}/x")
    assert caught.value.kind == "address" and "\x1b" not in str(caught.value)


@pytest.mark.parametrize("url", ["http://[::1/x", "http://a\x1bb.example/x", "http://a\x00b.example/x",
                                 "https://ex ample.org/x", "http://[fe80::1/x"])
def test_a_host_that_is_neither_a_name_nor_an_address_is_refused_before_any_lookup(url):
    with pytest.raises(download.DownloadError) as caught:
        download.resolve(url, allow_private=False)
    assert caught.value.kind == "address" and caught.value.detail.isprintable()


def test_a_host_name_is_shown_printable_in_every_error(monkeypatch):
    """Names that passed the check still reach messages through `printable` (an IDNA name, here refused)."""
    def refuse(*args: object, **kwargs: object) -> list[Any]:
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure\x1b[31m")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    with pytest.raises(download.DownloadError) as caught:
        download.resolve("https://bücher.example/x", allow_private=False)
    assert caught.value.kind == "lookup" and caught.value.detail == (
        "could not look up xn--bcher-kva.example (Temporary failure\\x1b[31m)")


@pytest.mark.parametrize("address, public", [
    ("192.0.0.192", False), ("192.0.0.8", False), ("192.0.0.9", False), ("64:ff9b:1::a9fe:a9fe", False),
    ("64:ff9b:1::7f00:1", False), ("::ffff:0:7f00:1", False), ("::ffff:0:a9fe:a9fe", False), ("5f00::1", False),
    ("3fff::1", False), ("3fff:fff::1", False), ("fec0::1", False),
    ("64:ff9b:1::808:808", True), ("::ffff:0:808:808", True), ("8.8.8.8", True), ("2001:4860:4860::8888", True)])
def test_addresses_this_python_calls_global_are_refused_all_the_same(address, public):
    """Python 3.11.7's ipaddress calls these global; an explicit list, whatever the interpreter, does not."""
    assert download.public(ipaddress.ip_address(address)) is public


def test_the_oracle_metadata_address_is_private():
    with pytest.raises(download.DownloadError) as caught:
        download.resolve("http://192.0.0.192/latest", allow_private=False)
    assert caught.value.kind == "private"


def test_each_address_of_a_name_is_tried_in_turn(raw, tmp_path, monkeypatch):
    """A name with two addresses, the first of which answers nothing (127.0.0.2: no server there)."""
    url, answers, heads = raw
    port = int(url.rpartition(":")[2])
    answers["/f"] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    real = socket.getaddrinfo

    def two(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        if host == "two.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
                    for address in ("127.0.0.2", "127.0.0.1")]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", two)
    target = download.resolve(f"http://two.test:{port}/f", allow_private=True)
    assert (target.address, target.others) == ("127.0.0.2", ("127.0.0.1",))
    fetcher(tmp_path / "f.part")(f"http://two.test:{port}/f")
    assert (tmp_path / "f.part").read_bytes() == b"hello" and len(heads) == 1


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 206 Partial Content\r\nContent-Length: 5\r\n\r\nYYYYY",  # no Content-Range
    b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 3-7/20\r\nContent-Length: 5\r\n\r\nYYYYY",  # elsewhere
    b"HTTP/1.1 206 Partial Content\r\nContent-Type: multipart/byteranges; boundary=B\r\nContent-Range: bytes 5-9/20"
    b"\r\nContent-Length: 55\r\n\r\n--B\r\nContent-Range: bytes 5-9/20\r\n\r\nZZZZZ\r\n--B--\r\n",
], ids=["no range", "another range", "multipart"])
def test_a_part_that_is_not_the_one_asked_for_starts_the_file_over(raw, tmp_path, answer):
    url, answers, heads = raw
    answers["/f"] = answer
    part = tmp_path / "f.part"
    part.write_bytes(b"PPPPP")
    with pytest.raises(download.DownloadError) as caught:
        fetcher(part)(f"{url}/f")
    assert caught.value.kind == "broken" and caught.value.transient
    assert part.read_bytes() == b"" and "Range: bytes=5-" in heads[0]
    answers["/f"] = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"
    fetcher(part)(f"{url}/f")  # the next try asks for it all
    assert part.read_bytes() == b"0123456789" and "Range" not in heads[1]


def test_a_part_that_starts_where_asked_is_appended(raw, tmp_path):
    url, answers, _ = raw
    answers["/f"] = b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 5-9/10\r\nContent-Length: 5\r\n\r\n56789"
    part = tmp_path / "f.part"
    part.write_bytes(b"01234")
    fetcher(part)(f"{url}/f")
    assert part.read_bytes() == b"0123456789"


# --- TLS: certifi's roots, or the system's --------------------------------------------------------


@pytest.fixture
def tls_server(tmp_path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on 127.0.0.1 with a certificate of its own (for 127.0.0.1); its URL and the certificate."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"secure")

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) as httpd:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        yield f"https://127.0.0.1:{httpd.server_port}/f", cert
        httpd.shutdown()


def test_the_system_store_is_trusted_where_the_caller_asks(tls_server, tmp_path, monkeypatch):
    """Data sets trust the system's roots (SSL_CERT_FILE here); archives certifi's alone, as before."""
    url, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    fetcher(tmp_path / "system.part", system_trust=True)(url)
    assert (tmp_path / "system.part").read_bytes() == b"secure"
    with pytest.raises(download.DownloadError, match="CERTIFICATE_VERIFY_FAILED"):
        fetcher(tmp_path / "certifi.part")(url)


# --- proxies ------------------------------------------------------------------------------------------


def test_a_proxy_is_used_where_the_caller_asks_unless_no_proxy_exempts_the_host(raw, tmp_path, monkeypatch):
    url, answers, heads = raw
    answers["http://data.invalid/f"] = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nproxied"
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", url)
    part = tmp_path / "f.part"
    download.fetch("http://data.invalid/f", part, allow_private=True, max_bytes=None, proxied=True,
                   request=lambda target, have: download.request(target, part, offset=have, max_bytes=None))
    assert part.read_bytes() == b"proxied" and heads[0].startswith("GET http://data.invalid/f HTTP/1.1")
    assert download.resolve("http://data.invalid/f", allow_private=True, proxied=True).proxy == url
    monkeypatch.setenv("NO_PROXY", "data.invalid")
    assert download.proxy_for("http", "data.invalid", None) is None
    with pytest.raises(ValueError):
        download.resolve("http://data.invalid/f", allow_private=False, proxied=True)
