"""MkDocs' own build (`mkdocs build`), redoing only the pages whose output changed since the last build.

MkDocs has no incremental build (`--dirty` leaves the navigation and the search index wrong), and a
full build of a large catalog spends its time converting every page's Markdown, rendering the whole
navigation into every page (quadratic in pages) and copying every data file. One new result changes
a few pages and data files. So this runs MkDocs' public `build(config, dirty=True)`, in which MkDocs
converts and renders only the pages whose `File.is_modified()` is true, with a plugin (`Incremental`)
that answers `is_modified` from a cache file kept outside the site folder instead of from file times:

- while pages are read (before `on_env`), a page is modified when its source (with its meta, its
  navigation title if any, whether it is the home page) or the configuration changed, or a link target
  its conversion looked up last time appeared or went; the others get their converted HTML, table of
  contents, title and anchors back from the cache;
- while pages are written (after `on_env`, when every page's title and meta are known), a page is
  modified when the hash of its rendering's inputs changed (the configuration, the navigation with every
  title, address and meta in order, the list of pages, the page's own HTML, title, meta and table of
  contents) or its output file is not as this builder wrote it (size and time).

The staged files MkDocs would only copy (a phase's JSON and CSV: most of the 17,000 files at 60,000
results) are set aside in `on_files`: MkDocs then walks only the pages and the theme's files, again and
again, while a link to a data file still finds it (`RecordingFiles.data`); the plugin copies them itself,
by MkDocs' own rule, where the staged copy is newer than the site's (page generation keeps unchanged files'
times) or the site lacks it. The theme's templates are compiled once (Jinja's bytecode cache, beside the
cache file, one folder per configuration and versions).

Everything else runs as MkDocs runs it: the same plugin events, the theme's templates, links to anchors
validated with every page's anchors. The search plugin indexes only the pages rendered again: the
plugin keeps each page's search entries and puts the kept pages' back, in the pages' order, before the
index is written, so it equals a clean build's; files no longer built are removed, so the site equals a
clean build. Only Material's search plugin is known: with any other plugin, or in strict mode (warnings
of kept pages would not be repeated), it is a plain full build.

Run as `python -m runner.site.incremental CONFIG CACHE [--strict] [--when-told]` from the folder holding
CONFIG.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import shutil
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import jinja2
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.config.base import Config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import Abort, BuildError, ConfigurationError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page
from mkdocs.utils.templates import TemplateContext

from runner.codekey import code_key
from runner.site.build import generated_settings, plain_settings
from runner.site.folders import remove_unwanted
from runner.tree.worktree import settled

SEARCH = "material.plugins.search"  # the one plugin known: Material's search, whose index entries are kept
PLUGIN = "runner/incremental"
# What mkdocs and its search plugin write besides the files and pages (relative to the site folder).
WRITTEN = ("404.html", "sitemap.xml", "sitemap.xml.gz", "search/search_index.json")
# MkDocs' notices about `--dirty` builds, which leave stale files and a wrong navigation: not this build.
DIRTY_NOTICES = ("A 'dirty' build is being performed", "The directory contains stale files")
INCLUDED: Callable[[InclusionLevel], bool] = InclusionLevel.is_included  # as `mkdocs build` (not serve) has it
Stamp = tuple[int, int, int, int]  # a file's size, modification and change times (ns) and inode


@dataclass
class Converted:
    """A page's Markdown as converted, and what the conversion depended on besides its source."""

    content: str
    digest: str  # of `content`, hashed once when converted: every build hashes each page's rendering inputs
    toc: Any
    title: str | None  # the title the page gave itself (None where the navigation names it)
    anchors: set[str] | None
    links_to_anchors: dict[str, dict[str, str]] | None  # by the linked file's src_uri
    lookups: dict[str, bool]  # link target -> whether it was a file of the site


