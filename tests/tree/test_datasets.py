"""Data for participants: challenge.yml's data sets, downloaded from a local HTTP server that speaks
Range, verified and resumed; data behind terms sealed per registered participant to the SSH keys
GitHub publishes for them (made here with ssh-keygen), and opened with their private key."""

from __future__ import annotations

import hashlib
import http.server
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from pydantic import TypeAdapter

from runner.cli import main
from runner.errors import Retry
from runner.site import pages
from runner.site.build import SiteConfig
from runner.tree.datasets import DataError, Source, download, sources
from runner.tree.loading import load_challenge
from runner.tree.located import ModelError
from runner.tree.model import Dataset
from runner.tree.store import Store
from tests.github_server import OWNER_REPO
from tests.helpers import CHALLENGE
from tests.tree.test_download import tls_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.example_alone  # repo: the other demo challenges are not these tests' business

DATA = bytes(range(256)) * 4096  # 1 MiB
DIGEST = hashlib.sha256(DATA).hexdigest()
SECRET = b"gated bytes " * 1000


@dataclass
class Files:
    """What the server holds and how it misbehaves: cut the first `cuts` answers after `cut_at` bytes,
    or ignore Range headers."""

    content: dict[str, bytes] = field(default_factory=dict)
    cuts: int = 0
    cut_at: int = 0
    ignore_range: bool = False
    bare_206: bool = False  # then a range comes back as a 206 that does not say where it starts
    ranges: list[str | None] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def handler(files: Files) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            body = files.content.get(self.path)
            asked = self.headers.get("Range")
            files.ranges.append(asked)
            files.paths.append(self.path)
            if body is None:
                self.send_error(404)
                return
            start = int(asked.removeprefix("bytes=").split("-")[0]) if asked and not files.ignore_range else 0
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.end_headers()
                return
            self.send_response(206 if start else 200)
            if start and not files.bare_206:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Length", str(len(body) - start))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            rest = body[start:]
            if files.cuts:
                files.cuts -= 1
                self.wfile.write(rest[:files.cut_at])
                self.wfile.flush()
                self.connection.shutdown(2)  # the connection breaks mid-file
                return
            self.wfile.write(rest)

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[str, Files]]:
    files = Files()
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler(files)) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{httpd.server_port}", files
        httpd.shutdown()


NO_WAIT = Retry(attempts=3, first=0.0, sleep=lambda seconds: None)


def challenge_file(repo: Path) -> Path:
    return repo / "challenges" / CHALLENGE / "challenge.yml"


def add_data(repo: Path, *datasets: dict, registration: str | None = None) -> None:
    path = challenge_file(repo)
    data = yaml.safe_load(path.read_text())
    data["data"] = list(datasets)
    if registration:
        data["registration"] = registration
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def open_set(url: str, **more) -> dict:
    return {"name": "Training set", "url": f"{url}/train.bin", "size": len(DATA), "sha256": DIGEST,
            "license": "CC-BY-4.0", **more}


def gated_set(**more) -> dict:
    return {"name": "Test images", "file": "test.bin", "size": "12k", "sha256": hashlib.sha256(SECRET).hexdigest(),
            "terms": "No redistribution; cite the challenge paper.", **more}


def source_of(repo: Path) -> Source:
    found, _ = sources(Store(repo).challenge(CHALLENGE), {})
    return found[0]


# --- challenge.yml ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dataset, registration, field_, message", [
    ({**gated_set(), "url": "https://example.org/test.zip"}, "required", "data[0].url",
     "a data set behind terms must not publish its URL (the repository is public)"),
    ({k: v for k, v in open_set("http://x").items() if k != "url"}, None, "data[0].url",
     "is required (or set terms, to give the link to registered participants only)"),
    (gated_set(), None, "data[0].terms", "participants accept terms by registering: set registration: required"),
    (open_set("ftp://example.org"), None, "data[0].url", "'ftp://example.org/train.bin' is not a web address"),
    ({**open_set("https://example.org"), "url": "https://example.org/"}, None, "data[0].file",
     "is required when the URL does not end in a file name"),
])
def test_a_data_set_is_checked_where_it_is_written(repo, dataset, registration, field_, message):
    add_data(repo, dataset, registration=registration)
    with pytest.raises(ModelError) as caught:
        load_challenge(challenge_file(repo))
    assert caught.value.field == field_ and caught.value.message.startswith(message), str(caught.value)


def test_the_challenge_page_lists_the_data_sets(repo, server):
    url, _ = server
    add_data(repo, open_set(url), gated_set(), registration="required")
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    page = (config.stage / CHALLENGE / "index.md").read_text()
    section = page[page.index("## Data"):]
    assert f"| Training set | 1 MiB | CC-BY-4.0 | [download]({url}/train.bin) | `{DIGEST[:12]}…` |" in section
    assert "| Test images | 12 KiB | – | registered participants who accept the terms: No redistribution" in section
    assert f"challenge data download {CHALLENGE} --dest data/ --identity ~/.ssh/id_ed25519" in section
    gated_row = next(line for line in section.splitlines() if line.startswith("| Test images |"))
    assert "http" not in gated_row  # no link to the gated set


