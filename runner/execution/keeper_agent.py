"""The program inside an output area's keeper container (run as `python3 -I -c <this file>`).

It holds the area's volume mounted while participants' containers come and go, and answers the
runner on its attached stdin and stdout: a line `collect` is answered with /output as a tar stream,
a line `empty` empties it for the next run, /output itself reset as its volume was made. Docker's
archive endpoint and an exec did the same at about 50 ms a call (the engine starts a process inside
the container for each); this answers in about 2 ms.

It runs as the area's user in the trusted base image, never the participant's code, and it only
describes what it finds: links, FIFOs and sockets go into the tar as such, without being followed or
opened, so the host's `outputs.extract_tar` stays the one place that decides what is accepted.
Folders are streamed as they are read, never listed whole, so neither a huge folder nor a deep tree
grows the agent (the keeper has 64 MiB) before the host has seen enough to refuse it.
Standard library only, and nothing of the runner package: the keeper image has neither.

Answers are frames: a kind byte, a 4-byte big-endian length, the payload. `d` frames carry the tar
stream; each answer ends with one `e` frame (empty when it went well, else why the participant's
/output could not be read: the participant's doing) or one `x` frame (the agent's own failure).
"""

from __future__ import annotations  # annotations stay unevaluated: the names below need not exist at run time

import errno
import fcntl
import os
import stat
import sys
import tarfile

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: these names are for type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import BinaryIO

ROOT = "/output"
CHUNK = 1024 * 1024
# Linux's ioctls of a file's inode flags (chattr), as 64-bit kernels number them (_IOR/_IOW('f', 1/2, long)).
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
OWNERS_FLAGS = 0x8 | 0x40 | 0x80 | 0x10000  # what an owner may set without a capability: sync, nodump, noatime, dirsync
BLOCK = tarfile.BLOCKSIZE
# What a participant can leave that cannot be read or removed: a path past the kernel's limit, a loop
# of links, a permission the keeper cannot give back, folders nested past the keeper's open files, a
# folder not emptied in one pass. Any other failure is the agent's.
PARTICIPANTS = {errno.ENAMETOOLONG, errno.ELOOP, errno.EACCES, errno.EPERM, errno.EMFILE, errno.ENOTEMPTY}


def frame(out: BinaryIO, kind: bytes, payload: bytes) -> None:
    out.write(kind + len(payload).to_bytes(4, "big"))
    out.write(payload)


def member(path: str, name: str, status: os.stat_result) -> tarfile.TarInfo:
    """The tar header of one entry; a regular file's content follows it."""
    info = tarfile.TarInfo(name)
    info.mode, info.mtime = stat.S_IMODE(status.st_mode), int(status.st_mtime)
    info.uid, info.gid = status.st_uid, status.st_gid
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        info.type = tarfile.DIRTYPE
    elif stat.S_ISREG(mode) and status.st_nlink > 1:
        info.type = tarfile.LNKTYPE  # a hard link: the host refuses links, as it did Docker's archive
    elif stat.S_ISREG(mode):
        info.type, info.size = tarfile.REGTYPE, status.st_size
    elif stat.S_ISLNK(mode):
        info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
    elif stat.S_ISCHR(mode):
        info.type = tarfile.CHRTYPE
    elif stat.S_ISBLK(mode):
        info.type = tarfile.BLKTYPE
    else:  # a FIFO, or a socket (tar has no type for it): never opened, refused by the host
        info.type = tarfile.FIFOTYPE
    return info


def readable(path: str, status: os.stat_result) -> None:
    """A participant may take its own read permission away (chmod 000); the keeper, the same user, gives it back."""
    wanted = stat.S_IRUSR | (stat.S_IXUSR if stat.S_ISDIR(status.st_mode) else 0)
    if status.st_mode & wanted != wanted and status.st_uid == os.getuid():
        os.chmod(path, stat.S_IMODE(status.st_mode) | wanted)


def write_file(out: BinaryIO, path: str, size: int) -> None:
    """Exactly `size` bytes of the file (what the header said), padded to a whole block."""
    left = size
    # Never a link's target, never waiting on a FIFO: only what lstat found a regular file is opened.
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as source:
        while left:
            chunk = source.read(min(CHUNK, left)) or b"\0" * min(CHUNK, left)  # shrank meanwhile: zeros
            frame(out, b"d", chunk)
            left -= len(chunk)
    if size % BLOCK:
        frame(out, b"d", b"\0" * (BLOCK - size % BLOCK))


