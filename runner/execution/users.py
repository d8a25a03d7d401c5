"""Who a container runs as: the user its image declares, unless that user is root.

grand-challenge's templates declare `USER user` and install their packages with `pip install --user`
into that user's home, so a container finds them only when it runs as that user. Root, however named
(uid 0 by number, by `root`, or by a name the image's own /etc/passwd maps to 0), is replaced by the
unprivileged NOBODY, as is the root group. Every other limit of the sandbox stays.

The result is always numbers, `uid:gid`, resolved here from the image's /etc/passwd and /etc/group
as the engine would resolve them: given numbers and a group, the engine adds none of the groups the
image's /etc/group lists for the user (which could name any group of the host by its number). The
hidden data's group (NOBODY's) is kept as the one extra group, so a declared user reads what NOBODY
reads. The uid is the host's uid (the engine maps none unless it runs with user namespaces).
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.execution.sandbox import NOBODY_GID, RunAs

FILE_MAX_BYTES = 1024**2  # an image's /etc/passwd or /etc/group read past this is not read at all
MAX_ID = 2**31 - 1
ROOT_NAMES = ("", "0", "root")


class RefusedUser(ValueError):
    """The image declares a user or group its own files do not define (the engine would refuse to start it),
    or its /etc/passwd or /etc/group could make the engine give a run another group than the runner chose."""


@dataclass(frozen=True)
class _Entry:
    name: str
    id: int
    gid: int = 0


def run_as(declared: str, *, passwd: str | None, group: str | None) -> RunAs:
    """Who a container of an image declaring USER `declared` runs as, given the image's /etc/passwd and
    /etc/group (None: absent). RefusedUser when a name there is not defined, or the group file names a
    group by a number."""
    _no_numbered_groups(group)
    name, _, group_name = declared.strip().partition(":")
    if name in ROOT_NAMES:
        return RunAs()
    entry = _find(_entries(passwd, gid_field=True), name)
    if entry is None and not _number(name):
        raise RefusedUser(f"the image's USER {name!r} is not in its /etc/passwd")
    uid = entry.id if entry is not None else int(name)
    if uid == 0:
        return RunAs()
    gid = _gid(group_name, group, entry)
    if gid == 0:
        gid = int(NOBODY_GID)
    return RunAs(user=f"{uid}:{gid}", groups=() if str(gid) == NOBODY_GID else (NOBODY_GID,), home=None)


def _no_numbered_groups(group: str | None) -> None:
    """The engine looks each group it is given (the primary one, the one added) up by name before taking it
    as a number, in the image's own /etc/group: there `65534:x:0:` would turn the hidden data's group into
    root's, for every image, whatever user it runs as. Such a file is refused."""
    for line in (group or "").split("\n"):
        name = line.strip().split(":")[0]
        if name.isascii() and name.isdigit():
            raise RefusedUser(f"the image's /etc/group names a group {name!r}: a number, which the engine would "
                              "read as that group's name")


def _gid(group_name: str, group: str | None, entry: _Entry | None) -> int:
    """The declared group, else the user's own, else (a number without a passwd entry) NOBODY's group."""
    if not group_name:
        return entry.gid if entry is not None else int(NOBODY_GID)
    found = _find(_entries(group, gid_field=False), group_name)
    if found is None and not _number(group_name):
        raise RefusedUser(f"the image's USER group {group_name!r} is not in its /etc/group")
    return found.id if found is not None else int(group_name)


def _find(entries: list[_Entry], wanted: str) -> _Entry | None:
    """The first entry named `wanted`, or, for a number, the first with that id (the engine's own rule)."""
    if _number(wanted):
        return next((e for e in entries if e.id == int(wanted)), None)
    return next((e for e in entries if e.name == wanted), None)


def _entries(text: str | None, *, gid_field: bool) -> list[_Entry]:
    """name:password:id[:gid:...] lines; a line that is not one is skipped, as the engine skips it."""
    found = []
    for line in (text or "").splitlines():
        fields = line.strip().split(":")
        if len(fields) < (4 if gid_field else 3) or not _number(fields[2]) or (gid_field and not _number(fields[3])):
            continue
        found.append(_Entry(fields[0], int(fields[2]), int(fields[3]) if gid_field else 0))
    return found


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit() and int(text) <= MAX_ID
