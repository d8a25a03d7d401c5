"""The program inside an output area's keeper container (run as `python3 -I -c <this file>`).

It holds the area's volume mounted while participants' containers come and go, and answers the
runner on its attached stdin and stdout: a line `collect` is answered with /output as a tar stream,
a line `empty` empties it for the next run. Docker's archive endpoint and an exec did the same at
about 50 ms a call (the engine starts a process inside the container for each); this answers in
about 2 ms.

It runs as the area's user in the trusted base image, never the participant's code, and it only
describes what it finds: links, FIFOs and sockets go into the tar as such, without being followed or
opened, so the host's `outputs.extract_tar` stays the one place that decides what is accepted.
Standard library only, and nothing of the runner package: the keeper image has neither.

Answers are frames: a kind byte, a 4-byte big-endian length, the payload. `d` frames carry the tar
stream; one `e` frame ends each answer, empty when it went well, else why /output could not be read.
"""

import os
import stat
import sys
import tarfile

ROOT = "/output"
CHUNK = 1024 * 1024
BLOCK = tarfile.BLOCKSIZE


def frame(out, kind, payload):
    out.write(kind + len(payload).to_bytes(4, "big"))
    out.write(payload)


def member(path, name, status):
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


def readable(path, status):
    """A participant may take its own read permission away (chmod 000); the keeper, the same user, gives it back."""
    wanted = stat.S_IRUSR | (stat.S_IXUSR if stat.S_ISDIR(status.st_mode) else 0)
    if status.st_mode & wanted != wanted and status.st_uid == os.getuid():
        os.chmod(path, stat.S_IMODE(status.st_mode) | wanted)


def write_file(out, path, size):
    """Exactly `size` bytes of the file (what the header said), padded to a whole block."""
    left = size
    with open(path, "rb") as source:
        while left:
            chunk = source.read(min(CHUNK, left)) or b"\0" * min(CHUNK, left)  # shrank meanwhile: zeros
            frame(out, b"d", chunk)
            left -= len(chunk)
    if size % BLOCK:
        frame(out, b"d", b"\0" * (BLOCK - size % BLOCK))


def entry(out, path, name):
    """One entry's header, and a regular file's content; whether it is a folder to go into."""
    status = os.lstat(path)
    if stat.S_ISDIR(status.st_mode) or stat.S_ISREG(status.st_mode):
        readable(path, status)
    info = member(path, name, status)
    frame(out, b"d", info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
    if info.type == tarfile.REGTYPE:
        write_file(out, path, info.size)
    return info.type == tarfile.DIRTYPE


def collect(out, root=ROOT):
    """`root` as a tar stream, depth first in name order, its top folder named `output`. Only each open
    folder's names are held (the keeper has 64 MiB; /output may hold 100,000 files)."""
    entry(out, root, "output")
    folders = [(root, "output", iter(sorted(os.listdir(root))))]
    while folders:
        path, name, names = folders[-1]
        child = next(names, None)
        if child is None:
            folders.pop()
        elif entry(out, path + "/" + child, name + "/" + child):
            folders.append((path + "/" + child, name + "/" + child, iter(sorted(os.listdir(path + "/" + child)))))
    frame(out, b"d", b"\0" * (2 * BLOCK))  # the end of the archive


def empty(root=ROOT):
    """Everything under `root` removed, folders a participant closed (chmod 0) opened first. Paths past
    the kernel's limit fail here; the runner then empties the area its slower way, or replaces it."""
    pending, folders = [root], []
    while pending:
        path = pending.pop()
        os.chmod(path, stat.S_IRWXU)  # /output itself included: its volume was made 0700
        folders.append(path)
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                os.unlink(entry.path)
    for path in reversed(folders[1:]):
        os.rmdir(path)


REQUESTS = {"collect": collect, "empty": lambda out, root: empty(root)}


def answer(out, request, root=ROOT):
    """One request's answer, ended by its `e` frame: empty if it went well, else why not."""
    try:
        if request not in REQUESTS:
            raise ValueError("unknown request " + repr(request)[:80])
        REQUESTS[request](out, root)
        error = ""
    except (OSError, ValueError) as exc:  # what the participant left cannot be read (a name too long, say)
        error = str(exc)
    frame(out, b"e", error.encode("utf-8", "replace"))
    out.flush()


def main():
    for line in sys.stdin:
        answer(sys.stdout.buffer, line.strip())


if __name__ == "__main__":
    main()
