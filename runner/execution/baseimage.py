"""The Python base image that challenge images build FROM: which one, and the offline fallback.

Real deployments pull a public base (python:3.11-slim). Where no registry answers (CI, air-gapped
runners) the same role is filled by a Debian root made offline with debootstrap from the machine's
own apt mirror, imported into the engine and tagged by the hash of its recipe, so it is built once.
The choice is engine-neutral: an executor passes in how it checks, pulls and imports an image.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from runner.execution.sandbox import Log, SandboxError

DEFAULT_BASE = "python:3.11-slim"
SUITE = "bookworm"
# scipy and nibabel so the evaluation kit (runner/evalkit) runs on it as it is; `python` and pip so a
# Dockerfile written for python:3.11-slim (grand-challenge's templates: `RUN python -m pip install --user`)
# builds on it with only its FROM changed.
PACKAGES = ("python3-minimal", "python3-numpy", "python3-scipy", "python3-nibabel", "python3-pip",
            "python-is-python3")
# Debian marks its Python as managed by apt (PEP 668), so pip would refuse to install; python:3.11-slim does not.
EXTERNALLY_MANAGED = "usr/lib/python3*/EXTERNALLY-MANAGED"
# What only builds code: debootstrap installs Depends, and bookworm's python3-scipy depends on pythran,
# which brings gcc, g++, boost and every -dev package (half a gigabyte no evaluation ever runs).
BUILD_ONLY = (r"^(.*-dev|cpp(-\d+)?|gcc(-\d+)?|g\+\+(-\d+)?|binutils.*|libbinutils|libctf.*|libgprofng\d+"
              r"|libjansson\d+|lib[atl]san\d+|libubsan\d+|libitm\d+|libcc1-\d+|libisl\d+|libmpc\d+|libmpfr\d+"
              r"|libc-dev-bin|rpcsvc-proto|python3-(pythran|beniget|gast|ply)|libjs-.*)$")


def local_base_tag() -> str:
    recipe = f"{SUITE}|minbase|{','.join(PACKAGES)}|no-apt-cache|purge {BUILD_ONLY}|pip unmanaged"
    return f"challenge-base:{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def wanted_base(preferred: str | None) -> str:
    """The base asked for: `preferred` (the runner's setting: --base-image or $CHALLENGE_BASE_IMAGE), else the
    public default."""
    return preferred or DEFAULT_BASE


def ensure_base(preferred: str | None, *, present: Callable[[str], bool], pull: Callable[[str], bool],
                import_rootfs: Callable[[Path, str], None], log: Log = print) -> str:
    """A base image the engine has: the one asked for, else the public default, else the
    offline-built Debian base. `present`/`pull` say whether the engine has or could fetch a
    reference; `import_rootfs(archive, tag)` turns a root filesystem tarball into an image."""
    wanted = wanted_base(preferred)
    if present(wanted) or pull(wanted):
        return wanted
    if preferred:
        raise SandboxError(f"base image {wanted} is neither on this engine nor pullable")
    tag = local_base_tag()
    if not present(tag):
        log(f"{wanted} cannot be pulled; building the offline base {tag} with debootstrap")
        build_offline(tag, import_rootfs)
    return tag


def build_offline(tag: str, import_rootfs: Callable[[Path, str], None]) -> None:
    """debootstrap a minimal Debian with Python, pip, numpy, scipy and nibabel, tar it, and hand it to the engine."""
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
        _purge_build_tools(root)
        for marker in root.glob(EXTERNALLY_MANAGED):
            marker.unlink()
        for deb in (root / "var" / "cache" / "apt" / "archives").glob("*.deb"):  # downloaded once, never needed again
            deb.unlink()
        archive = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(archive), "."], check=True)
        import_rootfs(archive, tag)


def _purge_build_tools(root: Path) -> None:
    """Remove the compilers and headers scipy's dependencies pulled in. --force-depends: pythran's
    Depends say it needs them, and nothing in the image builds code with pythran."""
    listed = subprocess.run(["chroot", str(root), "dpkg-query", "-Wf", "${Package}\\n"],
                            capture_output=True, text=True, check=True).stdout.split()
    doomed = [name for name in listed if re.match(BUILD_ONLY, name)]
    done = subprocess.run(["chroot", str(root), "dpkg", "--purge", "--force-depends", *doomed],
                          capture_output=True, text=True, check=False) if doomed else None
    if done is not None and done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SandboxError(f"removing the build tools from the offline base failed: {tail[0]}")


def apt_mirror() -> str:
    """The Debian mirror this machine's apt already uses (the only one that may answer)."""
    sources = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    for path in sources:
        text = path.read_text(errors="replace") if path.is_file() else ""
        match = re.search(r"^(?:URIs:|deb)\s+(?:\[[^\]]*\]\s+)?(\S+/debian)/?(?:\s|$)", text, re.MULTILINE)
        if match:
            return match.group(1)
    return "http://deb.debian.org/debian"
