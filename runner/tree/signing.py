"""Signed records: the runner signs each result it writes, and anyone with a clone checks the signature.

Signatures are OpenSSH signatures (the SSHSIG format of `ssh-keygen -Y sign`) made with an Ed25519 key,
and the keys that may sign are an OpenSSH allowed-signers file committed at `challenges/allowed_signers`:

    runner-gpu-1 namespaces="challenge-result",valid-after="20260101Z" ssh-ed25519 AAAAC3Nz... comment

so a reader checks a record with stock OpenSSH (`ssh-keygen -Y verify`) as well as with this package, and
a runner's key is rotated the way OpenSSH rotates one: the old line gets `valid-before`, the new one
`valid-after`. A record's signature covers its canonical JSON (`canonical`): every field but the
signature, keys sorted, no spaces, so a record read and written again by any JSON library verifies alike.

The primitives come from `cryptography` (pyca), already installed by PyGithub: OpenSSH key files and
Ed25519 in one well-kept library, fast enough to check a million records in-process (a subprocess of
ssh-keygen per record would cost milliseconds each). Only the SSHSIG framing is written here.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from runner.errors import ChallengeError

NAMESPACE = "challenge-result"  # what `ssh-keygen -Y verify -n` is given: a result signature signs nothing else
ED25519 = "ssh-ed25519"
MAGIC = b"SSHSIG"
HASH = "sha512"
ALLOWED_SIGNERS = "allowed_signers"  # under challenges/
MAX_SIGNERS_BYTES = 1024**2
ARMOR = ("-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----")


class SigningError(ChallengeError):
    """A key or an allowed-signers file that cannot be used."""


class BadSignature(Exception):
    """Why a signature does not verify (one line: it becomes a verdict, not an error)."""


def canonical(document: dict[str, Any]) -> bytes:
    """What a signature covers: the record's fields but `signature`, as compact JSON with sorted keys."""
    unsigned = {key: value for key, value in document.items() if key != "signature"}
    return json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


# --- keys ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SigningKey:
    """The runner's private key, and the public key line that lists it in allowed_signers."""

    private: Ed25519PrivateKey

    @property
    def raw_public(self) -> bytes:
        return self.private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    @property
    def public(self) -> str:
        """`ssh-ed25519 AAAA...`: the public key as OpenSSH writes it."""
        raw = self.private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                     serialization.PublicFormat.OpenSSH)
        return raw.decode("ascii")

    def sign(self, message: bytes) -> str:
        """The SSHSIG signature of `message`, base64 on one line (`armored` gives ssh-keygen's form)."""
        public = _public_blob(self.private.public_key())
        signed = self.private.sign(_signed_data(message))
        blob = (MAGIC + (1).to_bytes(4, "big") + _string(public) + _string(NAMESPACE.encode()) + _string(b"")
                + _string(HASH.encode()) + _string(_string(ED25519.encode()) + _string(signed)))
        return base64.b64encode(blob).decode("ascii")


def new_key() -> SigningKey:
    return SigningKey(Ed25519PrivateKey.generate())


def key_text(key: SigningKey) -> bytes:
    """The private key as an unencrypted OpenSSH key file (what `ssh-keygen -t ed25519 -N ''` writes)."""
    return key.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                     serialization.NoEncryption())