# --- downloads ----------------------------------------------------------------------------------------


def test_a_broken_download_resumes_where_it_broke(repo, server, tmp_path):
    url, files = server
    files.content["/train.bin"] = DATA
    files.cuts, files.cut_at = 2, 300_000
    add_data(repo, open_set(url))
    lines: list[str] = []
    path = download(source_of(repo), tmp_path / "data", retry=NO_WAIT, log=lines.append)
    assert path == tmp_path / "data" / "train.bin" and path.read_bytes() == DATA
    assert files.ranges == [None, "bytes=300000-", "bytes=600000-"]  # each try asks for the rest
    assert len(lines) == 2 and "the server closed the connection after 300000 of 1048576 bytes" in lines[0]
    assert not (tmp_path / "data" / "train.bin.part").exists()
    download(source_of(repo), tmp_path / "data", retry=NO_WAIT)  # verified already: not fetched again
    assert len(files.ranges) == 3


def test_a_download_broken_in_an_earlier_run_resumes_in_the_next(repo, server, tmp_path):
    url, files = server
    files.content["/train.bin"] = DATA
    add_data(repo, open_set(url))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.bin.part").write_bytes(DATA[:1000])
    assert download(source_of(repo), tmp_path / "data", retry=NO_WAIT).read_bytes() == DATA
    assert files.ranges == ["bytes=1000-"]


def test_a_server_that_ignores_range_sends_it_all_again(repo, server, tmp_path):
    url, files = server
    files.content["/train.bin"] = DATA
    files.ignore_range = True
    add_data(repo, open_set(url))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.bin.part").write_bytes(b"stale bytes")
    assert download(source_of(repo), tmp_path / "data", retry=NO_WAIT).read_bytes() == DATA


def test_a_part_that_does_not_say_where_it_starts_is_never_appended(repo, server, tmp_path):
    """A 206 without Content-Range was once appended to the part as if it were the rest: now the part
    starts over, and the next try asks for the whole file."""
    url, files = server
    files.content["/train.bin"] = DATA
    files.bare_206 = True
    add_data(repo, open_set(url))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.bin.part").write_bytes(DATA[:1000])
    assert download(source_of(repo), tmp_path / "data", retry=NO_WAIT).read_bytes() == DATA
    assert files.ranges == ["bytes=1000-", None]


def dataset(url: str, *, name: str = "Training set", body: bytes = DATA) -> Source:
    found = TypeAdapter(Dataset).validate_python({"name": name, "url": url, "size": len(body),
                                                  "sha256": hashlib.sha256(body).hexdigest()})
    return Source(found, url)


@pytest.mark.parametrize("name", ["../../evil", "a/b", "..", "/etc/evil"])
def test_a_name_that_is_not_a_file_name_is_never_a_path(tmp_path, name):
    """A link that ends in / (a gated data set's, from the organizer's links file) once saved the file
    under the data set's name: free text, so ../../evil wrote outside the destination."""
    with pytest.raises(DataError) as caught:
        download(dataset("https://example.org/", name=name), tmp_path / "data", retry=NO_WAIT)
    assert str(caught.value).endswith("its URL does not end in a file name and its name is not one (letters, digits, "
                                      "'-', '_', '.'); set its file: in challenge.yml")
    assert list(tmp_path.iterdir()) == []


def test_a_name_that_is_a_file_name_names_the_file(server, tmp_path):
    url, files = server
    files.content["/"] = DATA
    assert download(dataset(f"{url}/", name="train.bin"), tmp_path / "data", retry=NO_WAIT) == (
        tmp_path / "data" / "train.bin")


def test_data_sets_go_through_the_environments_proxy(server, tmp_path, monkeypatch):
    """As urllib did before the one downloader: HTTP_PROXY names the proxy (here the test server, which
    serves what it is asked for by its path), NO_PROXY the hosts reached directly."""
    url, files = server
    files.content["http://data.invalid/train.bin"] = DATA
    for name in ("http_proxy", "no_proxy", "all_proxy", "NO_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", url)
    assert download(dataset("http://data.invalid/train.bin"), tmp_path / "data", retry=NO_WAIT).read_bytes() == DATA
    assert files.paths == ["http://data.invalid/train.bin"]
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    files.content["/direct.bin"] = DATA
    assert download(dataset(f"{url}/direct.bin"), tmp_path / "direct", retry=NO_WAIT).read_bytes() == DATA


def test_data_sets_trust_the_systems_certificates(tls_server, tmp_path, monkeypatch):  # noqa: F811
    url, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert download(dataset(url, body=b"secure"), tmp_path / "data", retry=NO_WAIT).read_bytes() == b"secure"


