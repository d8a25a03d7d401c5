"""A challenge's data sets (challenge.yml's `data:`): downloads that verify and resume, and the links of
gated data sets, sealed to each registered participant.

A download is written to `<file>.part` and renamed once its sha256 matches the one challenge.yml
pins, so a file under its own name is always whole and verified. A broken transfer keeps its part:
the next try (within one run, under the package's retry policy, or a later run) asks the server
for the rest with an HTTP Range request, and starts over only if the server ignores the range
(`runner.tree.download`, the package's one downloader, makes each request).

A data set behind terms has no URL in the public repository. The organizer keeps the links in a
local file; `seal_links` seals them, per registered participant, to the SSH keys GitHub publishes
for that login, into `challenges/<c>/data-access/<login>.age` (ASCII-armored age, so
`age -d -i ~/.ssh/id_ed25519 FILE` opens it too). Nothing else of the links is ever written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.codekey import file_sha256
from runner.errors import ChallengeError, Retry, printable
from runner.tree.download import DownloadError, Progress, Target, fetch, request
from runner.tree.model import URL, Challenge, Dataset, url_file
from runner.tree.paths import TreePaths
from runner.tree.schema_types import NAME
from runner.tree.sealing import Identity, Recipient, SealError, seal, unseal

PART = ".part"
TIMEOUT_S = 30


class DataError(ChallengeError):
    """A data set that could not be fetched, verified or opened; `transient` when trying again may help."""


@dataclass(frozen=True)
class Source:
    """Where one data set comes from and the file it is saved as."""

    dataset: Dataset
    url: str

    @property
    def file(self) -> str:
        """The file name it is saved as: its own, the URL's last part, or else its name where that is one
        (a single path component of letters, digits, '-', '_' and '.')."""
        name = self.dataset.file or url_file(self.url) or self.dataset.name
        if not NAME.fullmatch(name):
            raise DataError(f"{printable(self.dataset.name, 200)}: its URL does not end in a file name and its name "
                            "is not one (letters, digits, '-', '_', '.'); set its file: in challenge.yml")
        return name


def sources(challenge: Challenge, links: Mapping[str, str]) -> tuple[list[Source], list[Dataset]]:
    """Each data set with its URL (its own, or its link from `links` when gated), and the gated ones
    that `links` has no link for."""
    found, missing = [], []
    for dataset in challenge.data:
        url = dataset.url or links.get(dataset.name)
        if url:
            found.append(Source(dataset, url))
        else:
            missing.append(dataset)
    return found, missing


# --- downloads ------------------------------------------------------------------------------------


def download(source: Source, dest: Path, *, progress: Progress = lambda done, total: None,
             retry: Retry = Retry(attempts=5, first=1.0), log: Callable[[str], None] = lambda line: None) -> Path:
    """`source` saved and verified under `dest`; a verified file already there is kept as it is."""
    target = dest / source.file
    if target.parent != dest or target.name in ("", ".", ".."):  # what `file` checks: never outside dest
        raise DataError(f"{printable(source.dataset.name, 200)}: {printable(source.file, 200)!r} is not a file "
                        f"name in {dest}")
    if target.is_file() and file_sha256(target) == source.dataset.sha256:
        progress(target.stat().st_size, target.stat().st_size)
        return target
    dest.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + PART)
    retry.call(lambda attempt: _fetch(source, part, progress), log=log)
    digest = file_sha256(part)
    if digest != source.dataset.sha256:
        part.unlink()
        raise DataError(f"{source.dataset.name}: the download has sha256 {digest}, not the {source.dataset.sha256} "
                        "challenge.yml pins; it was removed (run again, or tell the organizers the file changed)")
    part.replace(target)
    return target


def _fetch(source: Source, part: Path, progress: Progress) -> None:
    """One try: the rest of `part` (or all of it), appended as it arrives. The organizer's URL may name a
    private address (data on an intranet), through the environment's proxies (HTTP_PROXY, HTTPS_PROXY,
    NO_PROXY), TLS trusting the system's roots (and SSL_CERT_FILE, SSL_CERT_DIR); there is no size limit
    but the pinned sha256."""
    def one(target: Target, have: int) -> dict[str, Any]:
        return request(target, part, offset=have, max_bytes=None, read_timeout_s=TIMEOUT_S, progress=progress,
                       system_trust=True)

    try:
        fetch(source.url, part, allow_private=True, max_bytes=None, request=one, proxied=True)
    except DownloadError as exc:
        raise _failure(source, exc) from None


def _failure(source: Source, exc: DownloadError) -> DataError:
    """A failed download in a data set's words; trying again may help unless the server refused it."""
    name, url = source.dataset.name, source.url
    if exc.kind == "status" and exc.status is not None:
        return DataError(f"{name}: {url} answered {exc.status} {exc.reason}",
                         transient=exc.status == 429 or exc.status >= 500)
    if exc.kind == "broken" and exc.total is not None:
        return DataError(f"{name}: the server closed the connection after {exc.done} of {exc.total} bytes",
                         transient=True)
    if exc.kind == "broken":
        return DataError(f"{name}: the transfer broke after {exc.done} bytes ({exc.detail})", transient=True)
    return DataError(f"{name}: cannot reach {url} ({exc.detail})",
                     transient=exc.kind in ("unreachable", "unknown_host", "lookup"))


