"""MkDocs' build as `mkdocs build` runs it, step by step, redoing only what changed since the last build.

MkDocs has no incremental build (`--dirty` leaves the navigation and the search index wrong), and a
full build of a large catalog spends its time converting every page's Markdown, rendering the whole
navigation into every page (quadratic in pages) and copying every data file. One new result changes
a few pages and data files, so this build keeps, in a cache file outside the site folder:

- each page's converted Markdown, under a hash of its source and of the site's configuration, with
  the link targets the conversion looked up (a page is converted again when one appears or goes);
- a hash of each page's rendering inputs (its HTML, table of contents, title, the whole navigation),
  so a page whose inputs are unchanged keeps its output file.

Everything else runs as MkDocs runs it, in the same order: the same plugin events (the search plugin
still indexes every page, so the search index is whole), the theme's templates, data files copied
where the staged copy is newer (page generation keeps unchanged files' times), and files no longer
built are removed, so the site equals a clean build. Only the search plugin is known: with any other
plugin, or in strict mode (warnings of kept pages would not be repeated), it is a plain full build.

Run as `python -m runner.site.incremental CONFIG CACHE [--strict]` from the folder holding CONFIG.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import material  # type: ignore[import-untyped]  # mkdocs-material publishes no type information
import mkdocs
from mkdocs.commands.build import _build_page, _build_theme_template, _populate_page, build, get_context
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import Abort, BuildError, ConfigurationError
from mkdocs.structure.files import File, Files, InclusionLevel, get_files, set_exclusions
from mkdocs.structure.nav import Navigation, get_navigation
from mkdocs.structure.pages import Page

from runner.codekey import code_key

KNOWN_PLUGINS = {"search", "material/search"}
# What mkdocs and its search plugin write besides the files and pages (relative to the site folder).
WRITTEN = ("404.html", "sitemap.xml", "sitemap.xml.gz", "search/search_index.json")


@dataclass
class Converted:
    """A page's Markdown as converted, and what the conversion depended on besides its source."""

    content: str
    toc: Any
    title: str | None
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


class _Recording:
    """The site's files as a page's conversion sees them, noting each link target it looks up."""

    def __init__(self, files: Files):
        self.files = files
        self.lookups: dict[str, bool] = {}

    def get_file_from_path(self, path: str) -> File | None:
        found = self.files.get_file_from_path(path)
        self.lookups[path] = found is not None
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.files, name)

    def __iter__(self) -> Any:
        return iter(self.files)


def main(argv: list[str]) -> int:
    """CONFIG CACHE [--strict]; a failure is one line on stderr, as `mkdocs build` prints it."""
    config_file, cache_file = Path(argv[0]), Path(argv[1])
    try:
        config = load_config(str(config_file), strict="--strict" in argv[2:])
        config.plugins.on_startup(command="build", dirty=False)
        try:
            if set(config.plugins) - KNOWN_PLUGINS or config.strict:
                build(config)
            else:
                build_incrementally(config, cache_file, _site_hash(config_file, config))
        finally:
            config.plugins.on_shutdown()
    except (ConfigurationError, BuildError, Abort) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 0


def build_incrementally(config: MkDocsConfig, cache_file: Path, site: str) -> None:
    """`mkdocs.commands.build.build` without its cleaning, reusing `cache_file`'s conversions and renderings."""
    cache = _load(cache_file, site)
    converted: dict[str, tuple[str, Converted]] = {}  # this build's pages only
    config = config.plugins.on_config(config)
    config.plugins.on_pre_build(config=config)
    files = get_files(config)
    env = config.theme.get_env()
    files.add_files_from_theme(env, config)
    files = config.plugins.on_files(files, config=config)
    set_exclusions(files, config)
    nav = config.plugins.on_nav(get_navigation(files, config), config=config, files=files)
    inclusion: Callable[[InclusionLevel], bool] = InclusionLevel.is_included  # as mkdocs' Files types it
    doc_files = files.documentation_pages(inclusion=inclusion)
    for file in doc_files:
        if file.page is None and file.inclusion.is_not_in_nav():  # type: ignore[no-untyped-call]  # untyped in mkdocs
            Page(None, file, config)
        assert file.page is not None
        converted[file.src_uri] = _convert(file.page, config, files, cache.converted.get(file.src_uri))
    env = config.plugins.on_env(env, config=config, files=files)
    files.copy_static_files(dirty=True, inclusion=inclusion)  # copies where the staged file is newer
    for template in config.theme.static_templates:
        _build_theme_template(template, env, files, config, nav)
    navigation = _nav_hash(nav, doc_files)
    rendered, indexed, index = {}, {}, _search_entries(config)
    for file in doc_files:
        page = file.page
        assert page is not None
        inputs = _page_hash(site, navigation, page)
        start = len(index) if index is not None else 0
        if cache.rendered.get(file.src_uri) == (inputs, *_written(file.abs_dest_path)):
            # The output stands; the search index still gets the page's entries, as last time where known.
            kept = cache.indexed.get(file.src_uri)
            if index is not None and kept is not None and kept[0] == inputs:
                index.extend(kept[1])
            else:
                config.plugins.on_page_context(get_context(nav, doc_files, config, page), page=page, config=config,
                                               nav=nav)
        else:
            excluded = file.inclusion.is_excluded()  # type: ignore[no-untyped-call]  # untyped in mkdocs
            _build_page(page, config, doc_files, nav, env, excluded=excluded)
        rendered[file.src_uri] = (inputs, *_written(file.abs_dest_path))
        if index is not None:
            indexed[file.src_uri] = (inputs, index[start:])
    level = config.validation.links.anchors
    for file in doc_files:
        assert file.page is not None
        file.page.validate_anchor_links(files=files, log_level=level)
    config.plugins.on_post_build(config=config)
    _remove_stale(Path(config.site_dir), {f.abs_dest_path for f in files if inclusion(f.inclusion)})
    _save(cache_file, Cache(site, converted, rendered, indexed))


