"""Organizers' keys: `challenge keys new`, `challenge unseal`, `challenge reseal`, `challenge logs`.

What a phase withholds is committed sealed (runner/tree/records.py). These commands make the
site's publish key, open a sealed result or a debugging phase's logs with one's own key, and seal
every result again after the recipients changed or a key rotated.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import socket
from pathlib import Path

from runner.settings import STATE_ENV, Settings, variable
from runner.tree.records import (
    LOGS,
    SEALED,
    Keys,
    log_readers,
    logs_path,
    padded,
    recipients,
    sealed_path,
    write_atomic,
)
from runner.tree.sealing import identities, new_identity, read_identity_file, seal, unseal
from runner.tree.signing import (
    MAX_SIGNERS_BYTES,
    Signers,
    SigningKey,
    load_or_create,
    parse_signers,
    read_key,
    read_signers,
    signers_line,
)
from runner.tree.store import Store
from runner.tree.verification import Verifier, signers_path

from . import summary
from .common import SubParsers, UsageError, err, open_store, out, settings_here

ENV_PUBLISH_KEY = variable("publish_key")
ENV_SIGNING_KEY = variable("signing_key")
ENV_ALLOWED_SIGNERS = variable("allowed_signers")
SIGNING_KEY_FILE = "signing_key"
RECORD = "the result's public record, results/<phase>/<participant>/<id>.json"


def register(sub: SubParsers) -> None:
    keys = sub.add_parser("keys", help=summary("keys"))
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    new = keys_sub.add_parser("new", help="make a publish key: print its secret (for the Actions secret) and its "
                                          "public key (for challenge.yml)")
    new.set_defaults(func=cmd_keys_new)
    signing = keys_sub.add_parser("runner", help="this runner's signing key: make it if needed and print the "
                                                 "allowed_signers line that lists it")
    signing.add_argument("--name", type=principal, default=socket.gethostname() or "runner",
                         help="the principal it signs as (default: this host's name)")
    signing.set_defaults(func=cmd_keys_runner)
    unseal_p = sub.add_parser("unseal", help=summary("unseal"))
    unseal_p.add_argument("result", type=Path, help=RECORD)
    _identity(unseal_p)
    unseal_p.set_defaults(func=cmd_unseal)
    logs = sub.add_parser("logs", help=summary("logs"))
    logs.add_argument("result", type=Path, help=RECORD)
    _identity(logs, default=Path.home() / ".ssh" / "id_ed25519")
    logs.set_defaults(func=cmd_logs)
    reseal = sub.add_parser("reseal", help=summary("reseal"))
    reseal.add_argument("--challenge", help="only this challenge")
    _identity(reseal)
    reseal.set_defaults(func=cmd_reseal)


def _identity(parser: argparse.ArgumentParser, default: Path | None = None) -> None:
    parser.add_argument("--identity", "-i", type=Path, default=default, required=default is None,
                        help="a file with your private key: an age identity or an OpenSSH private key")


def runner_keys(settings: Settings) -> Keys:
    """What the runner seals with: GitHub's public SSH keys of participants and github:<login>
    recipients, read through the API (with Actions' GITHUB_TOKEN and GITHUB_API_URL when set)."""
    return Keys(github_keys=functools.partial(_github_keys, settings),
                github_account=functools.partial(_github_account, settings))


def _github_keys(settings: Settings, login: str) -> list[str]:
    from runner.pullrequests.github import API_URL, GitHub  # PyGithub only for runs that seal

    return GitHub("", token=settings.github_token, api_url=settings.github_api_url or API_URL).ssh_keys(login)


def _github_account(settings: Settings, login: str) -> bool:
    from runner.pullrequests.github import API_URL, GitHub

    return GitHub("", token=settings.github_token, api_url=settings.github_api_url or API_URL).account_exists(login)


def publish_keys(settings: Settings) -> Keys:
    """The site's publish key from CHALLENGE_PUBLISH_KEY (the Actions secret), if it is set."""
    secret = settings.publish_key
    return Keys(identities=tuple(identities([secret]))) if secret else Keys()


def pinned_signers(settings: Settings, file: Path | None = None) -> Signers | None:
    """The runner keys pinned outside the tree: allowed_signers lines in `file` (`--signers`), else in
    CHALLENGE_ALLOWED_SIGNERS (publish.yml passes the Actions variable: a writer of the repository can edit
    challenges/allowed_signers, not the repository's variables)."""
    if file is not None:
        signers = read_signers(file)  # the file's own checks: no link, its size, UTF-8, each line
        if signers is None:
            raise UsageError(f"--signers {file}: no such file")
        if not signers.entries:  # asked for: trusting the tree's file instead would defeat the point
            raise UsageError(f"--signers {file}: lists no key")
        return signers
    text = settings.allowed_signers
    if text is None:  # an Actions variable that is not set reads as empty: not set
        return None
    if len(text.encode()) > MAX_SIGNERS_BYTES:
        raise UsageError(f"{ENV_ALLOWED_SIGNERS}: more than an allowed-signers file needs")
    return parse_signers(text, source=ENV_ALLOWED_SIGNERS)


def tree_verifier(root: Path, settings: Settings, *, signers: Path | None = None) -> Verifier:
    """What checks the results of the tree at `root`, trusting the pinned keys where there are some."""
    return Verifier.of(root.resolve(), pinned=pinned_signers(settings, signers))  # as the store resolves it


def signing_key(root: Path, settings: Settings) -> SigningKey:
    """The key this runner signs results with: the OpenSSH Ed25519 key file CHALLENGE_SIGNING_KEY names,
    else signing_key in its state folder (made the first time)."""
    path = signing_key_file(root, settings)
    if settings.signing_key is None:
        return load_or_create(path)
    try:
        return read_key(path.read_bytes(), where=f"{ENV_SIGNING_KEY}={path}")
    except OSError as exc:
        raise UsageError(f"{ENV_SIGNING_KEY}={path}: cannot read it ({exc.strerror})") from None


def signing_key_file(root: Path, settings: Settings) -> Path:
    """Where the runner's signing key is: the file CHALLENGE_SIGNING_KEY names, else in the state folder."""
    return settings.signing_key or settings.state(root) / SIGNING_KEY_FILE


def runner_store(root: Path, *, settings: Settings, keys: Keys) -> Store:
    """The store a runner writes results into, signing them. Refused when the tree lists its runners' keys
    and not this one: the site would refuse every result it signs."""
    key = signing_key(root, settings)
    verifier = tree_verifier(root, settings)
    signers = verifier.signers
    if signers is not None and not signers.allows(key, when=dt.datetime.now(dt.UTC)):
        raise UsageError(f"{signers.source}: no line lets this runner's signing key sign results now (listed, "
                         f"valid today, namespace challenge-result): add the line `challenge keys runner` prints, "
                         f"or set {ENV_SIGNING_KEY} to a listed key")
    return open_store(root, settings, keys=keys, signer=key, verifier=verifier)  # reruns carry what verifies


def principal(text: str) -> str:
    """A name an allowed_signers line can hold: no spaces, commas or quotes, which would split the line."""
    if not text or any(c.isspace() or c in ',"' for c in text) or not text.isprintable():
        raise argparse.ArgumentTypeError(f"{text!r} cannot name a runner in allowed_signers: no spaces, commas "
                                         "or quotes")
    return text


def cmd_keys_runner(args: argparse.Namespace) -> int:
    settings = settings_here()
    key = signing_key(args.root, settings)
    err.print(f"This runner signs with {signing_key_file(args.root, settings)}: run this command with the "
              f"environment the runner's service has ({STATE_ENV} or {ENV_SIGNING_KEY}), so that it is the same "
              "key.")
    err.print(f"Commit this line to {signers_path(args.root.resolve()).relative_to(args.root.resolve())} so that "
              "everyone can check what this runner signs (keep the private key where it is, never commit it):")
    out.print(signers_line(args.name, key, valid_after=dt.datetime.now(dt.UTC)), markup=False)
    return 0


def cmd_keys_new(args: argparse.Namespace) -> int:
    secret, public = new_identity()
    err.print(f"Store the first line as the repository's Actions secret {ENV_PUBLISH_KEY} (never commit it), and "
              "the second as publish_key in each challenge.yml; then `challenge reseal` with an organizer's key.")
    out.print(secret, markup=False)
    out.print(public, markup=False)
    return 0


def cmd_unseal(args: argparse.Namespace) -> int:
    keys = read_identity_file(args.identity)
    path = args.result.resolve()
    data = unseal(_sealed(sealed_path(path)), keys, where=str(sealed_path(path)))
    out.print(json.dumps(json.loads(data), indent=2), markup=False)
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    path = args.result.resolve()
    logs = json.loads(unseal(_sealed(logs_path(path)), read_identity_file(args.identity), where=str(logs_path(path))))
    for stage, text in logs.items():
        out.print(f"== {stage}", markup=False)
        out.print(text, markup=False, highlight=False)
    return 0


def cmd_reseal(args: argparse.Namespace) -> int:
    """Every sealed result, and every debugging phase's sealed logs, sealed again to who reads them now:
    the recipients in challenge.yml (github:<login> read through GitHub, as the runner reads them)."""
    mine = read_identity_file(args.identity)
    settings = settings_here()
    store = open_store(args.root, settings, keys=runner_keys(settings))
    slugs = [args.challenge] if args.challenge else store.slugs()
    count = 0
    for slug in slugs:
        challenge = store.challenge(slug)
        readers = recipients(challenge, store.keys, publish=True)
        for path in sorted(store.base.glob(f"{slug}/results/*/*/*{SEALED}")):
            write_atomic(path, seal(padded(unseal(path.read_bytes(), mine, where=str(path))), readers))
            count += 1
        for path in sorted(store.base.glob(f"{slug}/results/*/*/*{LOGS}")):
            participant = path.parent.name
            logs = unseal(path.read_bytes(), mine, where=str(path))
            write_atomic(path, seal(padded(logs), log_readers(challenge, store.keys, store.logins(slug, participant))))
            count += 1
    out.print(f"{count} sealed file(s) sealed again to their readers now in challenge.yml")
    return 0


def _sealed(path: Path) -> bytes:
    if not path.is_file():
        raise UsageError(f"{path} does not exist: this result has no sealed part (nothing of it is withheld)")
    return path.read_bytes()