def entry(out: BinaryIO, path: str, name: str) -> bool:
    """One entry's header, and a regular file's content; whether it is a folder to go into."""
    status = os.lstat(path)
    if stat.S_ISDIR(status.st_mode) or stat.S_ISREG(status.st_mode):
        readable(path, status)
    info = member(path, name, status)
    frame(out, b"d", info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
    if info.type == tarfile.REGTYPE:
        write_file(out, path, info.size)
    return info.type == tarfile.DIRTYPE


def depth_first(root: str, name: str, visit: Callable[[os.DirEntry[str], str], bool]) -> Iterator[str]:
    """Calls `visit(entry, name)` on each entry under `root` (`name` its path under the top's `name`), depth
    first, going into those it returns True for; yields each folder's path once all in it was visited.
    One open folder per level, never a whole listing: a huge folder or a deep tree does not grow the agent."""
    folders = [(root, name, os.scandir(root))]
    try:
        while folders:
            path, name, found = folders[-1]
            child = next(found, None)
            if child is None:
                folders.pop()[2].close()
                yield path
            elif visit(child, name + "/" + child.name):
                folders.append((child.path, name + "/" + child.name, os.scandir(child.path)))
    finally:
        for _, _, found in folders:
            found.close()


def collect(out: BinaryIO, root: str) -> None:
    """`root` as a tar stream, depth first, its top folder named `output`."""
    entry(out, root, "output")
    for _ in depth_first(root, "output", lambda child, name: entry(out, child.path, name)):
        pass
    frame(out, b"d", b"\0" * (2 * BLOCK))  # the end of the archive


def empty(out: BinaryIO, root: str) -> None:
    """`root` itself reset (`reset`), then everything under it removed, folders a participant closed
    (chmod 0) opened first, each folder removed as soon as it is empty. Paths past the kernel's limit
    fail here; the runner then empties the area its slower way, or replaces it."""
    reset(root)  # first: done even where the walk below fails and the shell takes over
    for folder in depth_first(root, "", opened_or_removed):
        if folder != root:
            os.rmdir(folder)
    with os.scandir(root) as left:  # removing while reading a folder may skip entries: then the shell's turn
        if next(left, None) is not None:
            raise OSError(errno.ENOTEMPTY, "not emptied in one pass", root)


def reset(root: str) -> None:
    """`root` as its volume was made: mode 0700, the keeper's group, no inode flag or extended attribute a run
    may set, its times now: what a run leaves on /output itself would reach the next one given the area. A
    default ACL would take its permissions on the folders it makes; user.* attributes would pass it data
    outside the area's size, held in kernel memory while the area waits in its pool; the group and flags
    (chattr +d +A) a few bits. An attribute the keeper may not remove refuses the empty: the area is then
    replaced."""
    os.chmod(root, stat.S_IRWXU)  # first: a folder's user.* attributes are removed only with write permission
    os.chown(root, -1, os.getgid())  # a run may give it another group of its own (the hidden data's)
    clear_flags(root)
    for name in settable(root):  # the ACLs too: system.posix_acl_access and system.posix_acl_default
        os.removexattr(root, name)
    left = settable(root)
    if left:
        raise OSError(errno.EPERM, "attributes left that the keeper may not remove: " + ", ".join(left)[:200], root)
    os.utime(root)


def clear_flags(path: str) -> None:
    """The inode flags (chattr) a folder's owner may set cleared, where the file system has them (tmpfs since
    Linux 6.0: nodump and noatime); immutable and append-only need a capability no run has."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        found = bytearray(8)
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, found)
        flags = int.from_bytes(found[:4], sys.byteorder)
        if flags & OWNERS_FLAGS:  # the others are the file system's own (ext4's extents): left as they are
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, (flags & ~OWNERS_FLAGS).to_bytes(4, sys.byteorder) + bytes(4))
    except OSError as exc:
        if exc.errno not in (errno.ENOTTY, errno.EOPNOTSUPP, errno.EINVAL):  # no flags on this file system
            raise
    finally:
        os.close(fd)


def settable(path: str) -> list[str]:
    """The extended attributes of `path` that a run could have set: user.* and system.* (ACLs). security.* and
    trusted.* need capabilities no run has, and a security module labels every file with one (SELinux's)."""
    return [name for name in os.listxattr(path) if name.startswith(("user.", "system."))]


def opened_or_removed(child: os.DirEntry[str], name: str) -> bool:
    """A folder made enterable and writable (to go into), anything else removed (a link, not its target)."""
    if child.is_dir(follow_symlinks=False):
        os.chmod(child.path, stat.S_IRWXU)
        return True
    os.unlink(child.path)
    return False


REQUESTS = {"collect": collect, "empty": empty}


def answer(out: BinaryIO, request: str, root: str = ROOT) -> None:
    """One request's answer, ended by its `e` or `x` frame."""
    kind, text = b"e", ""
    try:
        if request not in REQUESTS:
            raise ValueError("unknown request " + repr(request)[:80])
        REQUESTS[request](out, root)
    except OSError as exc:
        kind, text = (b"e" if exc.errno in PARTICIPANTS else b"x"), str(exc)
    except Exception as exc:  # the agent's own trouble (a bug, memory): the runner replaces the keeper
        kind, text = b"x", type(exc).__name__ + ": " + str(exc)
    frame(out, kind, text.encode("utf-8", "replace"))
    out.flush()


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            answer(sys.stdout.buffer, line.strip())


if __name__ == "__main__":
    main()