# --- gated links ----------------------------------------------------------------------------------


def check_links(challenge: Challenge, links: Mapping[str, str], *, where: str) -> dict[str, str]:
    """The links of the challenge's gated data sets, every one present and a web address; one line
    naming `where` (the local links file) for the first that is not."""
    gated = {d.name for d in challenge.data if d.terms}
    if not gated:
        raise DataError(f"challenge {challenge.slug!r} has no data set behind terms: nothing to seal")
    if not isinstance(links, Mapping) or not all(isinstance(v, str) for v in links.values()):
        raise DataError(f"{where}: write one line per data set, `name: URL`")
    if unknown := sorted(set(links) - gated):
        raise DataError(f"{where}: {unknown[0]!r} is not a data set behind terms in challenge.yml "
                        f"(those are: {', '.join(sorted(gated))})")
    if missing := sorted(gated - set(links)):
        raise DataError(f"{where}: no link for {missing[0]!r}")
    if bad := next((name for name, url in links.items() if not URL.fullmatch(url)), None):
        raise DataError(f"{where}: {bad}: {links[bad]!r} is not a web address (http:// or https://...)")
    return dict(links)


def seal_links(challenge: Challenge, login: str, links: Mapping[str, str], recipients: Sequence[Recipient]) -> bytes:
    """The links, sealed so that only `recipients` (the participant's keys) can read them."""
    body = {"challenge": challenge.slug, "login": login, "links": dict(sorted(links.items()))}
    return seal(json.dumps(body, indent=2).encode() + b"\n", recipients)


def open_links(paths: TreePaths, slug: str, identities: Sequence[Identity], *,
               login: str | None = None) -> dict[str, str]:
    """The links sealed for the holder of `identities`: from data-access/<login>.age, or from whichever
    file there the keys open."""
    folder = paths.data_access(slug)
    files = [paths.data_access_file(slug, login)] if login else sorted(folder.glob("*.age"))
    if login and not files[0].is_file():
        raise DataError(f"{files[0]} does not exist: the organizers seal your links once your registration is "
                        "merged (challenge data seal)")
    for path in files:
        try:
            body = json.loads(unseal(path.read_bytes(), identities, where=str(path)))
        except SealError:
            continue
        links = body.get("links") if isinstance(body, dict) else None
        if isinstance(links, dict) and all(isinstance(v, str) and URL.fullmatch(v) for v in links.values()):
            return links
        raise DataError(f"{path}: opened, but it holds no links")
    raise DataError(f"none of the {len(files)} files in {folder} opens with this key: are you registered, and was "
                    "your key on GitHub when the organizers sealed the links? (--login LOGIN names your file)")
