"""Participants' image archives parsed with every read bounded and rebuilt without names: the attacks
that re-pointed the runner's own tags, header and expansion bombs, and what `docker save` really writes."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.execution.archives import EXPANSION_MAX, HEADER_MAX, BadArchive, sanitize
from tests.helpers import REPO, base_image_setting

MiB = 1024**2
def layer_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as layer:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            layer.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


LAYER = layer_of({"opt/algorithm/run.py": b"print('hello')\n"})
CONFIG = json.dumps({"rootfs": {"type": "layers", "diff_ids": ["sha256:" + "d" * 64]}}).encode()
CONFIG_SHA = hashlib.sha256(CONFIG).hexdigest()
V1 = "e" * 64


def entry(name: str, data: bytes = b"", **fields) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def tar_of(*entries: tuple[tarfile.TarInfo, bytes], format: int = tarfile.PAX_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=format) as archive:
        for info, data in entries:
            archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


def manifest(tags: list[str] | None = None, **extra) -> tuple[tarfile.TarInfo, bytes]:
    body = [{"Config": f"{CONFIG_SHA}.json", "RepoTags": tags, "Layers": [f"{V1}/layer.tar"], **extra}]
    return entry("manifest.json", json.dumps(body).encode())


def docker_layout(*more: tuple[tarfile.TarInfo, bytes], tags: list[str] | None = None) -> bytes:
    """What `docker save` wrote up to Docker 24: <v1 id>/layer.tar, <config digest>.json, manifest.json."""
    return tar_of(entry(V1, type=tarfile.DIRTYPE), entry(f"{V1}/layer.tar", LAYER), entry(f"{V1}/VERSION", b"1.0"),
                  entry(f"{CONFIG_SHA}.json", CONFIG), manifest(tags), *more)


def rebuilt(tmp_path: Path, data: bytes, *, max_bytes: int = 100 * MiB) -> dict[str, bytes]:
    (tmp_path / "sent.tar").write_bytes(data)
    image = sanitize(tmp_path / "sent.tar", tmp_path / "plain.tar", max_bytes=max_bytes)
    assert image.image_id == f"sha256:{CONFIG_SHA}" and image.layers == 1
    with tarfile.open(tmp_path / "plain.tar") as plain:
        return {member.name: plain.extractfile(member).read() for member in plain}


def refusal(tmp_path: Path, data: bytes, *, max_bytes: int = 100 * MiB) -> str:
    (tmp_path / "sent.tar").write_bytes(data)
    with pytest.raises(BadArchive) as caught:
        sanitize(tmp_path / "sent.tar", tmp_path / "plain.tar", max_bytes=max_bytes)
    assert not (tmp_path / "plain.tar").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["sent.tar"]  # nothing unpacked is left behind
    return str(caught.value)


# --- what docker save writes, rebuilt ------------------------------------------------------------------


@pytest.mark.parametrize("compress", [lambda d: d, gzip.compress, bz2.compress, lzma.compress],
                         ids=["plain", "gzip", "bzip2", "xz"])
def test_docker_layout_is_rebuilt_with_a_manifest_the_runner_writes(tmp_path, compress: Callable[[bytes], bytes]):
    tagged = docker_layout(entry("repositories", b'{"challenge-base": {"x": "' + V1.encode() + b'"}}'),
                           tags=["challenge-base:x"])
    files = rebuilt(tmp_path, compress(tagged))
    layer = hashlib.sha256(LAYER).hexdigest()
    assert files == {
        "manifest.json": json.dumps([{"Config": f"blobs/sha256/{CONFIG_SHA}", "RepoTags": [],
                                      "Layers": [f"blobs/sha256/{layer}"]}]).encode(),
        f"blobs/sha256/{CONFIG_SHA}": CONFIG, f"blobs/sha256/{layer}": LAYER}


def test_oci_layout_of_docker_25_is_rebuilt_alike(tmp_path):
    layer = hashlib.sha256(LAYER).hexdigest()
    index = {"manifests": [{"annotations": {"io.containerd.image.name": "challenge-base:x"}}]}
    body = [{"Config": f"blobs/sha256/{CONFIG_SHA}", "RepoTags": ["challenge-base:x"],
             "Layers": [f"blobs/sha256/{layer}"]}]
    files = rebuilt(tmp_path, tar_of(
        entry("blobs", type=tarfile.DIRTYPE), entry("blobs/sha256", type=tarfile.DIRTYPE),
        entry(f"blobs/sha256/{layer}", LAYER), entry(f"blobs/sha256/{CONFIG_SHA}", CONFIG),
        entry("index.json", json.dumps(index).encode()), entry("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'),
        entry("manifest.json", json.dumps(body).encode())))
    assert json.loads(files["manifest.json"])[0]["RepoTags"] == [] and "index.json" not in files


# --- refused before anything reaches the engine ------------------------------------------------------


def link_to(target: str, *, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo("manifest.json")
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize("sent, reason", [
    # The three ways a second manifest once re-pointed a tag: a climbing name, a link, a name written twice.
    (docker_layout(entry("x/../manifest.json", manifest(["victim:1"])[1])),
     "the archive holds 'x/../manifest.json', which no docker save archive holds"),
    (tar_of(entry(f"{CONFIG_SHA}.json", CONFIG), (link_to(f"{CONFIG_SHA}.json"), b"")),
     "'manifest.json' is a symbolic link; a docker save archive holds only files and folders"),
    (docker_layout(manifest(["victim:1"])), "the archive holds 'manifest.json' twice"),
    (tar_of((link_to(f"{CONFIG_SHA}.json", kind=tarfile.LNKTYPE), b"")),
     "'manifest.json' is a hard link; a docker save archive holds only files and folders"),
    (docker_layout(entry(f"./{CONFIG_SHA}.json", CONFIG)), f"the archive holds './{CONFIG_SHA}.json', which no"),
    (docker_layout(entry("/etc/cron.d/x", b"")), "the archive holds '/etc/cron.d/x', which no docker save"),
    (docker_layout(entry(f"{V1}//json", b"")), f"the archive holds '{V1}//json', which no docker save"),
    (docker_layout(entry("notes.txt", b"")), "the archive holds 'notes.txt', which no docker save archive holds"),
    (docker_layout(entry(f"{V1}/json", type=tarfile.FIFOTYPE)), f"'{V1}/json' is a FIFO"),
    (docker_layout(entry(f"{V1}/json", type=tarfile.CHRTYPE)), f"'{V1}/json' is a device"),
    (tar_of(entry(f"blobs/sha256/{'0' * 64}", b"not what its name says")), f"blobs/sha256/{'0' * 64} does not hold"),
    (tar_of(manifest()), f"manifest.json names '{CONFIG_SHA}.json' as its config, which the archive does not hold"),
    (tar_of(entry(f"{CONFIG_SHA}.json", CONFIG), entry("manifest.json", json.dumps(
        [{"Config": f"{CONFIG_SHA}.json", "Layers": []}] * 2).encode())), "the archive holds 2 images; submit exactly"),
    (tar_of(entry(f"{CONFIG_SHA}.json", CONFIG), entry("manifest.json", json.dumps(
        [{"Config": f"{CONFIG_SHA}.json", "Layers": []}]).encode())), "the image's config lists 1 layers and manifest"),
    (b"not a tarball at all" * 100, "not a docker save archive (a broken tar header"),
    (docker_layout()[:3000], "the archive ends in the middle of an entry"),
    (gzip.compress(docker_layout())[:-40], "not a docker save archive (it cannot be decompressed"),
    (tar_of(entry(f"{CONFIG_SHA}.json", CONFIG)), "holds no manifest.json: not a docker save archive"),
])
def test_what_no_docker_save_writes_is_refused_by_name(tmp_path, sent, reason):
    assert refusal(tmp_path, sent).startswith(reason)


def test_a_sparse_member_is_refused(tmp_path):
    sparse = tar_of(entry(f"{V1}/layer.tar", b"x" * 10), format=tarfile.GNU_FORMAT)
    block = bytearray(sparse[:512])
    block[156:157] = tarfile.GNUTYPE_SPARSE
    block[148:156] = b" " * 8
    block[148:155] = f"{sum(block):06o}\0".encode()
    assert refusal(tmp_path, bytes(block) + sparse[512:]).startswith(f"'{V1}/layer.tar' is a sparse file")


def with_size_field(data: bytes, field: bytes) -> bytes:
    """The first header of a tar with its 12-byte size field replaced, its checksum made right again."""
    block = bytearray(data[:512])
    block[124:136] = field
    block[148:156] = b" " * 8
    block[148:155] = f"{sum(block):06o}\0".encode()
    return bytes(block) + data[512:]


@pytest.mark.parametrize("field", [b"\xff" * 12, b"\xff" * 11 + b"\xfe"], ids=["-1", "-2"])
def test_a_negative_size_is_refused_before_any_read(tmp_path, field):
    """A base-256 size of -1 made the reader read everything at once (6 GiB resident for a 3 MB gzip)."""
    sent = with_size_field(tar_of(entry(f"{V1}/layer.tar", b"x" * 600)), field)
    assert refusal(tmp_path, gzip.compress(sent + bytes(1024 * 1024))) == (
        f"'{V1}/layer.tar' has a negative size: not a docker save archive")


@pytest.mark.parametrize("size", ["²", "9" * 5000, "-5", "12a"])
def test_a_pax_size_that_is_no_number_of_bytes_is_refused(tmp_path, size):
    header = tarfile.TarInfo(f"{V1}/layer.tar")
    header.pax_headers = {"size": size}
    data = tar_of((header, b""))
    assert refusal(tmp_path, data) == "not a docker save archive (a PAX size that is not a number of bytes)"


def pax_bomb(claimed: int, compressed_to: int) -> bytes:
    """A PAX header that says its own data is `claimed` bytes long, followed by zeros, gzip'd: Python's
    tarfile reads such a header's data whole, into memory, before any check."""
    header = tarfile.TarInfo("PaxHeaders/x")
    header.type, header.size = tarfile.XHDTYPE, claimed
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as packed:
        packed.write(header.tobuf(tarfile.USTAR_FORMAT))
        zeros = bytes(MiB)
        while out.tell() < compressed_to:
            packed.write(zeros)
    return out.getvalue()


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME])
def test_an_extended_header_is_refused_by_its_size_before_it_is_read(tmp_path, kind):
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = kind, HEADER_MAX + 1
    assert refusal(tmp_path, header.tobuf(tarfile.USTAR_FORMAT) + bytes(HEADER_MAX + 1024)) == (
        f"an extended tar header of {HEADER_MAX + 1} bytes; at most {HEADER_MAX} are accepted")


