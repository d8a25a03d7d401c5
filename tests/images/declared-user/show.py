"""Who it runs as, whether it finds its user's packages, reads its input and writes its output."""

import json
import os
from pathlib import Path

try:
    import localmod  # in the declared user's ~/.local

    found = localmod.WHERE
except ImportError:
    found = None
try:
    secret = Path("/input/secret.txt").read_text()
except OSError as exc:
    secret = f"{type(exc).__name__}: {exc.strerror}"
shown = {"uid": os.getuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()), "home": os.environ.get("HOME"),
         "localmod": found, "secret": secret}
Path("/output/who.json").write_text(json.dumps(shown))
print(json.dumps(shown))