@dataclass
class Cache:
    site: str = ""  # the configuration's hash: a new one empties the cache
    converted: dict[str, tuple[str, Converted]] = field(default_factory=dict)  # src_uri -> (source hash, ...)
    # src_uri -> hash of its rendering's inputs, and its output's size and time as written (another
    # builder writing into the same folder does not pass for this one)
    rendered: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    # src_uri -> hash of its rendering's inputs, and the search index entries the search plugin made of it
    indexed: dict[str, tuple[str, list[Any]]] = field(default_factory=dict)
    # src_uri -> the source file's stamp (`_stamp`) when read, the hash of its Markdown, and its meta
    read: dict[str, tuple[Stamp, str, dict[str, Any]]] = field(default_factory=dict)


class PageFile(File):
    """A documentation page whose `is_modified` is the `Incremental` plugin's answer, not a comparison of times."""

    def __init__(self, file: File, use_directory_urls: bool, plugin: Incremental):
        super().__init__(file.src_path, file.src_dir, file.dest_dir, use_directory_urls, dest_uri=file.dest_uri,
                         inclusion=file.inclusion)
        self.incremental = plugin

    def is_modified(self) -> bool:
        return self.src_uri in self.incremental.modified


class RecordingFiles(Files):
    """The site's files, noting each path looked up while `lookups` is set (while a page is converted).
    `data`: the staged files MkDocs would only copy (data files, images), by src_uri, kept out of the
    collection that MkDocs walks again and again (a phase's JSON and CSV are most of the files) but
    found by a lookup as if in it: links to them resolve as MkDocs resolves them."""

    def __init__(self, files: Iterable[File], data: dict[str, File] | None = None):
        super().__init__(files)
        self.data = data or {}
        self.lookups: dict[str, bool] | None = None

    def get_file_from_path(self, path: str) -> File | None:
        key = posix_key(path)  # as MkDocs' own lookup keys it
        found = self.src_uris.get(key)
        if found is None:
            found = self.data.get(key)
        if self.lookups is not None:
            self.lookups[path] = found is not None
        return found


def posix_key(path: str) -> str:
    """`PurePath(path).as_posix()`, MkDocs' key for a file, without parsing a path that is its own key
    (every segment non-empty and not `.`: nearly every link target). Parsing 15,000 link targets twice
    each was a fifth of the navigation pass for one new result at 300 challenges."""
    parts = path.split("/")
    return path if "" not in parts and "." not in parts else PurePath(path).as_posix()


class Quiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(DIRTY_NOTICES)


class Options(Config):  # type: ignore[no-untyped-call]  # mkdocs' __init_subclass__
    """The plugin's options: none."""


