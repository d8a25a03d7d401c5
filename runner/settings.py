"""The runner's settings, each declared once: its option, its environment variable, its default and its help.

`Settings` is what a runner command runs with. `Settings.of` makes it from a command's parsed options, an
environment and a working folder, all three passed in: nothing here reads os.environ or the process's
folder, so a warm runner's job passes its client's, and lower stages are given values, never variables.
`add_options` derives each option, and its help with the default said once, from the same declarations.

Knows argparse and the tree's reading of sizes; must not import execution, evaluation or any stage above.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from runner.tree.schema_types import Size

CACHE_MAX_BYTES = 20 * 1024**3
CACHE_MAX_DAYS = 30.0
STATE_ENV = "CHALLENGE_STATE_DIR"


def size(text: str) -> int:
    """Bytes from 2048, 512m or 20g: the tree's own reading of sizes."""
    try:
        return TypeAdapter(Size).validate_python(text)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(exc.errors()[0]["msg"]) from None


def gpu_ids(text: str) -> tuple[str, ...]:
    """GPU indices as written: "0,1" -> ("0", "1")."""
    return tuple(g.strip() for g in text.split(",") if g.strip())


@dataclass(frozen=True)
class Source:
    """Where one setting comes from: its option (None: the environment alone) and its variable (None: the
    option alone), how a value written there reads, and its default as help says it."""

    help: str
    flag: str | None = None
    env: str | None = None
    parse: Callable[[str], Any] = str
    shown: str | None = None
    raw: bool = False  # the variable's text as it is (line numbers count), not stripped

    def described(self) -> str:
        """The help with where the default comes from, said once."""
        default = ", else ".join(filter(None, [f"${self.env}" if self.env else None, self.shown]))
        return f"{self.help} (default: {default})" if default else self.help