def test_a_1_mb_header_bomb_is_refused_in_little_memory(tmp_path):
    """Measured in a process of its own: the runner's whole peak while refusing a 1 MB archive whose
    header claims 5 GB (it made the runner allocate about 5 GB before)."""
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(pax_bomb(5 * 1024**3, compressed_to=MiB))
    # VmHWM: this process's own peak (ru_maxrss would keep the forking test process's, across exec).
    script = ("import re, sys; from pathlib import Path; from runner.execution.archives import sanitize, "
              "BadArchive\ntry:\n    sanitize(Path(sys.argv[1]), Path(sys.argv[2]), max_bytes=32 * 1024**3)\n"
              "except BadArchive as exc:\n    print(exc)\n"
              "print(int(re.search(r'VmHWM:\\s+(\\d+)', Path('/proc/self/status').read_text())[1]) // 1024)")
    done = subprocess.run([sys.executable, "-c", script, str(bomb), str(tmp_path / "plain.tar")], cwd=REPO,
                          capture_output=True, text=True, check=True)
    reason, peak_mib = done.stdout.splitlines()
    assert reason == f"an extended tar header of {5 * 1024**3} bytes; at most {HEADER_MAX} are accepted"
    assert int(peak_mib) < 100, f"{peak_mib} MiB"