class Incremental(BasePlugin[Options]):  # type: ignore[no-untyped-call]  # mkdocs' __init_subclass__
    """Decides which pages MkDocs' dirty build converts and renders, and keeps what it needs for the others."""

    def __init__(self, cache: Cache, templates: Path | None = None):
        self.old, self.new = cache, Cache(cache.site)
        self.templates = templates  # a folder for Jinja's compiled templates (its bytecode cache)
        self.copied: set[str] = set()  # the staged files `on_env` copied or found copied, by their path in the site
        self.modified: set[str] = set()  # src_uris: to convert (until on_env), then to render
        self.files = RecordingFiles([])
        self.nav: Navigation | None = None
        self.named: set[str] = set()  # pages whose title the navigation gives
        self.sources: dict[str, str] = {}  # src_uri -> source hash
        self.inputs: dict[str, str] = {}  # src_uri -> hash of its rendering's inputs
        self.entries: list[Any] | None = None  # the search index's entries, as the search plugin appends them
        self.seen = 0  # entries already sliced into `indexed`
        self.indexed: dict[str, list[Any]] = {}  # this build's pages' search entries

    def pages(self) -> list[Page]:
        found = [file.page for file in self.files.documentation_pages(inclusion=INCLUDED)]
        return [page for page in found if page is not None]

    @event_priority(-100)  # after any other plugin's files
    def on_files(self, files: Files, /, *, config: MkDocsConfig) -> Files:
        """Pages answer `is_modified` from this plugin; the staged files MkDocs would only copy are set
        aside (`RecordingFiles.data`) and copied by `on_env` where the staged copy changed."""
        kept: list[File] = []
        data: dict[str, File] = {}
        docs, templates = config.docs_dir, set(config.extra_templates)
        for f in files:
            if _copied_only(f, docs, templates):
                data[f.src_uri] = f
            elif f.is_documentation_page() and f.generated_by is None:
                kept.append(PageFile(f, config.use_directory_urls, self))
            else:
                kept.append(f)
        self.files = RecordingFiles(kept, data)
        return self.files

    @event_priority(-100)  # the navigation as the pages get it
    def on_nav(self, nav: Navigation, /, *, config: MkDocsConfig, files: Files) -> None:
        """Read every page's source; those whose conversion's inputs are unchanged get it back from the cache."""
        self.nav = nav
        for file in self.files.documentation_pages(inclusion=INCLUDED):
            page = file.page or Page(None, file, config)  # as `build` makes pages left out of the navigation
            if page.title is not None:  # before the source is read: a title from the navigation
                self.named.add(file.src_uri)
            markdown = self.read(page, config)
            source = _hash((markdown, page.meta, file.src_uri in self.named, page.is_homepage))
            self.sources[file.src_uri] = source
            kept = self.old.converted.get(file.src_uri)
            if kept and kept[0] == source and all((self.files.get_file_from_path(path) is not None) == found
                                                  for path, found in kept[1].lookups.items()):
                self.restore(page, kept[1])
                self.new.converted[file.src_uri] = kept
            else:
                self.modified.add(file.src_uri)

    def read(self, page: Page, config: MkDocsConfig) -> str:
        """The hash of the page's Markdown, its meta set on the page. A source file whose stamp is as when it
        was last read is not read again (most of the pages, most of the time: reading and parsing 1,500 pages'
        meta was a fifth of MkDocs' time for one new result), and its Markdown is left unread: MkDocs reads it
        again to convert the page, and the theme's templates never show it. The source is the file's: this
        build runs beside Material's search alone (`main`), which gives no page a source of its own. A stamp
        is kept only once its times have `settled`."""
        uri, path = page.file.src_uri, page.file.abs_src_path
        stamp = None if path is None else _stamp(path)
        known = self.old.read.get(uri)
        if stamp is not None and known is not None and known[0] == stamp:
            page.meta = dict(known[2])  # the page's own: what a plugin does to it stays out of the cache
            self.new.read[uri] = known
            return known[1]
        page.read_source(config)
        markdown = _digest(page.markdown or "")
        if stamp is not None and settled(stamp[1:3], now=time.time_ns()):
            self.new.read[uri] = (stamp, markdown, dict(page.meta))
        return markdown

    def restore(self, page: Page, done: Converted) -> None:
        """What converting the page would give, as MkDocs' `Page.render` leaves it."""
        page.content, page.toc = done.content, done.toc
        if page.file.src_uri not in self.named:
            page.title = done.title  # a `weak_property`: MkDocs' way to give a page its title
        page.present_anchor_ids = done.anchors
        if done.links_to_anchors is not None:
            linked = {uri: self.files.get_file_from_path(uri) for uri in done.links_to_anchors}
            page.links_to_anchors = {f: done.links_to_anchors[uri] for uri, f in linked.items() if f}

    def on_pre_page(self, page: Page, /, *, config: MkDocsConfig, files: Files) -> None:
        self.files.lookups = {}  # the link targets its conversion looks up

    @event_priority(-100)  # the content as the other plugins leave it
    def on_page_content(self, html: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> None:
        lookups, self.files.lookups = self.files.lookups or {}, None
        links = page.links_to_anchors
        uri = page.file.src_uri
        self.new.converted[uri] = (self.sources[uri], Converted(
            html, _digest(html), page.toc, None if uri in self.named else page.title,
            page.present_anchor_ids, None if links is None else {f.src_uri: dict(a) for f, a in links.items()},
            lookups))

    @event_priority(-100)
    def on_env(self, env: jinja2.Environment, /, *, config: MkDocsConfig, files: Files) -> None:
        """Every page converted or restored: from now on, the pages to render are those whose inputs changed."""
        assert self.nav is not None
        pages = self.pages()
        navigation = _nav_hash(self.nav, pages)
        self.modified = set()
        for page in pages:
            uri = page.file.src_uri
            done = self.new.converted.get(uri)  # every page this plugin converts or restores
            content = done[1].digest if done else _digest(page.content or "")
            self.inputs[uri] = inputs = _page_hash(self.new.site, navigation, page, content)
            indexed = self.old.indexed.get(uri)
            if (self.old.rendered.get(uri) != (inputs, *_written(page.file.abs_dest_path))
                    or indexed is None or indexed[0] != inputs):
                self.modified.add(uri)
        self.entries = _search_entries(config)
        self.seen = len(self.entries or [])
        # Where MkDocs copies its static files next, first (its own files, written after, take precedence).
        self.copied = _copy_data(self.files.data.values(), os.path.normpath(config.site_dir))
        if self.templates is not None:  # the theme's templates compiled once, not in every build
            env.bytecode_cache = jinja2.FileSystemBytecodeCache(str(self.templates))

    @event_priority(-100)  # after the search plugin added the page's entries
    def on_page_context(self, context: TemplateContext, /, *, page: Page, config: MkDocsConfig,
                        nav: Navigation) -> None:
        if self.entries is not None:
            self.indexed[page.file.src_uri] = self.entries[self.seen:]
            self.seen = len(self.entries)

    @event_priority(100)  # before the search plugin writes its index
    def on_post_build(self, *, config: MkDocsConfig) -> None:
        """The kept pages' search entries back in the index, in the pages' order, as a clean build has them."""
        ordered: list[Any] = []
        for page in self.pages():
            uri = page.file.src_uri
            entries = self.indexed.get(uri, []) if uri in self.modified else self.old.indexed[uri][1]
            ordered += entries
            self.new.rendered[uri] = (self.inputs[uri], *_written(page.file.abs_dest_path))
            self.new.indexed[uri] = (self.inputs[uri], entries)
        if self.entries is not None:
            self.entries[:] = ordered


def main(argv: list[str]) -> int:
    """CONFIG CACHE [--strict] [--when-told]; a failure is one line on stderr, as `mkdocs build` prints it.
    --when-told: get ready (imports, the theme, plugins and extensions loaded, the cache read), then build
    once stdin says `build`, followed by CONFIG's settings as JSON where the caller just wrote them
    (`build.StartedBuild`); leave without building if it closes first."""
    config_file, cache_file, options = Path(argv[0]), Path(argv[1]), argv[2:]
    kept, told = None, None
    if "--when-told" in options:
        kept = _ready(config_file, cache_file)
        word, _, given = sys.stdin.readline().strip().partition(" ")
        if word != "build":
            return 0
        told = _told(given)
    try:
        config = _load_config(config_file, strict="--strict" in options, settings=told)
        config.plugins.on_startup(command="build", dirty=False)
        try:
            if config.strict or any(not type(p).__module__.startswith(SEARCH) for p in config.plugins.values()):
                build(config)
            else:
                site = _site_hash(config_file, config)
                build_incrementally(config, cache_file, site, kept=kept if kept is not None else _read(cache_file))
        finally:
            config.plugins.on_shutdown()
    except (ConfigurationError, BuildError, Abort) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 0


def _ready(config_file: Path, cache_file: Path) -> object:
    """What can be done before the pages are staged: the configuration that CONFIG inherits loaded once,
    which imports the theme, the plugins and the Markdown extensions it names (its warnings and errors
    are the real load's to report), and the cache read. Returns what the cache file held."""
    settings = generated_settings(config_file)
    if settings is not None:
        quiet = logging.getLogger("mkdocs")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL + 1)  # setLevel, which also clears the loggers' cached answers
        try:
            with open(config_file.parent / settings["INHERIT"], "rb") as parent:
                load_config(parent, config_file_path=os.path.abspath(config_file))
        except Exception:  # a warm-up only: the real load reports what is wrong
            pass
        finally:
            quiet.setLevel(level)
    return _read(cache_file)