def declared(help: str, **source: Any) -> dict[str, Source]:
    """A setting's field metadata: its `Source`."""
    return {"source": Source(help, **source)}


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How this runner host is set up. Paths are absolute (relative ones read from the working folder)."""

    data_root: Path | None = field(default=None, metadata=declared(
        "hidden data root", flag="--data-root", env="CHALLENGE_DATA_ROOT", parse=Path))
    allow_local_images: bool = field(default=False, metadata=declared(
        "local runs: accept local image IDs (sha256:...), and image archives at file:// or private-network "
        "addresses", flag="--allow-local-images"))
    base_image: str | None = field(default=None, metadata=declared(
        "Python base image for evaluation images and the runner's helper containers", flag="--base-image",
        env="CHALLENGE_BASE_IMAGE", shown="python:3.11-slim, else an offline Debian base"))
    runtime: str | None = field(default=None, metadata=declared(
        "container runtime, e.g. runsc for gVisor", flag="--runtime"))
    gpus: tuple[str, ...] = field(default=(), metadata=declared(
        "GPU indices this runner may assign, e.g. 0 or 0,1", flag="--gpus", env="CHALLENGE_GPUS", parse=gpu_ids))
    cache_dir: Path | None = field(default=None, metadata=declared(
        "reuse of algorithm outputs", flag="--cache-dir", parse=Path,
        shown=f"STATE/cache, STATE being ${STATE_ENV}, else ROOT/build"))
    cache_max_size: int = field(default=CACHE_MAX_BYTES, metadata=declared(
        "evict the least recently used outputs beyond this size, e.g. 20g", flag="--cache-max-size", parse=size,
        shown="20g"))
    cache_max_age: float = field(default=CACHE_MAX_DAYS, metadata=declared(
        "evict outputs unused for this many days", flag="--cache-max-age", parse=float, shown=f"{CACHE_MAX_DAYS:g}"))
    cpu_fallback: bool = field(default=False, metadata=declared(
        "run GPU phases without a GPU where this runner has none (demo, local tries); results say so",
        flag="--cpu-fallback"))
    runner_key: Path | None = field(default=None, metadata=declared(
        "a file with this runner's age identity, to open image archives encrypted to it", flag="--runner-key",
        parse=Path, shown="the key itself in $CHALLENGE_RUNNER_KEY"))
    runner_key_text: str | None = field(default=None, metadata=declared(
        "this runner's age identity itself", env="CHALLENGE_RUNNER_KEY"))
    log_dir: Path | None = field(default=None, metadata=declared(
        "full container logs for organizers", flag="--log-dir", parse=Path, shown="STATE/logs"))
    training_dir: Path | None = field(default=None, metadata=declared(
        "training phases: each submission's checkpoints and model, kept across runner restarts",
        flag="--training-dir", parse=Path, shown="STATE/training"))
    preserved_dir: Path | None = field(default=None, metadata=declared(
        "archives of algorithm images kept on this runner (`challenge preserve`), used when an image cannot be "
        "pulled", flag="--preserved-dir", parse=Path, shown="STATE/preserved"))
    state_dir: Path | None = field(default=None, metadata=declared(
        "what this runner keeps between jobs", env=STATE_ENV, parse=Path, shown="ROOT/build"))
    build_ca_certs: Path | None = field(default=None, metadata=declared(
        "a PEM bundle the runner's builds trust (hosts behind TLS inspection)", env="CHALLENGE_BUILD_CA_CERTS",
        parse=Path))
    publish_key: str | None = field(default=None, metadata=declared(
        "the site's publish key (the Actions secret)", env="CHALLENGE_PUBLISH_KEY"))
    signing_key: Path | None = field(default=None, metadata=declared(
        "the runner's signing key file", env="CHALLENGE_SIGNING_KEY", parse=Path, shown="STATE/signing_key"))
    allowed_signers: str | None = field(default=None, metadata=declared(
        "the runner keys pinned outside the tree, as allowed_signers lines", env="CHALLENGE_ALLOWED_SIGNERS",
        raw=True))
    github_token: str | None = field(default=None, metadata=declared(
        "GitHub's token, to read participants' SSH keys, review pull requests, dispatch and push results "
        "(Actions sets it)", env="GITHUB_TOKEN"))
    github_api_url: str | None = field(default=None, metadata=declared(
        "GitHub's API (Actions sets it)", env="GITHUB_API_URL"))
    github_repository: str | None = field(default=None, metadata=declared(
        "the repository a workflow step works on, OWNER/NAME (Actions sets it)", env="GITHUB_REPOSITORY"))
    github_server_url: str = field(default="https://github.com", metadata=declared(
        "GitHub's address, where results are pushed (Actions sets it)", env="GITHUB_SERVER_URL",
        shown="https://github.com"))

    @classmethod
    def of(cls, args: argparse.Namespace | None = None, *, env: Mapping[str, str], cwd: Path) -> Settings:
        """Each setting from its option where the command has it and it was given, else from its variable
        where that is set (not blank), else its default."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            value = _given(f.name, source(f.name), args, env)
            if value is not None:
                values[f.name] = cwd / value if isinstance(value, Path) else value
        return cls(**values)

    def state(self, root: Path) -> Path:
        """What this runner keeps between jobs: $CHALLENGE_STATE_DIR on a runner host, else ROOT/build."""
        return (self.state_dir or root / "build").resolve()

    def folder(self, given: Path | None, name: str, *, root: Path) -> Path:
        """An option's folder, else <state folder>/`name`."""
        return (given or self.state(root) / name).resolve()


def source(name: str) -> Source:
    """The declared `Source` of the setting `name`."""
    found: Source = next(f for f in dataclasses.fields(Settings) if f.name == name).metadata["source"]
    return found


def variable(name: str) -> str:
    """The environment variable of the setting `name`."""
    env = source(name).env
    assert env, f"{name} is set by its option alone"
    return env


def _given(name: str, where: Source, args: argparse.Namespace | None, env: Mapping[str, str]) -> Any:
    value = getattr(args, name, None) if where.flag and args is not None else None
    if value is None and where.env:
        text = env.get(where.env, "")
        value = where.parse(text if where.raw else text.strip()) if text.strip() else None
    return value


def add_options(parser: argparse.ArgumentParser, *names: str) -> None:
    """The options of the settings `names`, as declared: parsed as they read, help with the default."""
    for name in names:
        where = source(name)
        assert where.flag, f"{name} is set by its variable alone"
        if _default(name) is False:
            parser.add_argument(where.flag, dest=name, action="store_true", help=where.described())
        else:
            parser.add_argument(where.flag, dest=name, type=where.parse, help=where.described())


def _default(name: str) -> Any:
    return next(f.default for f in dataclasses.fields(Settings) if f.name == name)