def test_an_expansion_bomb_is_refused_as_soon_as_it_expands_too_far(tmp_path):
    """A 4 MB gzip that unpacks to 4 GB cost 4.3 GB of disk and 205 s before the engine refused it."""
    zeros = tarfile.TarInfo(f"{V1}/layer.tar")
    zeros.size = 4 * 1024**3
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as packed:
        packed.write(zeros.tobuf(tarfile.PAX_FORMAT))
        for _ in range(256 + 64):  # the free allowance and then some: refused long before 4 GB
            packed.write(bytes(MiB))
    assert refusal(tmp_path, out.getvalue(), max_bytes=32 * 1024**3).startswith(
        f"the archive unpacks to more than {EXPANSION_MAX} times its size")
    large = docker_layout(entry(f"{'f' * 64}/layer.tar", bytes(2 * MiB)))
    assert refusal(tmp_path, large, max_bytes=MiB) == "the archive unpacks to more than 1 MiB"


# --- the real engine: no tag the runner keeps ever moves ---------------------------------------------

VICTIMS = ("challenge-test/victim-eval:1", "challenge-test/victim-base:1")  # names a participant can compute


@pytest.fixture
def victims(docker_client, base_image) -> dict[str, str]:
    """Tags of images the runner keeps, as a participant reads them off the public repository."""
    for tag in VICTIMS:
        repository, _, name = tag.rpartition(":")
        docker_client.images.get(base_image).tag(repository, name)
    return {tag: base_image for tag in VICTIMS}


