"""Algorithms submitted as image archives (a `docker save` tarball at a URL, FLARE21's way), served by a
local HTTP server on 127.0.0.1: downloaded, resumed, verified, decrypted, loaded without their tags."""

from __future__ import annotations

import hashlib
import http.server
import io
import ipaddress
import json
import os
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyrage
import pytest

from runner.errors import Retry
from runner.evaluation import archives
from runner.evaluation.archives import MAX_TRIES, Pace
from runner.evaluation.job import RunnerConfig, evaluate
from runner.evaluation.queue import evaluation_image, run_jobs
from runner.execution.archives import BadArchive
from runner.tree import download
from runner.tree.located import ModelError
from runner.tree.sealing import identities, new_identity
from runner.tree.store import Store
from tests.fake_executor import FAKE_BASE, Behaviour, FakeExecutor
from tests.helpers import CHALLENGE, PHASE


class Server:
    """Serves files from a folder with HTTP Range support; can drop a download halfway, once."""

    def __init__(self, folder: Path):
        self.folder, self.requests, self.cut_once_at = folder, [], None
        self.trickle_s: float | None = None  # then it sends one byte every this many seconds (0: never one)
        self.headers_trickle_s: float | None = None  # then its status line and headers come a byte at a time
        self.answer: int | None = None  # then it answers every request with this status
        self.drip: int | None = None  # then each request gets this many more bytes, and the connection is cut
        self.seen: list[dict[str, str]] = []  # each request's headers
        self.redirect: str | None = None  # then it answers every request with a redirect there
        self.on_request: Callable[[], object] = lambda: None  # called as each request arrives
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append((self.path, self.headers.get("Range")))
                server.seen.append(dict(self.headers))
                server.on_request()
                if server.redirect is not None:
                    self.send_response(302)
                    self.send_header("Location", server.redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if server.headers_trickle_s is not None:
                    for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"x" * 10**6:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(server.headers_trickle_s)
                    return
                path = server.folder / self.path.lstrip("/")
                if server.answer is not None or not path.is_file():
                    self.send_error(server.answer or 404)
                    return
                data = path.read_bytes()
                start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
                self.send_response(206 if start else 200)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                if server.trickle_s is not None:
                    for byte in data[start:]:
                        time.sleep(server.trickle_s or 3600)
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    return
                if server.drip is not None:
                    self.wfile.write(data[start:start + server.drip])
                    self.wfile.flush()
                    self.connection.close()
                    return
                if server.cut_once_at is not None:
                    cut, server.cut_once_at = server.cut_once_at, None
                    self.wfile.write(data[start:cut])
                    self.wfile.flush()
                    self.connection.close()
                    return
                self.wfile.write(data[start:])

            def log_message(self, *args) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(tmp_path) -> Iterator[Server]:
    folder = tmp_path / "served"
    folder.mkdir()
    found = Server(folder)
    yield found
    found.close()


def submit_archive(repo: Path, participant: str, url: str, sha256: str, *, encrypted: bool = False,
                   sub_id: str = "v1") -> Path:
    path = repo / "challenges" / CHALLENGE / "submissions" / PHASE / participant / f"{sub_id}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = "  encrypted: true\n" if encrypted else ""
    path.write_text(f"phase: {PHASE}\nimage_archive:\n  url: {url}\n  sha256: '{sha256}'\n{extra}")
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tar_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


# --- the schema ----------------------------------------------------------------------------------


@pytest.mark.parametrize("body, message", [
    (f"image_archive:\n  url: ftp://x/a.tar\n  sha256: {'a' * 64}\n", "is not an https://, http:// or file://"),
    (f"image_archive:\n  url: https://x:99999/a.tar\n  sha256: {'a' * 64}\n", "has no valid host and port"),
    (f"image_archive:\n  url: https://x/a.tar\n  sha256: {'a' * 64}\nimage: ghcr.io/a/b@sha256:{'b' * 64}\n",
     "give exactly one of image, image_archive"),
    ("image_archive:\n  url: https://x/a.tar\n  sha256: abc\n", "64 lowercase hex digits"),
])
def test_the_submission_schema_takes_exactly_one_algorithm(repo, body, message):
    path = repo / "challenges" / CHALLENGE / "submissions" / PHASE / "alice" / "v1.yml"
    path.parent.mkdir(parents=True)
    path.write_text(f"phase: {PHASE}\n{body}")
    with pytest.raises(ModelError, match=message):
        Store(repo).submission(path)


# --- archives checked before loading ---------------------------------------------------------------


# --- the job logic on the fake executor ---------------------------------------------------------------

MASKS = Behaviour(files={"case-000.npy": b"m"})


@pytest.fixture
def fake_world(repo, tmp_path):
    data = tmp_path / "data"
    for sub in ("inputs", "ground-truth"):
        (data / CHALLENGE / PHASE / sub).mkdir(parents=True)
        (data / CHALLENGE / PHASE / sub / "case-000.npy").write_bytes(b"x")
    fake = FakeExecutor()
    fake.add_image(f"challenge-eval/{CHALLENGE}", Behaviour(files={"metrics.json": '{"aggregates": '
                                                                   '{"dice": {"mean": 0.9}}}'}))
    algorithm = fake.add_image("ghcr.io/alice/algo@sha256:" + "a" * 64, MASKS)
    return repo, fake, data, algorithm


def run_fake(repo: Path, fake: FakeExecutor, config: RunnerConfig, attempts: int = 3):
    store = Store(repo)
    reports = run_jobs(store.pending(), store=store, executor=fake, config=config, base=FAKE_BASE,
                       retry=Retry(attempts=attempts, sleep=lambda s: None))
    return store, reports


def test_an_archive_is_downloaded_verified_loaded_and_run_once(fake_world, server, tmp_path):
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    submit_archive(repo, "alice", f"{server.url}/algo.tar", sha(server.folder / "algo.tar"))
    config = RunnerConfig(data_root=data, allow_local_images=True, cache_dir=tmp_path / "cache")
    store, reports = run_fake(repo, fake, config)
    assert [r.status for r in reports] == ["succeeded"], reports
    result = store.results(CHALLENGE, PHASE)[0]
    assert result.algorithm.image == f"{server.url}/algo.tar" and result.algorithm.image_id == algorithm
    assert fake.loaded == [algorithm] and not list((tmp_path / "cache" / "archives").glob("*.part"))
    run_jobs(store.pending() + [store.submission(p) for p in store.submission_paths()], store=store, executor=fake,
             config=config, base=FAKE_BASE, rerun=True)
    assert len(server.requests) == 1 and fake.loaded == [algorithm]  # neither downloaded nor loaded again


def test_an_interrupted_download_resumes_where_it_stopped(fake_world, server, tmp_path):
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    server.cut_once_at = 4000
    submit_archive(repo, "alice", f"{server.url}/algo.tar", sha(server.folder / "algo.tar"))
    store, reports = run_fake(repo, fake, RunnerConfig(data_root=data, allow_local_images=True,
                                                       cache_dir=tmp_path / "cache"))
    assert [r.status for r in reports] == ["succeeded"], reports
    assert server.requests == [("/algo.tar", None), ("/algo.tar", "bytes=4000-")]
    assert store.results(CHALLENGE, PHASE)[0].attempts == 2


@pytest.mark.parametrize("case, reason", [
    ("wrong-hash", "Image archive sha256 is {digest}, but the submission pins " + "0" * 64),
    ("missing", "Image archive could not be downloaded: HTTP 404 (Not Found) from 127.0.0.1"),
    ("not-an-image", "Image archive refused: not a docker save archive"),
    ("two-images", "Image archive refused: the archive holds 2 images; submit exactly one (docker save IMAGE)"),
])
def test_a_bad_archive_is_a_failed_result_with_one_line(fake_world, server, case, reason):
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    with tarfile.open(server.folder / "algo.tar") as archive:
        manifest = json.loads(archive.extractfile("manifest.json").read())
    (server.folder / "two.tar").write_bytes(tar_of({"manifest.json": json.dumps(manifest * 2).encode()}))
    (server.folder / "junk.tar").write_bytes(b"\x00junk" * 1000)
    name = {"wrong-hash": "algo.tar", "missing": "gone.tar", "not-an-image": "junk.tar", "two-images": "two.tar"}[case]
    pinned = "0" * 64 if case in ("wrong-hash", "missing") else sha(server.folder / name)
    submit_archive(repo, "alice", f"{server.url}/{name}", pinned)
    store, _ = run_fake(repo, fake, RunnerConfig(data_root=data, allow_local_images=True))
    result = store.results(CHALLENGE, PHASE)[0]
    assert result.status == "failed" and result.error.startswith(
        reason.format(digest=sha(server.folder / "algo.tar")))
    assert fake.runs == [] and fake.loaded == []


@pytest.mark.parametrize("trickle_s", [0.2, 0], ids=["a byte at a time", "silent"])
def test_a_trickling_server_is_a_failed_result_within_the_pace(fake_world, server, tmp_path, trickle_s):
    """One byte every 20 s once held a job until the workflow's 6-hour limit, and every later job started
    it again: now the download fails the submission once it falls below the runner's pace."""
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    server.trickle_s = trickle_s
    submit_archive(repo, "alice", f"{server.url}/algo.tar", sha(server.folder / "algo.tar"))
    pace = Pace(min_rate=1024, window_s=1.0, deadline_s=5.0)
    started = time.monotonic()
    store, reports = run_fake(repo, fake, RunnerConfig(data_root=data, allow_local_images=True, download_pace=pace))
    assert time.monotonic() - started < 5
    assert [r.status for r in reports] == ["failed"]
    assert store.results(CHALLENGE, PHASE)[0].error == (
        "Image archive downloaded too slowly: this runner needs at least 1 KiB/s over every 1 s, and 5 s in all; "
        "host it where it downloads faster")


def test_headers_that_never_end_are_held_to_the_pace_too(fake_world, server):
    """A socket timeout bounds each read, not the whole: one header byte at a time once held the runner for
    as long as the server liked. The request runs in a process the runner stops."""
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    server.headers_trickle_s = 0.05
    submit_archive(repo, "alice", f"{server.url}/algo.tar", sha(server.folder / "algo.tar"))
    started = time.monotonic()
    store, _ = run_fake(repo, fake, RunnerConfig(data_root=data, allow_local_images=True,
                                                 download_pace=Pace(min_rate=1024, window_s=1.0, deadline_s=5.0)))
    assert time.monotonic() - started < 5
    assert store.results(CHALLENGE, PHASE)[0].error.startswith("Image archive downloaded too slowly")


def test_an_address_that_keeps_failing_is_a_failed_result_in_the_end(fake_world, server, tmp_path):
    """A 503 (or no answer) is the runner's to try again, never for ever: after tries without progress
    the submission fails with the last reason, and can be run again."""
    repo, fake, data, _ = fake_world
    server.answer = 503
    submit_archive(repo, "alice", f"{server.url}/algo.tar", "0" * 64)
    config = RunnerConfig(data_root=data, allow_local_images=True, cache_dir=tmp_path / "cache")
    store, reports = run_fake(repo, fake, config)
    assert reports[0].status == "error" and "HTTP 503" in reports[0].detail  # this run: left pending
    store, reports = run_fake(repo, fake, config)
    assert [r.status for r in reports] == ["failed"]
    assert store.results(CHALLENGE, PHASE)[0].error == (
        "Image archive could not be downloaded in 6 tries (the last: Image archive could not be downloaded now: "
        "HTTP 503 (Service Unavailable) from 127.0.0.1); host it where the runner can reach it")
    assert len(server.requests) == 6
    assert list((tmp_path / "cache" / "archives").glob("*.part")) == []  # a failed download leaves nothing


def test_progress_a_byte_at_a_time_still_ends_in_a_failed_result(fake_world, server, tmp_path):
    """Each try made progress, so no count of tries without progress ever grew: a server that sends a few
    more bytes per request, then cuts, kept a submission pending for ever. Tries count in all too."""
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    server.drip = 10
    submit_archive(repo, "alice", f"{server.url}/algo.tar", sha(server.folder / "algo.tar"))
    config = RunnerConfig(data_root=data, allow_local_images=True, cache_dir=tmp_path / "cache")
    statuses = [run_fake(repo, fake, config)[1][0].status for _ in range(MAX_TRIES // 3)]
    assert statuses == ["error"] * (MAX_TRIES // 3 - 1) + ["failed"]
    assert Store(repo).results(CHALLENGE, PHASE)[0].error.startswith(
        f"Image archive could not be downloaded in {MAX_TRIES} tries (the last: Image archive: the runner could not "
        f"download {server.url}/algo.tar (")
    assert [p.suffix for p in (tmp_path / "cache" / "archives").iterdir()] == [".lock"]  # no part, no ledger


def test_the_deadline_counts_every_try(fake_world, server, tmp_path):
    """Cut just before the deadline, each try started the deadline again: it is the download's, in all."""
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    server.trickle_s, server.drip = 0.01, None
    submit_archive(repo, "alice", f"{server.url}/algo.tar", sha(server.folder / "algo.tar"))
    pace = Pace(min_rate=10, window_s=0.5, deadline_s=1.5)
    config = RunnerConfig(data_root=data, allow_local_images=True, cache_dir=tmp_path / "cache", download_pace=pace)
    server.cut_once_at = None
    started = time.monotonic()
    store, reports = run_fake(repo, fake, config)
    assert [r.status for r in reports] == ["failed"] and time.monotonic() - started < 5
    assert store.results(CHALLENGE, PHASE)[0].error.startswith("Image archive downloaded too slowly")


@pytest.mark.parametrize("address, public", [
    ("8.8.8.8", True), ("2001:4860:4860::8888", True), ("127.0.0.1", False), ("::ffff:127.0.0.1", False),
    ("64:ff9b::a00:1", False), ("64:ff9b::a9fe:a9fe", False), ("2002:a9fe:a9fe::1", False), ("::7f00:1", False),
    ("64:ff9b::808:808", True), ("2002:808:808::1", True)])
def test_an_ipv4_address_inside_an_ipv6_one_is_judged_as_itself(address, public):
    assert download.public(ipaddress.ip_address(address)) is public


def test_a_try_that_ends_in_an_error_nobody_foresaw_counts_as_a_failed_try(fake_world, server, tmp_path,
                                                                            monkeypatch):
    """An error outside every handler (a malformed redirect once raised ValueError) left no mark in the
    ledger: the submission stayed pending for ever, tried again on every run. Now it counts like any."""
    repo, fake, data, _ = fake_world

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("Invalid IPv6 URL")

    monkeypatch.setattr(download, "fetch", broken)
    submit_archive(repo, "alice", f"{server.url}/algo.tar", "0" * 64)
    config = RunnerConfig(data_root=data, allow_local_images=True, cache_dir=tmp_path / "cache")
    store, reports = run_fake(repo, fake, config)
    assert reports[0].status == "error" and "the download failed (ValueError: Invalid IPv6 URL)" in reports[0].detail
    store, reports = run_fake(repo, fake, config)
    assert [r.status for r in reports] == ["failed"]
    assert store.results(CHALLENGE, PHASE)[0].error == (
        "Image archive could not be downloaded in 6 tries (the last: Image archive: the download failed (ValueError: "
        "Invalid IPv6 URL)); host it where the runner can reach it")


def test_a_redirect_to_a_malformed_address_is_the_submissions_failure(fake_world, server, tmp_path):
    repo, fake, data, _ = fake_world
    (server.folder / "away").write_text("")
    server.redirect = "http://[::1/x"
    submit_archive(repo, "alice", f"{server.url}/away", "0" * 64)
    store, reports = run_fake(repo, fake, RunnerConfig(data_root=data, allow_local_images=True))
    assert [r.status for r in reports] == ["failed"]
    assert store.results(CHALLENGE, PHASE)[0].error == (
        f"Image archive: {server.url + '/away'!r} redirects to 'http://[::1/x', which has no valid host and port")


def test_the_download_process_sees_no_secret_no_proxy_and_not_the_working_directory(server, tmp_path, monkeypatch):
    """It parses a stranger's HTTP: it gets PATH and a locale, not the runner's key or tokens, nor a proxy;
    modules in the working directory or PYTHONPATH are not imported; it still imports the package."""
    (server.folder / "algo.tar").write_bytes(b"archive bytes")
    planted = tmp_path / "planted"
    planted.mkdir()
    for module in ("json", "urllib3", "runner"):
        (planted / f"{module}.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'a').write('{module}')\n")
    monkeypatch.chdir(planted)
    monkeypatch.setenv("PYTHONPATH", str(planted))
    monkeypatch.setenv("CHALLENGE_RUNNER_KEY", "AGE-SECRET-KEY-1NOTREALLY")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_notreally")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing there: the archive must not go through it
    server.on_request = lambda: seen.extend(child_environments())
    seen: list[dict[str, str]] = []
    archives.fetch(f"{server.url}/algo.tar", tmp_path / "algo.part", max_bytes=10**6, allow_local=True)
    assert (tmp_path / "algo.part").read_bytes() == b"archive bytes"
    assert not (tmp_path / "imported").exists()
    assert len(seen) == 1 and set(seen[0]) <= {"PATH", "LANG"}, seen


def child_environments() -> list[dict[str, str]]:
    """The environment of each process this one started that runs the downloader (read from /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            parent = int((proc / "stat").read_text().rpartition(")")[2].split()[1])
            command = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and archives.DOWNLOADER.encode() in command:
            found.append(dict(line.split("=", 1) for line in environ.decode().split("\0") if "=" in line))
    return found


def test_the_download_asks_for_the_file_as_it_is_from_the_address_checked(server, tmp_path):
    """No content coding (a gzip'd body would unpack past the archive's limits), and no second look-up
    of the name (one that answers a public address first and the runner's own next)."""
    (server.folder / "algo.tar").write_bytes(b"archive bytes")
    port = server.url.rpartition(":")[2]
    target = download.Target(f"http://no-such-host.invalid:{port}/algo.tar", "127.0.0.1", "no-such-host.invalid",
                             int(port))
    answer = download.request(target, tmp_path / "algo.part", offset=0, max_bytes=10**6)
    assert answer["status"] == 200 and (tmp_path / "algo.part").read_bytes() == b"archive bytes"
    assert server.seen[0]["Host"] == f"no-such-host.invalid:{port}"
    assert server.seen[0]["Accept-Encoding"] == "identity"


def test_a_rivals_hash_with_another_url_gets_neither_their_download_nor_their_image(fake_world, server, tmp_path):
    """Parts and loaded images are kept per submission and URL: mallory pins alice's (public) sha256 with a
    junk address, before alice's download (which her junk once poisoned) and after it (when she once got
    alice's image, already loaded, run under her own name)."""
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    (server.folder / "junk.tar").write_bytes(b"junk" * 1000)
    pinned = sha(server.folder / "algo.tar")
    submit_archive(repo, "mallory", f"{server.url}/junk.tar", pinned)
    config = RunnerConfig(data_root=data, allow_local_images=True, cache_dir=tmp_path / "cache")
    store, _ = run_fake(repo, fake, config)
    submit_archive(repo, "alice", f"{server.url}/algo.tar", pinned)
    submit_archive(repo, "mallory", f"{server.url}/junk.tar", pinned, sub_id="v2")
    store, _ = run_fake(repo, fake, config)
    outcomes = {(r.participant, r.submission): (r.status, r.algorithm) for r in store.results(CHALLENGE, PHASE)}
    assert outcomes[("alice", "v1")][0] == "succeeded" and outcomes[("alice", "v1")][1].image_id == algorithm
    assert [outcomes[("mallory", sub)][0] for sub in ("v1", "v2")] == ["failed", "failed"]
    assert all(outcomes[("mallory", sub)][1] is None for sub in ("v1", "v2"))


def test_a_download_the_runners_network_cannot_make_stays_pending(fake_world, server):
    repo, fake, data, _ = fake_world
    url = f"{server.url}/algo.tar"
    server.close()  # nothing answers there any more: connection refused
    submit_archive(repo, "alice", url, "0" * 64)
    store, reports = run_fake(repo, fake, RunnerConfig(data_root=data, allow_local_images=True), attempts=2)
    assert reports[0].status == "error" and "could not download" in reports[0].detail
    assert "gave up after 2 tries (left pending)" in reports[0].detail and len(store.pending()) == 1


def test_the_runners_own_network_and_files_are_off_limits_outside_local_runs(fake_world, server, tmp_path):
    repo, fake, data, algorithm = fake_world
    fake.save_archive(algorithm, server.folder / "algo.tar")
    submit_archive(repo, "alice", f"{server.url}/algo.tar", sha(server.folder / "algo.tar"))
    submit_archive(repo, "bob", f"file://{server.folder}/algo.tar", sha(server.folder / "algo.tar"))
    store, _ = run_fake(repo, fake, RunnerConfig(data_root=data))
    errors = {r.participant: r.error for r in store.results(CHALLENGE, PHASE)}
    assert errors == {
        "alice": "Image archive: 127.0.0.1 is a private or local address; host the archive where the internet "
                 "can reach it",
        "bob": "Image archive: file:// addresses are accepted only for local runs (--allow-local-images); host it "
               "at an https:// address"}
    assert server.requests == []


def test_an_archive_encrypted_to_the_runners_key_is_opened_with_it(fake_world, server, tmp_path):
    repo, fake, data, algorithm = fake_world
    runner_secret, runner_public = new_identity()
    fake.save_archive(algorithm, tmp_path / "algo.tar")
    pyrage.encrypt_file(str(tmp_path / "algo.tar"), str(server.folder / "algo.tar.age"),
                        [pyrage.x25519.Recipient.from_str(runner_public)])
    submit_archive(repo, "alice", f"{server.url}/algo.tar.age", sha(server.folder / "algo.tar.age"), encrypted=True)

    def run(keys: list[str]) -> tuple[Store, list]:
        config = RunnerConfig(data_root=data, allow_local_images=True, runner_keys=tuple(identities(keys)))
        return run_fake(repo, fake, config, attempts=1)

    store, reports = run([])  # this runner has no key: it cannot open it now, another runner may
    assert reports[0].status == "error" and "this runner has none (--runner-key FILE or CHALLENGE_RUNNER_KEY)" in (
        reports[0].detail)
    store, _ = run([new_identity()[0]])
    [failed] = store.results(CHALLENGE, PHASE)
    assert failed.error.startswith("Image archive could not be decrypted with this runner's key")
    store.result_path(store.submission(store.submission_paths()[0])).unlink()
    store, _ = run([runner_secret])
    assert store.results(CHALLENGE, PHASE)[0].status == "succeeded" and fake.loaded == [algorithm]


# --- the real engine ---------------------------------------------------------------------------------


@pytest.mark.docker
def test_a_saved_image_at_a_url_runs_like_any_image(repo, engine, data_root, base_image, tiny_image, server,
                                                    docker_client, tmp_path):
    engine.save_archive(tiny_image, tmp_path / "tiny.tar")
    # A participant's archive naming the runner's own base image: loading it must not replace that tag.
    with tarfile.open(tmp_path / "tiny.tar") as source, tarfile.open(server.folder / "algo.tar", "w") as out:
        for member in source:
            data = source.extractfile(member).read() if member.isfile() else None
            if member.name == "manifest.json":
                manifest = json.loads(data)
                manifest[0]["RepoTags"] = [base_image if ":" in base_image else f"{base_image}:latest"]
                data = json.dumps(manifest).encode()
                member.size = len(data)
            out.addfile(member, io.BytesIO(data) if data is not None else None)
    base_before = docker_client.images.get(base_image).id
    store = Store(repo)
    submission = store.submission(submit_archive(repo, "alice", f"{server.url}/algo.tar",
                                                 sha(server.folder / "algo.tar")))
    image = evaluation_image(store.phase(CHALLENGE, PHASE), store, executor=engine, base=base_image)
    config = RunnerConfig(data_root=data_root, allow_local_images=True, cache_dir=tmp_path / "cache")
    result = evaluate(submission, store=store, executor=engine, config=config, evaluation_image=image)
    assert result.algorithm.image_id == tiny_image and result.algorithm.exit_code == 0
    assert result.error.startswith("Evaluation failed: FileNotFoundError: Expected a prediction")  # it wrote none
    assert docker_client.images.get(base_image).id == base_before


@pytest.mark.docker
def test_an_archive_the_engine_cannot_load_is_the_submissions_failure(engine, tmp_path):
    """Well formed, so it reaches the engine, which finds its layer is not the one its config names."""
    layer = tar_of({"hello.txt": b"hello"})
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "0" * 64]}}).encode()
    digest = hashlib.sha256(config).hexdigest()
    manifest = [{"Config": f"{digest}.json", "RepoTags": None, "Layers": [f"{'e' * 64}/layer.tar"]}]
    (tmp_path / "broken.tar").write_bytes(tar_of({f"{'e' * 64}/layer.tar": layer, f"{digest}.json": config,
                                                  "manifest.json": json.dumps(manifest).encode()}))
    with pytest.raises(BadArchive, match=r"the engine could not load it: .*sha256:0{64}") as caught:
        engine.load_archive(tmp_path / "broken.tar")
    assert "/var/lib/docker" not in str(caught.value)  # the runner's own paths stay on the runner