def _told(given: str) -> dict[str, Any] | None:
    """The settings that came with `build` (JSON), where they are what `build.builder_config` writes."""
    try:
        return plain_settings(json.loads(given)) if given else None
    except ValueError:
        return None


def _load_config(config_file: Path, *, strict: bool, settings: dict[str, Any] | None = None) -> MkDocsConfig:
    """MkDocs' `load_config(CONFIG)`; for the configuration `build.builder_config` writes (INHERIT, nav),
    its navigation read by libyaml (or given: `settings`, as the caller wrote them) and given as an option:
    MkDocs' own pure-Python loader took 0.3 s over 300 challenges' navigation. Any other configuration is
    loaded as MkDocs loads it."""
    settings = dict(settings) if settings is not None else generated_settings(config_file)
    if settings is None:
        return load_config(str(config_file), strict=strict)
    with open(config_file.parent / settings.pop("INHERIT"), "rb") as parent:  # absolute, as MkDocs makes a path
        return load_config(parent, config_file_path=os.path.abspath(config_file), strict=strict, **settings)


def build_incrementally(config: MkDocsConfig, cache_file: Path, site: str, *, kept: object = None) -> None:
    """`mkdocs.commands.build.build` in its dirty mode, `cache_file` telling which pages to convert and
    render; `kept`: what the cache file held, when it was read already."""
    plugin = Incremental(_cache(kept, site), _templates(cache_file, site))
    plugin.load_config({})
    config.plugins[PLUGIN] = plugin
    quiet, logger = Quiet(), logging.getLogger("mkdocs.commands.build")
    logger.addFilter(quiet)
    try:
        build(config, dirty=True)
    finally:
        logger.removeFilter(quiet)
    _remove_stale(Path(config.site_dir), {f.abs_dest_path for f in plugin.files if INCLUDED(f.inclusion)}
                  | plugin.copied)
    _save(cache_file, plugin.new)


