"""Trusted CA certificates for the runner's builds, on hosts behind TLS inspection.

Many hospital networks re-sign every TLS connection with their own CA. The host trusts it; a build
container does not, so `pip install` inside `docker build` fails certificate verification while the
host's pip works. When the runner is given a CA bundle (the host's own, which holds that CA), each
build it runs gets it: after every FROM of the Dockerfile (a copy in the build context, never the
organizer's file) the bundle is copied in and the variables that Python's ssl, pip, requests, curl,
git and Node read point at it. COPY needs no shell, so any base takes it, `FROM scratch` included.
The images keep the bundle and the variables; containers run without a network, so nothing reads them.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

BUNDLE_NAME = ".challenge-runner-ca.pem"  # in the build context
TARGET = "/etc/ssl/certs/challenge-runner-ca.pem"  # in the image
VARIABLES = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
             "NODE_EXTRA_CA_CERTS")
MAX_BYTES = 16 * 1024**2
_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----\s+[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----")
_ESCAPE = re.compile(r"^#\s*escape\s*=\s*(\S)\s*$", re.IGNORECASE)
_FROM = re.compile(r"^\s*FROM\s", re.IGNORECASE)


class BadBundle(ValueError):
    """The file given as the builds' CA bundle is not one."""


def read_bundle(path: Path) -> bytes:
    """The PEM certificates in `path`; BadBundle, naming the file, when it holds none or cannot be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise BadBundle(f"{path}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise BadBundle(f"{path}: larger than {MAX_BYTES // 1024**2} MiB; a CA bundle is a few hundred KiB")
    found = _PEM.findall(data)
    if not found:
        raise BadBundle(f"{path}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it")
    return b"\n".join(found) + b"\n"


def fingerprint(bundle: bytes) -> str:
    """What a build's tag records of the bundle: another bundle, another image."""
    return hashlib.sha256(bundle).hexdigest()


def add_to_context(context: Path, bundle: bytes) -> None:
    """Put `bundle` into the build context at `context` (a copy the runner owns) and have every stage of
    its Dockerfile take it. A .dockerignore that leaves files out is told to keep it."""
    (context / BUNDLE_NAME).write_bytes(bundle)
    ignore = context / ".dockerignore"
    if ignore.is_file():
        ignore.write_text(ignore.read_text(errors="replace").rstrip("\n") + f"\n!{BUNDLE_NAME}\n")
    dockerfile = context / "Dockerfile"
    dockerfile.write_text(after_each_from(dockerfile.read_text()))


def after_each_from(dockerfile: str) -> str:
    """`dockerfile` with the bundle copied in and the variables set right after each FROM instruction
    (continued lines included; the escape character as its parser directive sets it)."""
    lines, escape = dockerfile.splitlines(), "\\"
    for line in lines:
        if not line.startswith("#"):
            break
        if found := _ESCAPE.match(line):
            escape = found.group(1)
    out: list[str] = []
    within: bool | None = None  # inside an instruction continued over lines: whether it is a FROM
    for line in lines:
        out.append(line)
        if within is None:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            within = _FROM.match(line) is not None
        if line.rstrip().endswith(escape):
            continue
        if within:
            out += [f"COPY {BUNDLE_NAME} {TARGET}", "ENV " + " ".join(f"{name}={TARGET}" for name in VARIABLES)]
        within = None
    return "\n".join(out) + "\n"
