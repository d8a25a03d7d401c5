"""Test containers that misbehave in one chosen way (MODE), as hostile or broken submissions do."""

import errno
import json
import os
import socket
import stat
import struct
import sys
import time
from pathlib import Path

MODE = os.environ["MODE"]


def deep_tree() -> None:
    """Folders nested past PATH_MAX, made one level at a time."""
    os.chdir("/output")
    for _ in range(50):
        os.mkdir("d" * 100)
        os.chdir("d" * 100)


def acl_on_output() -> None:
    """What `setfacl -d -m u::---,g::---,o::--- /output` leaves (the image has no setfacl): folders made in
    /output get no permission at all. Also its mode opened, and its times set: its access time ahead, so
    that reading /output does not update it."""
    os.chmod("/output", 0o777)
    entries = [(0x01, 0), (0x04, 0), (0x20, 0)]  # ACL_USER_OBJ, ACL_GROUP_OBJ, ACL_OTHER; no permission
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, 0xFFFFFFFF) for tag, perm in entries)
    os.setxattr("/output", "system.posix_acl_default", acl)
    os.utime("/output", (4_000_000_000, 1))


if MODE == "network":
    socket.create_connection(("1.1.1.1", 443), timeout=5)
elif MODE == "write-root":
    Path("/opt/owned").write_text("x")
elif MODE == "sleep":
    time.sleep(600)
elif MODE == "crash":
    print("starting", flush=True)
    print("debug detail that is not the reason", file=sys.stderr)
    raise RuntimeError("model weights not found at /opt/model.pt")
elif MODE == "memory":
    hog = [bytearray(64 * 1024**2) for _ in range(64)]
elif MODE == "whoami":
    status = Path("/proc/self/status").read_text()
    caps = next(line.split()[1] for line in status.splitlines() if line.startswith("CapEff"))
    nnp = next(line.split()[1] for line in status.splitlines() if line.startswith("NoNewPrivs"))
    print(f"uid={os.getuid()} caps={caps} nnp={nnp} tmp_writable={os.access('/tmp', os.W_OK)}")
elif MODE == "bad-metrics":
    Path("/output/metrics.json").write_text("{not json")
elif MODE == "nan-metrics":
    Path("/output/metrics.json").write_text('{"aggregates": {"dice": {"mean": NaN}}}')
elif MODE == "nan-extra":
    Path("/output/metrics.json").write_text('{"aggregates": {"dice": {"mean": 0.5}, "jaccard": {"mean": Infinity}}}')
elif MODE == "spin":
    while True:
        pass
elif MODE == "fork-bomb":
    children = 0
    while True:
        if os.fork() == 0:
            time.sleep(600)
        children += 1
elif MODE == "disk-filler":
    with open("/output/fill", "wb") as out:
        while True:
            out.write(b"x" * 1024 * 1024)
            out.flush()
elif MODE == "symlink":
    os.symlink("/etc/shadow", "/output/case-000.npy")
elif MODE == "look-for-truth":
    skip = ("/proc", "/sys", "/dev", "/input", "/usr")  # /usr: the image's own packages, nothing mounted there
    for folder, folders, files in os.walk("/"):
        if folder.startswith(skip):
            folders.clear()
            continue
        for name in files:
            if name.startswith("case-") or "ground" in folder:
                sys.exit(f"found {os.path.join(folder, name)}")
    sys.exit("no ground truth visible")
elif MODE == "huge-stderr":
    line = "noise " * 100 + "\n"
    for _ in range(40_000):
        sys.stderr.write(line)
    raise SystemExit("the real reason comes last")
elif MODE == "slow-threshold":
    import numpy as np
    time.sleep(float(os.environ.get("SLOW_S", "2")))
    for path in sorted(Path("/input").glob("*.npy")):
        np.save(Path("/output") / path.name, (np.load(path) > 0.5).astype(np.uint8))
elif MODE == "noop":
    pass
elif MODE == "locked-dir":  # good outputs, and a folder the keeper cannot empty without chmod first
    import numpy as np
    for path in sorted(Path("/input").glob("*.npy")):
        np.save(Path("/output") / path.name, (np.load(path) > 0.5).astype(np.uint8))
    locked = Path("/output/locked")
    locked.mkdir()
    (locked / "inside").write_text("x")
    locked.chmod(0o500)
elif MODE == "unreadable":  # good outputs, each made unreadable, and a folder no one may enter
    import numpy as np
    for path in sorted(Path("/input").glob("*.npy")):
        np.save(Path("/output") / path.name, (np.load(path) > 0.5).astype(np.uint8))
        (Path("/output") / path.name).chmod(0)
    notes = Path("/output/notes")
    notes.mkdir()
    (notes / "run.txt").write_text("x")
    notes.chmod(0)
elif MODE == "deep-tree":
    deep_tree()
elif MODE == "acl-on-output":
    acl_on_output()
elif MODE == "deep-tree-and-acl-on-output":  # the tree for the shell to empty, /output itself for the keeper
    deep_tree()
    acl_on_output()
elif MODE == "attribute-on-output":  # data for the next run, past /output's size (tmpfs keeps user.* from Linux 6.6)
    try:
        os.setxattr("/output", "user.note", b"case-001 " * 1000)
    except OSError as exc:
        if exc.errno != errno.EOPNOTSUPP:
            raise
        print("user attributes refused")
elif MODE == "read-output":  # what a run finds of /output itself; then a folder in a folder, written into
    found = os.stat("/output")
    now = time.time()
    print(json.dumps({"attributes": os.listxattr("/output"), "mode": oct(stat.S_IMODE(found.st_mode)),
                      "times_now": all(abs(now - t) < 3600 for t in (found.st_atime, found.st_mtime))}))
    os.makedirs("/output/images/segmentation")
    Path("/output/images/segmentation/output.mha").write_bytes(b"prediction")
elif MODE in ("deep-metrics", "huge-int-metrics", "good-metrics"):  # the algorithm writes the metrics
    text = {"deep-metrics": '{"aggregates": {"dice": {"mean": 0.5}}, "x": ' + "[" * 900 + "]" * 900 + "}",
            "huge-int-metrics": '{"aggregates": {"dice": {"mean": 0.5}}, "n": ' + "7" * 5000 + "}",
            "good-metrics": '{"aggregates": {"dice": {"mean": 0.5}}}'}[MODE]
    Path("/output/metrics.json").write_text(text)
elif MODE == "pass-metrics":  # an evaluation that passes the algorithm's metrics.json on
    Path("/output/metrics.json").write_bytes(Path("/input/metrics.json").read_bytes())
elif MODE == "many-files":
    for i in range(200_000):
        Path(f"/output/f{i}").write_bytes(b"")
elif MODE == "sparse":  # 12 GB that take no room in a small tmpfs, for the host to write out in full
    with open("/output/case-000.npy", "wb") as out:
        out.truncate(12 * 1024**3)
elif MODE == "strange-name":  # a name that is not UTF-8, with a newline and a terminal escape in it
    os.symlink("/etc/shadow", b"/output/\xff\n\x1b[1mx")
elif MODE == "fifo":
    os.mkfifo("/output/case-000.npy")
elif MODE == "long-error":
    sys.exit("secret:" + "s" * 5000 + "\x1b[31m")
else:
    sys.exit(f"unknown MODE {MODE}")