def _templates(cache_file: Path, site: str) -> Path:
    """The folder of Jinja's compiled theme templates, beside the cache, one per `site` (the versions
    and configuration that make the theme's environment): Jinja checks each template's source itself."""
    folder = cache_file.with_name(f"{cache_file.name}-templates")
    for old in folder.iterdir() if folder.is_dir() else []:
        if old.name != site:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    (folder / site).mkdir(parents=True, exist_ok=True)
    return folder / site


def _copied_only(file: File, docs: str, templates: set[str]) -> bool:
    """Whether MkDocs would only copy `file`: a staged file (`docs`: not the theme's, nor a plugin's)
    that is not a page. Static templates (`templates`: `extra_templates`) are rendered, not copied."""
    return (file.src_dir == docs and file.generated_by is None and not file.is_documentation_page()
            and file.src_uri not in templates)


def _copy_data(files: Iterable[File], site: str) -> set[str]:
    """Copy the included files whose staged copy is newer than the site's, or that the site lacks:
    MkDocs' own rule for a dirty build (`File.copy_file`), and a copy of another size too. Returns
    their paths in the site. Paths are joined, not normalised: the files' were listed from a folder."""
    written: set[str] = set()
    for file in files:
        if not INCLUDED(file.inclusion):
            continue
        source, target = os.path.join(file.src_dir or "", file.src_uri), os.path.join(site, file.dest_uri)
        written.add(target)
        try:
            there = os.stat(target)
        except FileNotFoundError:
            there = None
        staged = os.stat(source)
        if there is None or there.st_mtime < staged.st_mtime or there.st_size != staged.st_size:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
    return written