def saved(engine, image: str, path: Path, edit: Callable[[dict[str, bytes]], list]) -> Path:
    """`docker save` of `image`, its entries rewritten by `edit` (name -> bytes in, tar entries out)."""
    engine.save_archive(image, path.with_suffix(".orig"))
    with tarfile.open(path.with_suffix(".orig")) as source:
        files = {m.name: source.extractfile(m).read() for m in source if m.isfile()}
    path.write_bytes(tar_of(*edit(files)))
    return path


def entries(files: dict[str, bytes], **replaced: bytes) -> list:
    return [entry(name, replaced.get(name.replace(".", "_"), data)) for name, data in files.items()]


def tagged(files: dict[str, bytes], tags: list[str], **extra) -> bytes:
    document = json.loads(files["manifest.json"])
    document[0].update(RepoTags=tags, **extra)
    return json.dumps(document).encode()


VARIANTS = {
    "its own tags": lambda f: entries(f, manifest_json=tagged(f, list(VICTIMS))),
    "a second manifest through ..": lambda f: [*entries(f), entry("x/../manifest.json", tagged(f, list(VICTIMS)))],
    "a manifest that is a link": lambda f: [*entries({k: v for k, v in f.items() if k != "manifest.json"}),
                                            entry("x.json", tagged(f, list(VICTIMS))),
                                            (link_to("x.json"), b"")],
    "refused after tagging": lambda f: entries(f, manifest_json=json.dumps(
        json.loads(tagged(f, list(VICTIMS))) + [{"Config": "missing.json", "Layers": []}]).encode()),
    "the legacy repositories file": lambda f: [*entries(f), entry("repositories", json.dumps(
        {"challenge-test/victim-eval": {"1": next(n.split("/")[0] for n in f if n.endswith("/layer.tar"))}}).encode())],
    "a parent for the build cache": lambda f: entries(f, manifest_json=tagged(f, [], Parent="sha256:" + "0" * 64)),
}


@pytest.mark.docker
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_an_archive_never_moves_a_tag(engine, docker_client, tiny_image, victims, tmp_path, variant):
    """Each way an archive once re-pointed the runner's tags (then the next evaluation of everybody's
    submissions ran the attacker's image with the ground truth mounted): refused or loaded with no name."""
    archive = saved(engine, tiny_image, tmp_path / "algo.tar", VARIANTS[variant])
    try:
        loaded = engine.load_archive(archive)
    except BadArchive:
        loaded = None
    assert {tag: docker_client.images.get(tag).id for tag in victims} == victims
    if loaded is not None:
        assert loaded == tiny_image and docker_client.images.get(loaded).tags == ["challenge-test/tiny:1"]
        assert docker_client.images.get(loaded).attrs["Parent"] == ""


