"""Result records on disk: the public record everyone reads, and the sealed ones beside it.

The repository is public, so a result whose phase withholds anything is written as three files:

    results/<phase>/<participant>/<id>.json         the public record (`policy.public_record`)
    results/<phase>/<participant>/<id>.sealed.age   the whole result but its logs, sealed to the
                                                    challenge's recipients and the site's publish key
    results/<phase>/<participant>/<id>.logs.age     a debugging phase's full logs, sealed to the
                                                    participant's SSH keys (from GitHub) and the organizers

Sealed files are written first and the public record last, with a rename each, so a runner killed
in between leaves the submission pending and the next run writes all three again.

The runner also keeps the whole result, in plain text, under `withheld/` of its state folder
(`build/withheld/` of its own checkout without one; never committed): so nothing is lost when a
challenge names no recipients yet (`challenge check` says so), and a site built on the runner
publishes what the phases allow without needing the publish key.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from runner.tree.model import Challenge
from runner.tree.result_model import Result, parse_result
from runner.tree.sealing import SSH_KINDS, Identity, Recipient, SealError, recipient, seal, unseal
from runner.tree.signing import SigningKey, canonical

GITHUB = "github:"
SEALED, LOGS = ".sealed.age", ".logs.age"
SEAL_BLOCK = 256  # `padded`: bytes; the most a participant who can align their record learns is about a bit


@dataclass(frozen=True)
class Keys:
    """What a store holds to seal and open results: its private keys (an organizer's, the site's
    publish key), how to read the public SSH keys GitHub publishes for a login, and whether GitHub
    has an account of that name (whose results a team of that name would be sealed to)."""

    identities: tuple[Identity, ...] = ()
    github_keys: Callable[[str], list[str]] | None = None
    github_account: Callable[[str], bool] | None = None

    def logins(self, login: str) -> list[str]:
        if self.github_keys is None:
            raise SealError(f"sealing for {GITHUB}{login} needs GitHub: give the runner GitHub access "
                            "(GITHUB_TOKEN, --api-url) or write the key itself in recipients")
        return self.github_keys(login)


def sealed_path(public: Path) -> Path:
    return public.with_name(public.name.removesuffix(".json") + SEALED)


def logs_path(public: Path) -> Path:
    return public.with_name(public.name.removesuffix(".json") + LOGS)


def recipients(challenge: Challenge, keys: Keys, *, publish: bool) -> list[Recipient]:
    """The organizers' keys (github:<login> read through GitHub), and the site's publish key."""
    found: list[Recipient] = []
    for i, text in enumerate(challenge.recipients):
        where = f"{challenge.slug}/challenge.yml: recipients[{i}]"
        if text.startswith(GITHUB):  # the kinds age seals to; an ECDSA key GitHub also publishes is left out
            found += [recipient(key, where=where) for key in keys.logins(text.removeprefix(GITHUB))
                      if key.split(" ", 1)[0] in SSH_KINDS]
        else:
            found.append(recipient(text, where=where))
    if publish and challenge.publish_key:
        found.append(recipient(challenge.publish_key, where=f"{challenge.slug}/challenge.yml: publish_key"))
    return found


def local_path(withheld: Path, root: Path, public: Path) -> Path:
    """Where the runner keeps the whole result of the public record `public` (of the tree at `root`),
    outside git: under `withheld`, its state folder's when the runner has one (a checkout that a
    workflow cleans for every job keeps nothing between jobs)."""
    return withheld / public.relative_to(root)


def signed(result: Result, key: SigningKey | None) -> Result:
    """`result` with the runner's signature of everything else in it (`tree.signing`); as it is without a key."""
    if key is None:
        return result
    # Signed as every reader reads the record back (orjson keeps integers to 64 bits, floats past them),
    # else a metric of 2**64 would fail its own verification.
    unsigned = Result.from_dict(orjson.loads(replace(result, signature=None).to_json()))
    return replace(unsigned, signature=key.sign(canonical(unsigned.document())))


def write_sealed(public: Path, result: Result, *, challenge: Challenge, keys: Keys, participants: list[str],
                 signer: SigningKey | None = None) -> None:
    """The sealed record (signed by `signer`), and the logs sealed to `participants` (GitHub logins) where
    there are logs; nothing when the challenge names nobody to seal to (the runner's local copy keeps it all)."""
    everyone = recipients(challenge, keys, publish=True)
    if not everyone:
        return
    whole = signed(result.without_logs(), signer)
    write_atomic(sealed_path(public), seal(padded(whole.to_json().encode()), everyone))
    if result.logs and (readers := log_readers(challenge, keys, participants)):
        write_atomic(logs_path(public), seal(padded(json.dumps(result.logs, indent=2).encode()), readers))


def padded(document: bytes) -> bytes:
    """A JSON document with trailing spaces up to a whole SEAL_BLOCK: a sealed file's size then tells the
    public its plaintext's length only to the block, not to the byte (a blind phase's per-case values, each
    0.0 or a long float as the ground truth has it, would show in it). Readers skip the spaces as JSON does."""
    return document + b" " * (-len(document) % SEAL_BLOCK)


def log_readers(challenge: Challenge, keys: Keys, participants: list[str]) -> list[Recipient]:
    """Who reads a debugging phase's logs: the participants (by the SSH keys GitHub publishes for their
    logins; one with none cannot) and the organizers."""
    own = [recipient(key, where=f"GitHub's keys of {login}") for login in participants
           for key in keys.logins(login) if key.split(" ", 1)[0] in SSH_KINDS]
    return own + recipients(challenge, keys, publish=False)


def read_local(withheld: Path, root: Path, public: Path) -> Result | None:
    path = local_path(withheld, root, public)
    return parse_result(path.read_bytes(), path) if path.is_file() else None


def read_sealed(public: Path, keys: Keys) -> Result | None:
    """The whole result sealed beside a public record, if one of `keys` opens it; else None."""
    path = sealed_path(public)
    if not keys.identities or not path.is_file():
        return None
    try:
        opened = unseal(path.read_bytes(), keys.identities, where=str(path))
    except SealError:
        return None
    return parse_result(opened, path)


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Through a temporary file of its own and a rename, so a reader never sees half a file (nor two
    writers' halves). `durable`: synced to disk first; a cache, which a crash only makes recomputed, is not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