def _search_entries(config: MkDocsConfig) -> list[Any] | None:
    """Material's search index entries (a list each page's sections are appended to); None where its
    search is disabled."""
    for plugin in config.plugins.values():
        entries = getattr(getattr(plugin, "search_index", None), "entries", None)
        if type(plugin).__module__.startswith(SEARCH) and isinstance(entries, list):
            return entries
    return None


def _hash(value: object) -> str:
    return _digest(repr(value))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _stamp(path: str) -> Stamp | None:
    """What changes whenever a file is written or replaced; None where it cannot be read."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino


def _written(path: str | None) -> tuple[int, int]:
    try:
        info = os.stat(path or "")
    except FileNotFoundError:
        return -1, -1
    return info.st_size, info.st_mtime_ns


def _page_hash(site: str, navigation: str, page: Page, content: str) -> str:
    """What a page's output depends on: the site, the navigation, and the page's own converted content
    (`content`: its hash, `Converted.digest`)."""
    return _hash((site, navigation, page.file.src_uri, page.url, page.title, page.meta, content,
                  [(str(item), item.url) for item in page.toc]))


def _nav_hash(nav: Navigation, pages: list[Page]) -> str:
    """The navigation each page renders (every title, address and meta, in order) and the list of pages."""
    def walk(items: list[Any]) -> list[Any]:
        return [(type(i).__name__, i.title, getattr(i, "url", None), getattr(i, "meta", None),
                 walk(i.children or [])) for i in items]
    return _hash((walk(nav.items), [page.file.src_uri for page in pages]))


def _site_hash(config_file: Path, config: MkDocsConfig) -> str:
    """The configuration files, the theme's overrides, and the code that renders the site: this module and
    what it imports, and every library module loaded once the configuration is (MkDocs, the theme, the
    Markdown extensions it names), by its file's size and time: an upgrade rewrites them. Read from what
    is loaded, so a new extension in mkdocs.yml counts without anyone listing it."""
    stdlib = sysconfig.get_paths()["stdlib"]
    files = ((name, getattr(module, "__file__", None)) for name, module in list(sys.modules.items()))
    loaded = sorted((name, file) for name, file in files if isinstance(file, str) and not file.startswith(stdlib))
    parts: list[str | bytes] = [code_key([__name__])]
    for name, file in loaded:
        info = os.stat(file)
        parts.append(f"{name} {info.st_size} {info.st_mtime_ns}")
    parts += [config_file.read_bytes()]
    parent = config_file.parent / "mkdocs.yml"
    parts += [parent.read_bytes()] if parent.is_file() else []
    custom = config.theme.custom_dir
    for path in sorted(Path(custom).rglob("*")) if custom else []:
        parts += [str(path).encode(), path.read_bytes() if path.is_file() else b""]
    return _hash(parts)


def _remove_stale(site: Path, kept: set[str]) -> None:
    """Files of earlier builds that this one did not write: the site then equals a clean build."""
    remove_unwanted(str(site), kept | {str(site / name) for name in WRITTEN})


def _read(path: Path) -> object:
    try:
        return pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def _cache(found: object, site: str) -> Cache:
    """The cache file's content if it is a cache of this `site`, else an empty one."""
    return found if isinstance(found, Cache) and found.site == site else Cache(site)


def _save(path: Path, cache: Cache) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(pickle.dumps(cache, pickle.HIGHEST_PROTOCOL))
    temporary.replace(path)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s - %(message)s")
    # The package's own module, not this __main__ copy: the cache pickles its classes by module name.
    from runner.site.incremental import main as package_main

    sys.exit(package_main(sys.argv[1:]))