@pytest.mark.docker
def test_a_tag_moved_onto_a_loaded_image_is_put_back_and_the_archive_refused(engine, docker_client, tiny_image,
                                                                             victims):
    """The last line of defence, should an engine ever name an image of its own accord while loading."""
    before = engine._tags()
    docker_client.images.get(tiny_image).tag("challenge-test/victim-eval", "1")
    docker_client.images.get(tiny_image).tag("challenge-test/new-name", "1")
    with pytest.raises(BadArchive, match="named images the runner keeps "
                                         r"\(challenge-test/new-name:1, challenge-test/victim-eval:1\); put back"):
        engine._tags_kept(before, {tiny_image})
    assert {tag: docker_client.images.get(tag).id for tag in victims} == victims
    assert docker_client.images.get(tiny_image).tags == ["challenge-test/tiny:1"]


@pytest.mark.docker
def test_trusted_images_are_run_and_built_by_id_never_by_tag(engine, docker_client, base_image, tiny_image, tmp_path):
    """A tag pointed elsewhere after a build is not what the runner uses: it keeps the ID it recorded."""
    (tmp_path / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nLABEL purpose=evaluation\n")
    built = engine.build(tmp_path, name="challenge-test/trusted", base=base_image)
    tag = next(t for t in docker_client.images.get(built).tags if t.startswith("challenge-test/trusted:"))
    repository, _, name = tag.rpartition(":")
    docker_client.images.get(tiny_image).tag(repository, name, force=True)  # as an attacker once could
    assert engine.build(tmp_path, name="challenge-test/trusted", base=base_image) == built
    assert engine.ensure_base(base_image_setting()) == base_image and engine.keeper_image == base_image


def sparse_layer(apparent: int) -> bytes:
    """A layer holding one file that is all hole: a few KB of tar, `apparent` bytes once unpacked."""
    header = tarfile.TarInfo("opt/weights.bin")
    header.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "opt/weights.bin",
                          "GNU.sparse.realsize": str(apparent)}
    return tar_of((header, b""))


def archive_with_layer(layer: bytes) -> bytes:
    config = json.dumps({"rootfs": {"type": "layers", "diff_ids": ["sha256:" + "d" * 64]}}).encode()
    digest = hashlib.sha256(config).hexdigest()
    body = [{"Config": f"{digest}.json", "RepoTags": None, "Layers": [f"{V1}/layer.tar"]}]
    return tar_of(entry(f"{V1}/layer.tar", layer), entry(f"{digest}.json", config),
                  entry("manifest.json", json.dumps(body).encode()))


def test_a_layer_is_refused_by_what_it_unpacks_to(tmp_path):
    """A 20 KB archive whose layer held one sparse file made the engine write 2 GiB; one whose files add up
    past the cap is refused too, before the engine writes any of them."""
    assert refusal(tmp_path, archive_with_layer(sparse_layer(2 * 1024**3))) == (
        "a layer holds a sparse file (opt/weights.bin); an image's files are unpacked whole")
    zeros = gzip.compress(layer_of({"opt/weights.bin": bytes(5 * MiB)}))  # 5 KB sent, 5 MiB unpacked
    assert refusal(tmp_path, archive_with_layer(zeros), max_bytes=4 * MiB) == "the image unpacks to more than 4 MiB"


def test_a_layer_cannot_hide_entries_from_the_count(tmp_path):
    """A folder entry that says it carries data: Python's tarfile and Go's (the engine's) skip no data after
    a folder, so its bytes were read as entries the runner never counted (a hidden 1 GiB sparse file)."""
    folder = tarfile.TarInfo("opt")
    folder.type = tarfile.DIRTYPE
    hidden = layer_of({"weights.bin": bytes(600)})
    block = bytearray(folder.tobuf(tarfile.USTAR_FORMAT))
    sized = with_size_field(bytes(block), f"{len(hidden):011o}\0".encode())
    assert refusal(tmp_path, archive_with_layer(sized + hidden)) == (
        "opt is a folder that carries data: not a docker save archive")


def test_every_entry_of_a_layer_counts_at_least_a_block(tmp_path):
    """30,000 empty folders once counted as nothing: each entry takes a block of the engine's disk."""
    empties = layer_of({f"f{i}": b"" for i in range(300)})
    assert refusal(tmp_path, archive_with_layer(empties), max_bytes=MiB) == "the image unpacks to more than 1 MiB"
