"""Sealed records: what a public repository holds but only named people may read, encrypted with age.

A recipient is an age public key (`age1...`) or an SSH public key (`ssh-ed25519 ...`,
`ssh-rsa ...`), the keys GitHub publishes for every login at https://github.com/<login>.keys.
Sealed files are ASCII-armored age files, so `age -d -i ~/.ssh/id_ed25519 FILE` opens them
without this package.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeAlias

import pyrage
from pyrage import ssh, x25519

from runner.errors import ChallengeError

# pyrage publishes no types: to mypy these are Any, to readers they say what is meant.
Recipient: TypeAlias = "x25519.Recipient | ssh.Recipient"
Identity: TypeAlias = "x25519.Identity | ssh.Identity"
SSH_KINDS = ("ssh-ed25519", "ssh-rsa")


class SealError(ChallengeError):
    """A key that cannot be read, or a sealed file that none of the given keys opens."""


def recipient(text: str, *, where: str = "recipient") -> Recipient:
    """One recipient from its public key text; the error names `where` it was written."""
    text = text.strip()
    try:
        if text.startswith("age1"):
            return x25519.Recipient.from_str(text)
        if text.split(" ", 1)[0] in SSH_KINDS:
            return ssh.Recipient.from_str(" ".join(text.split()[:2]))
    except pyrage.RecipientError as exc:
        raise SealError(f"{where}: not a valid public key ({exc})") from None
    raise SealError(f"{where}: {text[:24]!r}... is neither an age key (age1...) nor an SSH key "
                    f"({', '.join(SSH_KINDS)})")


def identity(text: str, *, where: str = "identity") -> Identity:
    """One private key: an age identity (AGE-SECRET-KEY-1...) or an unencrypted OpenSSH private key."""
    text = text.strip()
    try:
        if text.startswith("AGE-SECRET-KEY-1"):
            return x25519.Identity.from_str(text)
        if "OPENSSH PRIVATE KEY" in text:
            return ssh.Identity.from_buffer(text.encode() + b"\n")
    except pyrage.IdentityError as exc:
        raise SealError(f"{where}: not a usable private key ({exc})") from None
    raise SealError(f"{where}: neither an age identity (AGE-SECRET-KEY-1...) nor an OpenSSH private key")


def identities(texts: Iterable[str]) -> list[Identity]:
    """Every identity in the given texts; a file may hold several age identities, one a line."""
    found: list[Identity] = []
    for text in texts:
        if "OPENSSH PRIVATE KEY" in text:
            found.append(identity(text))
        else:
            found += [identity(line) for line in text.splitlines() if line.startswith("AGE-SECRET-KEY-1")]
    return found


def read_identity_file(path: Path) -> list[Identity]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SealError(f"{path}: cannot read the key ({exc.strerror})") from None
    found = identities([text])
    if not found:
        raise SealError(f"{path}: holds no age identity or OpenSSH private key")
    return found


def seal(data: bytes, recipients: Sequence[Recipient]) -> bytes:
    """`data` encrypted to every recipient, ASCII-armored."""
    if not recipients:
        raise SealError("nobody to seal to: add organizers' keys (recipients) or the publish key")
    return bytes(pyrage.encrypt(data, list(recipients), armored=True))


def unseal(data: bytes, keys: Sequence[Identity], *, where: str) -> bytes:
    """The plaintext of a sealed file, if one of `keys` opens it."""
    try:
        return bytes(pyrage.decrypt(data, list(keys)))
    except pyrage.DecryptError as exc:
        raise SealError(f"{where}: none of the given keys opens it ({exc})") from None


def new_identity() -> tuple[str, str]:
    """A fresh age key pair: (the secret identity, its public recipient)."""
    secret = x25519.Identity.generate()
    return str(secret), str(secret.to_public())