def read_key(text: bytes, *, where: str) -> SigningKey:
    """An unencrypted OpenSSH Ed25519 private key; SigningError names `where` it came from."""
    try:
        key = serialization.load_ssh_private_key(text, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise SigningError(f"{where}: not an unencrypted OpenSSH private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"{where}: the signing key must be Ed25519 (ssh-keygen -t ed25519), not "
                           f"{type(key).__name__.removeprefix('_').replace('PrivateKey', '')}")
    return SigningKey(key)


def load_or_create(path: Path) -> SigningKey:
    """The key in `path`, made there (mode 0600) when the file does not exist yet."""
    try:
        return read_key(path.read_bytes(), where=str(path))
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise SigningError(f"{path}: cannot read the signing key ({exc.strerror})") from None
    key = new_key()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written whole under a name of its own, then linked into place: a runner starting beside this one reads
    # either no key or the whole key, never the empty file an exclusive create shows before its write.
    fd, draft = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(key_text(key))
        os.link(draft, path)
    except FileExistsError:  # another runner process made it first: use theirs
        return read_key(path.read_bytes(), where=str(path))
    finally:
        os.unlink(draft)
    return key


def armored(signature: str) -> str:
    """A record's signature as `ssh-keygen -Y verify -s FILE` reads it."""
    text = signature.strip()
    return "\n".join([ARMOR[0], *(text[i:i + 70] for i in range(0, len(text), 70)), ARMOR[1]]) + "\n"


# --- allowed signers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Allowed:
    """One line of allowed_signers: who (`principals`), with which key, for which namespaces, and when."""

    principals: str
    key: bytes  # the raw 32-byte Ed25519 public key
    namespaces: tuple[str, ...] | None = None  # None: any
    valid_after: dt.datetime | None = None
    valid_before: dt.datetime | None = None
    line: int = 0

    @property
    def grant(self) -> tuple[object, ...]:
        """What the line allows, apart from where it stands: two files grant alike when these agree."""
        return (self.principals, self.key, self.namespaces, self.valid_after, self.valid_before)

    def valid_at(self, when: dt.datetime) -> bool:
        return ((self.valid_after is None or when >= self.valid_after)
                and (self.valid_before is None or when < self.valid_before))


@dataclass(frozen=True)
class Signers:
    """The keys that may sign results: allowed_signers as read, and where from."""

    entries: tuple[Allowed, ...] = ()
    source: str = ""
    digest: str = ""  # sha256 of the file's text: what a cache of verdicts is keyed on

    def allows(self, key: SigningKey, *, when: dt.datetime) -> bool:
        """Whether `key` may sign results at `when` (a runner checks its own key before it signs anything)."""
        return any(e.key == key.raw_public and e.valid_at(when) and (e.namespaces is None or NAMESPACE in e.namespaces)
                   for e in self.entries)

    def verify(self, document: dict[str, Any], *, when: dt.datetime) -> str:
        """The principals of the key that signed `document` (valid at `when`); BadSignature says why not."""
        signature = document.get("signature")
        if not isinstance(signature, str) or not signature:
            raise BadSignature("not signed")
        key, raw = _parse_signature(signature)
        matching = [e for e in self.entries if e.key == key]
        if not matching:
            raise BadSignature(f"signed by a key that {self.source or ALLOWED_SIGNERS} does not list")
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(raw, _signed_data(canonical(document)))
        except InvalidSignature:
            raise BadSignature("the signature does not match the record: it was changed after the runner "
                               "signed it") from None
        usable = [e for e in matching if e.namespaces is None or NAMESPACE in e.namespaces]
        if not usable:
            raise BadSignature(f"its key is not allowed to sign {NAMESPACE} (namespaces=, line "
                               f"{matching[0].line} of {self.source})")
        if not (valid := [e for e in usable if e.valid_at(when)]):
            raise BadSignature(f"signed at {when.isoformat()}, outside its key's validity (line {usable[0].line} "
                               f"of {self.source})")
        return valid[0].principals


def read_signers(path: Path) -> Signers | None:
    """allowed_signers at `path`, or None when there is none (a tree whose runners sign nothing yet)."""
    try:
        if path.is_symlink():
            raise SigningError(f"{path}: must be a regular file, not a symbolic link")
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SigningError(f"{path}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_SIGNERS_BYTES:
        raise SigningError(f"{path}: {len(data)} bytes, more than an allowed-signers file needs")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SigningError(f"{path}: not UTF-8 text") from None
    return parse_signers(text, source=str(path))


OPTION = re.compile(r'([A-Za-z-]+)(?:="([^"]*)")?')


def parse_signers(text: str, *, source: str) -> Signers:
    """OpenSSH's allowed-signers format (ssh-keygen(1), ALLOWED SIGNERS), Ed25519 keys only; times are UTC."""
    entries = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.strip(" \t\r")  # as OpenSSH does: str.strip would drop U+00A0 too, and turn a key into a comment
        if not line or line.startswith("#"):
            continue
        if not line.isascii() or not line.replace("\t", " ").isprintable():
            raise SigningError(f"{source}, line {number}: holds characters other than printable ASCII, which "
                               "OpenSSH and this reader could take differently")
        entries.append(_entry(line, number, source))
    return Signers(tuple(entries), source, hashlib.sha256(text.encode()).hexdigest())


def signers_line(principal: str, key: SigningKey, *, valid_after: dt.datetime | None = None) -> str:
    """The allowed_signers line that lets `key` sign results as `principal`."""
    options = f'namespaces="{NAMESPACE}"'
    if valid_after is not None:
        options += f',valid-after="{valid_after.strftime("%Y%m%d%H%M%S")}Z"'
    return f"{principal} {options} {key.public}"


def _entry(line: str, number: int, source: str) -> Allowed:
    where = f"{source}, line {number}"
    principals, rest = _field(line)  # fields part at spaces or tabs, as OpenSSH reads them
    options: dict[str, str | None] = {}
    if not rest.startswith(("ssh-", "ecdsa-", "sk-")):
        text, _, rest = _options(rest)
        for item in _split_options(text, where):
            match = OPTION.fullmatch(item)
            if match is None:
                raise SigningError(f"{where}: cannot read the option {item!r}")
            options[match[1].lower()] = match[2]
        rest = rest.strip(" \t")
    unknown = set(options) - {"namespaces", "valid-after", "valid-before"}
    if unknown:
        raise SigningError(f"{where}: option {sorted(unknown)[0]!r} is not supported (namespaces, valid-after and "
                           "valid-before are)")
    if bare := [name for name, value in options.items() if value is None]:
        raise SigningError(f"{where}: option {bare[0]!r} needs a value (name=\"...\")")
    after, before = _time(options.get("valid-after"), where), _time(options.get("valid-before"), where)
    kind, rest = _field(rest)
    if kind != ED25519:
        raise SigningError(f"{where}: {kind!r} keys are not accepted; runners sign with {ED25519} keys")
    try:
        key = _key_from_blob(base64.b64decode(rest.split()[0] if rest.split() else "", validate=True))
    except (binascii.Error, ValueError):
        raise SigningError(f"{where}: the {ED25519} key is not valid base64 of a public key") from None
    namespaces = options.get("namespaces")
    return Allowed(principals=principals, key=key, line=number, valid_after=after, valid_before=before,
                   namespaces=tuple(n.strip() for n in namespaces.split(",")) if namespaces is not None else None)


def _field(text: str) -> tuple[str, str]:
    """The first field of `text` and the rest, split at the first run of spaces and tabs."""
    first, *rest = re.split(r"[ \t]+", text.strip(" \t"), maxsplit=1)
    return first, rest[0] if rest else ""


def _options(text: str) -> tuple[str, str, str]:
    """Split `options rest` at the first space or tab outside quotes."""
    quoted = False
    for i, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char in " \t" and not quoted:
            return text[:i], char, text[i + 1:]
    return text, "", ""


def _split_options(text: str, where: str) -> list[str]:
    items, current, quoted = [], "", False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            items.append(current)
            current = ""
        else:
            current += char
    if quoted:
        raise SigningError(f"{where}: an option's quote is not closed")
    return [*items, current]


def _time(text: str | None, where: str) -> dt.datetime | None:
    if text is None:
        return None
    digits = text.removesuffix("Z").removesuffix("z")
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if len(digits) not in formats or not digits.isdigit():
        raise SigningError(f"{where}: {text!r} is not a time as YYYYMMDD[HHMM[SS]][Z]")
    try:
        return dt.datetime.strptime(digits, formats[len(digits)]).replace(tzinfo=dt.UTC)
    except ValueError:
        raise SigningError(f"{where}: {text!r} is not a real date") from None


# --- the SSHSIG format (OpenSSH's PROTOCOL.sshsig) -----------------------------------------------------


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _signed_data(message: bytes) -> bytes:
    digest = hashlib.sha512(message).digest()
    return MAGIC + _string(NAMESPACE.encode()) + _string(b"") + _string(HASH.encode()) + _string(digest)


def _public_blob(key: Ed25519PublicKey) -> bytes:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return _string(ED25519.encode()) + _string(raw)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, count: int) -> bytes:
        if self.at + count > len(self.data):
            raise BadSignature("the signature is truncated")
        chunk = self.data[self.at:self.at + count]
        self.at += count
        return chunk

    def string(self) -> bytes:
        return self.take(int.from_bytes(self.take(4), "big"))


def _key_from_blob(blob: bytes) -> bytes:
    reader = _Reader(blob)
    try:
        kind, key = reader.string(), reader.string()
    except BadSignature:
        raise ValueError("truncated key") from None
    if kind != ED25519.encode() or len(key) != 32 or reader.at != len(blob):
        raise ValueError("not an Ed25519 key")
    return key


def _parse_signature(text: str) -> tuple[bytes, bytes]:
    """(the signer's raw public key, the raw signature) of an SSHSIG blob made for results."""
    body = "".join(line for line in text.strip().splitlines() if not line.startswith("-----"))
    try:
        reader = _Reader(base64.b64decode(body, validate=True))
    except binascii.Error:
        raise BadSignature("the signature is not base64") from None
    if reader.take(6) != MAGIC or int.from_bytes(reader.take(4), "big") != 1:
        raise BadSignature("not an SSH signature (SSHSIG version 1)")
    try:
        key = _key_from_blob(reader.string())
    except ValueError:
        raise BadSignature("the signature's key is not an Ed25519 key") from None
    namespace, _reserved, hash_name = reader.string(), reader.string(), reader.string()
    if namespace != NAMESPACE.encode():
        raise BadSignature(f"the signature was made for {namespace.decode(errors='replace')!r}, not {NAMESPACE!r}")
    if hash_name != HASH.encode():
        raise BadSignature(f"the signature hashes with {hash_name.decode(errors='replace')!r}, not {HASH}")
    inner = _Reader(reader.string())
    if inner.string() != ED25519.encode():
        raise BadSignature("the signature is not an Ed25519 signature")
    raw = inner.string()
    if len(raw) != 64 or reader.at != len(reader.data):
        raise BadSignature("the signature is malformed")
    return key, raw