def _search_entries(config: MkDocsConfig) -> list[Any] | None:
    """Material's search index entries (a list each page's sections are appended to), which a page
    whose rendering inputs are unchanged gets back from the cache instead of being parsed again (its
    HTML parse was a third of a build that changed one page); None with another search plugin."""
    for plugin in config.plugins.values():
        entries = getattr(getattr(plugin, "search_index", None), "entries", None)
        if type(plugin).__module__.startswith("material.plugins.search") and isinstance(entries, list):
            return entries
    return None


def _convert(page: Page, config: MkDocsConfig, files: Files,
             kept: tuple[str, Converted] | None) -> tuple[str, Converted]:
    """The page's Markdown as HTML: `kept` where its source and the files it linked are the same."""
    page.read_source(config)
    source = hashlib.sha256(repr((page.markdown, page.meta)).encode()).hexdigest()
    if kept and kept[0] == source and all((files.get_file_from_path(p) is not None) == found
                                          for p, found in kept[1].lookups.items()):
        done = kept[1]
        page.content, page.toc, page._title_from_render = done.content, done.toc, done.title
        page.present_anchor_ids = done.anchors
        if done.links_to_anchors is not None:
            linked = {uri: files.get_file_from_path(uri) for uri in done.links_to_anchors}
            page.links_to_anchors = {f: done.links_to_anchors[uri] for uri, f in linked.items() if f}
        return kept
    recording = _Recording(files)
    _populate_page(page, config, recording)  # type: ignore[arg-type]  # duck-typed Files
    links = page.links_to_anchors
    return source, Converted(page.content or "", page.toc, page._title_from_render, page.present_anchor_ids,
                             None if links is None else {f.src_uri: dict(a) for f, a in links.items()},
                             recording.lookups)


def _written(path: str | None) -> tuple[int, int]:
    try:
        info = os.stat(path or "")
    except FileNotFoundError:
        return -1, -1
    return info.st_size, info.st_mtime_ns


def _page_hash(site: str, navigation: str, page: Page) -> str:
    """What a page's output depends on: the site, the navigation, and the page's own converted content."""
    text = repr((site, navigation, page.file.src_uri, page.url, page.title, page.meta, page.content,
                 [(str(item), item.url) for item in page.toc]))
    return hashlib.sha256(text.encode()).hexdigest()


def _nav_hash(nav: Navigation, doc_files: Sequence[File]) -> str:
    """The navigation each page renders (every title and address, in order) and the list of pages."""
    def walk(items: list[Any]) -> list[Any]:
        return [(type(i).__name__, i.title, getattr(i, "url", None), walk(i.children or [])) for i in items]
    text = repr((walk(nav.items), [f.src_uri for f in doc_files]))
    return hashlib.sha256(text.encode()).hexdigest()


def _site_hash(config_file: Path, config: MkDocsConfig) -> str:
    """The configuration files, the theme's overrides, and the versions of what renders the site."""
    parts = [mkdocs.__version__, getattr(material, "__version__", ""), code_key([__name__])]
    parts += [config_file.read_bytes()]
    parent = config_file.parent / "mkdocs.yml"
    parts += [parent.read_bytes()] if parent.is_file() else []
    custom = config.theme.custom_dir
    for path in sorted(Path(custom).rglob("*")) if custom else []:
        parts += [str(path).encode(), path.read_bytes() if path.is_file() else b""]
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _remove_stale(site: Path, kept: set[str]) -> None:
    """Files of earlier builds that this one did not write: the site then equals a clean build."""
    kept |= {str(site / name) for name in WRITTEN}
    for folder, dirs, names in os.walk(site, topdown=False):
        for name in names:
            if os.path.join(folder, name) not in kept:
                os.unlink(os.path.join(folder, name))
        for name in dirs:
            path = os.path.join(folder, name)
            if not os.listdir(path):
                os.rmdir(path)


def _load(path: Path, site: str) -> Cache:
    try:
        cache = pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return Cache(site)
    return cache if isinstance(cache, Cache) and cache.site == site else Cache(site)


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
