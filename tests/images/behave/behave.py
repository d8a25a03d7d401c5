"""Test containers that misbehave in one chosen way (MODE), as hostile or broken submissions do."""

import os
import socket
import sys
import time
from pathlib import Path

MODE = os.environ["MODE"]

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
else:
    sys.exit(f"unknown MODE {MODE}")
