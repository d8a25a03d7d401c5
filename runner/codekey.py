"""Which code made a cached thing: the key every cache of the package mixes into its entries' names.

A cache entry is right only while the code that computed it is unchanged. The key is read from the code
itself, never from a list kept by hand: the source of the named modules and of every module of this
package they import, at any depth (lazy imports inside functions count), with the version of each
library they import whose distribution has the module's name (numpy, pandas, scipy, jinja2; PyYAML,
PyGithub and mkdocs-material go by module name alone: asking every installed distribution for its
modules costs more than a build saves; their versions change only when the locks do). Also the one way
the package hashes a file (`file_sha256`), for cache keys and pinned files alike. Imports nothing of
the package, so every stage may use it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import os
import re
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
NAME = PACKAGE.name


def code_key(modules: Iterable[str], *, package: Path = PACKAGE, extra: Iterable[Path] = ()) -> str:
    """A sha256 of the source of `modules` (dotted names in this package, as `runner.site.pages`) and of what
    they import, read from `package` (a copy of it, in tests), then of `extra` files (templates), each named
    by its place beside the package, so that another checkout of the same code has the same key."""
    digest = hashlib.sha256()
    for path, libraries in _closure(tuple(sorted(modules)), package):
        digest.update(f"{path.relative_to(package)}\0".encode())
        digest.update(path.read_bytes())
        digest.update(("\0".join(libraries) + "\0").encode())
    for path in extra:
        named = path.relative_to(package.parent) if path.is_relative_to(package.parent) else Path(path.name)
        digest.update(f"{named}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def file_sha256(path: Path | str) -> str:
    """The sha256 of the file at `path`, as hex, streamed: an image archive or a data set is never read whole."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


Walk = tuple[tuple[Path, tuple[str, ...]], ...]  # each file reached, with the libraries it imports
_walks: dict[tuple[tuple[str, ...], Path], tuple[tuple[tuple[int, int], ...], Walk]] = {}


def _closure(roots: tuple[str, ...], package: Path) -> Walk:
    """The files reached from `roots`, walked again only when one of them changed size or time since the
    last walk (an edit alone can import another module)."""
    kept = _walks.get((roots, package))
    if kept is not None and kept[0] == _stamps(path for path, _ in kept[1]):
        return kept[1]
    walk = _walk(roots, package)
    _walks[roots, package] = (_stamps(path for path, _ in walk), walk)
    return walk


def _stamps(paths: Iterable[Path]) -> tuple[tuple[int, int], ...]:
    found = []
    for path in paths:
        try:
            info = path.stat()
        except FileNotFoundError:
            info = None
        found.append((info.st_size, info.st_mtime_ns) if info else (-1, -1))
    return tuple(found)


def _walk(roots: tuple[str, ...], package: Path) -> Walk:
    """Each source file reached from `roots` (packages' __init__ included: importing a module runs them),
    sorted, with the libraries it imports."""
    seen: dict[Path, tuple[str, ...]] = {}
    pending, named = list(roots), set(roots)
    while pending:
        name = pending.pop()
        for path in _files(name, package):
            if path in seen:
                continue
            modules = _imports(path, name)
            seen[path] = tuple(sorted({_version(m) for m in modules if m.split(".")[0] != NAME}))
            new = {m for m in modules if m.split(".")[0] == NAME} - named
            pending.extend(new)
            named |= new
    return tuple(sorted(seen.items()))


def _files(name: str, package: Path) -> list[Path]:
    """The source of module `name`, and the __init__ of each package above it. Paths are joined as text:
    pathlib's joins and checks were half of a key's time, and a build asks for several keys."""
    parts = name.split(".")[1:]
    found = [package / "__init__.py"]
    folder = str(package)
    for depth, part in enumerate(parts, 1):
        folder = os.path.join(folder, part)
        if os.path.isfile(init := os.path.join(folder, "__init__.py")):
            found.append(Path(init))
        elif depth == len(parts) and os.path.isfile(source := f"{folder}.py"):
            found.append(Path(source))
    return found


# (file, module, its size, modification and change times and inode) -> what it imports
_parsed: dict[tuple[Path, str, int, int, int, int], set[str]] = {}


def _imports(path: Path, name: str) -> set[str]:
    """Every module `path` (module `name`) imports; `from a import b` counts `a.b` too (b may be a module).
    Kept per file while its stat stays (a rewrite changes its change time, even where it keeps size and
    modification time), so the keys of several modules share their parsing."""
    info = path.stat()
    stamp = (path, name, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    kept = _parsed.get(stamp)
    if kept is None:
        kept = _parsed[stamp] = _read_imports(path, name)
    return kept


def _read_imports(path: Path, name: str) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _statements(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names if base.split(".")[0] == NAME}
    return {m for m in found if m and m != "__future__"}


VERSION = re.compile(r"^Version:[ \t]*(\S+)[ \t]*$", re.MULTILINE)
IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t][^\n]*", re.MULTILINE)


def _statements(source: str) -> list[ast.stmt]:
    """The import statements of `source`, at any depth: each parsed alone (parsing the whole module costs
    several times more, and a build asks for its key every time)."""
    found: list[ast.stmt] = []
    for match in IMPORT.finditer(source):
        text = match.group().strip()
        if text.count("(") > text.count(")"):  # from x import (a,\n b)
            text = source[match.start():source.index(")", match.end()) + 1].strip()
        try:
            found.extend(ast.parse(text).body)
        except SyntaxError:  # "import" inside a string or a comment line that merely looks like one
            continue
    return found


def _version(module: str) -> str:
    """`module`'s top-level name, with the version of the distribution of that name where one is installed."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        return top
    return f"{top}=={_installed(top)}"


@cache
def _installed(distribution: str) -> str:
    """The distribution's version, from its metadata's `Version:` header: `importlib.metadata.version` parses
    all of the metadata as e-mail (a long description and all), a fifth of a key's time."""
    try:
        found = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:  # a module named unlike its distribution (yaml: PyYAML)
        return "?"
    headers = (found.read_text("METADATA") or found.read_text("PKG-INFO") or "").split("\n\n", 1)[0]
    version = VERSION.search(headers)
    return version.group(1) if version else found.version