def test_a_file_that_is_not_the_pinned_one_is_removed(repo, server, tmp_path):
    url, files = server
    files.content["/train.bin"] = DATA[:-1] + b"!"
    add_data(repo, open_set(url))
    with pytest.raises(DataError, match=r"^Training set: the download has sha256 [0-9a-f]{64}, not the "):
        download(source_of(repo), tmp_path / "data", retry=NO_WAIT)
    assert list((tmp_path / "data").iterdir()) == []


def test_an_answer_that_is_not_the_file_is_one_line(repo, server, tmp_path):
    url, _ = server
    add_data(repo, open_set(url))
    with pytest.raises(DataError, match=rf"^Training set: {url}/train.bin answered 404 Not Found$"):
        download(source_of(repo), tmp_path / "data", retry=NO_WAIT)


def test_download_command_fetches_every_open_set_and_says_what_it_skipped(repo, server, tmp_path, capsys):
    url, files = server
    files.content["/train.bin"] = DATA
    add_data(repo, open_set(url), gated_set(), registration="required")
    code = main(["--root", str(repo), "data", "download", CHALLENGE, "--dest", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert code == 1  # one data set could not be fetched
    assert (tmp_path / "d" / "train.bin").read_bytes() == DATA
    assert "ok Training set" in err and "sha256 verified" in err
    assert "skipped Test images: behind terms; registered participants open their links with --identity" in err
    assert main(["--root", str(repo), "data", "download", CHALLENGE, "--dest", str(tmp_path / "d"),
                 "--only", "Training set"]) == 0


# --- data behind terms --------------------------------------------------------------------------------


def ssh_key(folder: Path, name: str) -> tuple[Path, str]:
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)], check=True)
    return path, (folder / f"{name}.pub").read_text()


def register(repo: Path, login: str) -> None:
    path = repo / "challenges" / CHALLENGE / "registrations" / f"{login}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"name: {login.title()}\naccept_rules: true\n")


def seal(repo: Path, github, links: Path, *more: str) -> int:
    return main(["--root", str(repo), "data", "seal", CHALLENGE, "--links", str(links), "--repo", OWNER_REPO,
                 "--api-url", github.url, *more])


def test_gated_links_reach_registered_participants_alone(repo, server, github, tmp_path, capsys):
    url, files = server
    files.content["/secret/test.bin"] = SECRET
    add_data(repo, gated_set(), registration="required")
    alice_key, alice_public = ssh_key(tmp_path, "alice")
    stranger_key, _ = ssh_key(tmp_path, "stranger")
    github.ssh_keys["alice"] = [alice_public.split(" #")[0].strip()]
    github.ssh_keys["bob"] = []  # registered, but publishes no key
    register(repo, "alice")
    register(repo, "bob")
    links = tmp_path / "links.yml"  # the organizer's, never committed
    links.write_text(f"Test images: {url}/secret/test.bin\n")

    assert seal(repo, github, links) == 1  # bob could not be sealed for
    printed = capsys.readouterr()
    assert "skipped bob: GitHub publishes no ed25519 or RSA SSH key for this login" in printed.err
    access = repo / "challenges" / CHALLENGE / "data-access"
    assert sorted(p.name for p in access.iterdir()) == ["alice.age"]
    sealed = (access / "alice.age").read_bytes()
    assert sealed.startswith(b"-----BEGIN AGE ENCRYPTED FILE-----") and b"secret" not in sealed

    dest = tmp_path / "mine"
    assert main(["--root", str(repo), "data", "download", CHALLENGE, "--dest", str(dest), "--identity",
                 str(alice_key)]) == 0
    assert (dest / "test.bin").read_bytes() == SECRET
    capsys.readouterr()
    assert main(["--root", str(repo), "data", "download", CHALLENGE, "--dest", str(tmp_path / "theirs"),
                 "--identity", str(stranger_key)]) == 1
    assert "none of the 1 files in" in capsys.readouterr().err
    assert not (tmp_path / "theirs").exists()

    assert seal(repo, github, links) == 1  # alice already has hers: only bob is tried again
    assert (access / "alice.age").read_bytes() == sealed
    assert seal(repo, github, links, "--all") == 1
    assert (access / "alice.age").read_bytes() != sealed  # sealed afresh


@pytest.mark.parametrize("text, message", [
    ("Other: https://example.org/x\n", "'Other' is not a data set behind terms in challenge.yml"),
    ("{}\n", "no link for 'Test images'"),
    ("Test images: file:///etc/passwd\n", "Test images: 'file:///etc/passwd' is not a web address"),
])
def test_a_links_file_is_checked_before_anything_is_sealed(repo, github, tmp_path, capsys, text, message):
    add_data(repo, gated_set(), registration="required")
    register(repo, "alice")
    links = tmp_path / "links.yml"
    links.write_text(text)
    assert seal(repo, github, links) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {links}: {message}") and err.count("\n") == 1
    assert not (repo / "challenges" / CHALLENGE / "data-access").exists()
