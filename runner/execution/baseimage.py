"""The Python base image that challenge images build FROM.

Real deployments pull a public base (python:3.11-slim). Where no registry answers (CI, air-gapped
runners) the same role is filled by a Debian root made offline with debootstrap from the machine's
own apt mirror, imported into Docker and tagged by the hash of its recipe, so it is built once.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import docker
import docker.errors
import requests

from runner.execution.sandbox import SandboxError

DEFAULT_BASE = "python:3.11-slim"
SUITE = "bookworm"
PACKAGES = ("python3-minimal", "python3-numpy")
ENV_BASE = "CHALLENGE_BASE_IMAGE"


def local_base_tag() -> str:
    recipe = f"{SUITE}|minbase|{','.join(PACKAGES)}"
    return f"challenge-base:{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def ensure_base(client: docker.DockerClient, preferred: str | None = None, *, log=print) -> str:
    """A base image present on this engine: the one asked for, else the public default,
    else the offline-built Debian base."""
    wanted = preferred or os.environ.get(ENV_BASE) or DEFAULT_BASE
    if _present(client, wanted) or _pulled(client, wanted):
        return wanted
    if preferred or os.environ.get(ENV_BASE):
        raise SandboxError(f"base image {wanted} is neither on this engine nor pullable")
    tag = local_base_tag()
    if not _present(client, tag):
        log(f"{wanted} cannot be pulled; building the offline base {tag} with debootstrap")
        build_offline(client, tag)
    return tag


def _present(client: docker.DockerClient, ref: str) -> bool:
    try:
        client.images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False


def _pulled(client: docker.DockerClient, ref: str) -> bool:
    try:
        client.images.pull(ref)
        return True
    except (docker.errors.APIError, requests.RequestException):
        return False


def build_offline(client: docker.DockerClient, tag: str) -> None:
    """debootstrap a minimal Debian with Python and numpy, then `docker import` it."""
    if shutil.which("debootstrap") is None:
        raise SandboxError("no registry answers and debootstrap is not installed: "
                           "install it (apt-get install debootstrap) or set CHALLENGE_BASE_IMAGE")
    if os.geteuid() != 0:
        raise SandboxError("no registry answers and building the offline base needs root (debootstrap): "
                           "run once as root or set CHALLENGE_BASE_IMAGE")
    with tempfile.TemporaryDirectory(prefix="challenge-base-") as tmp:
        root = Path(tmp) / "rootfs"
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(root), apt_mirror()]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise SandboxError(f"debootstrap failed: {tail[0]}")
        archive = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(archive), "."], check=True)
        repository, tag_name = tag.split(":")
        client.api.import_image_from_file(str(archive), repository=repository, tag=tag_name)


def apt_mirror() -> str:
    """The Debian mirror this machine's apt already uses (the only one that may answer)."""
    sources = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    for path in sources:
        text = path.read_text(errors="replace") if path.is_file() else ""
        match = re.search(r"^(?:URIs:|deb)\s+(?:\[[^\]]*\]\s+)?(\S+/debian)/?(?:\s|$)", text, re.MULTILINE)
        if match:
            return match.group(1)
    return "http://deb.debian.org/debian"
