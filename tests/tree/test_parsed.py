"""Challenge and phase files as parsed in earlier runs: kept under their bytes, never past an edit."""

from __future__ import annotations

import os

import pytest

from runner.tree.located import ModelError
from runner.tree.parsed import ParsedFiles
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, phase_file


def counting(monkeypatch) -> list[str]:
    """The times the store's loader parses PHASE's file (not what it finds kept)."""
    import runner.tree.store as store_module

    parsed: list[str] = []
    real = store_module.load_phase

    def load_phase(path, slug):
        parsed.extend([path.name] if path.stem == PHASE else [])
        return real(path, slug)
    monkeypatch.setattr(store_module, "load_phase", load_phase)
    return parsed


def phases_through(store: Store, kept: ParsedFiles) -> dict:
    with store.keeping_parsed(kept):
        return store.phases(CHALLENGE)


def test_a_phase_parsed_once_is_read_back_until_its_file_changes(repo, tmp_path, monkeypatch):
    parsed, cache = counting(monkeypatch), tmp_path / "parsed.pickle"
    first = phases_through(Store(repo), ParsedFiles(cache, "code"))
    assert parsed == [f"{PHASE}.yml"] and cache.is_file()
    again = phases_through(Store(repo), ParsedFiles(cache, "code"))  # a new run: read back, not parsed
    assert parsed == [f"{PHASE}.yml"] and again == first

    path = phase_file(repo)
    text, times = path.read_text(), path.stat()
    title = first[PHASE].title
    path.write_text(text.replace(title, title[::-1], 1))  # as many bytes, and its times given back: the bytes decide
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    edited = phases_through(Store(repo), ParsedFiles(cache, "code"))
    assert parsed == [f"{PHASE}.yml"] * 2 and edited[PHASE].title == title[::-1]
    phases_through(Store(repo), ParsedFiles(cache, "other code"))  # what parses changed: parsed again
    assert len(parsed) == 3


def test_a_broken_phase_is_reported_every_time_and_never_kept(repo, tmp_path):
    cache = tmp_path / "parsed.pickle"
    phase_file(repo).write_text("title: [unclosed\n")
    for _ in range(2):
        with pytest.raises(ModelError):
            phases_through(Store(repo), ParsedFiles(cache, "code"))
    assert not cache.exists()


def test_a_file_edited_while_it_is_parsed_is_not_kept(repo, tmp_path, monkeypatch):
    import runner.tree.store as store_module

    path, real = phase_file(repo), store_module.load_phase

    def edited_meanwhile(file, slug):
        found = real(file, slug)
        if file == path:
            path.write_text(path.read_text() + "\n# edited\n")
        return found
    monkeypatch.setattr(store_module, "load_phase", edited_meanwhile)
    kept = ParsedFiles(tmp_path / "parsed.pickle", "code")
    phases_through(Store(repo), kept)
    assert kept.used and not any(how.startswith(f"{path}\n") for how, _, _ in kept.seen)  # the others are kept


def test_a_damaged_cache_file_is_parsed_again(repo, tmp_path):
    cache = tmp_path / "parsed.pickle"
    cache.write_bytes(b"not a pickle")
    assert PHASE in phases_through(Store(repo), ParsedFiles(cache, "code"))


def test_a_missing_challenge_is_the_same_error_kept_or_not(repo, tmp_path):
    store = Store(repo)
    with pytest.raises(ModelError, match="does not exist"):
        store.challenge("no-such")
    with store.keeping_parsed(ParsedFiles(tmp_path / "parsed.pickle", "code")), pytest.raises(
            ModelError, match="does not exist"):
        store.challenge("no-such")


def test_page_generation_keeps_what_it_parsed(repo, tmp_path, monkeypatch):
    from runner.site import pages
    from runner.site.build import SiteConfig

    config, parsed = SiteConfig.read(repo), counting(monkeypatch)
    for _ in range(2):
        pages.generate(Store(repo), config.stage, config.templates, config.assets, cache=tmp_path / "page-cache")
    assert parsed == [f"{PHASE}.yml"] and (tmp_path / "page-cache-parsed.pickle").is_file()
