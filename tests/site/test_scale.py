"""The site at scale: large phases bundle their results per participant, and a phase whose inputs did
not change is taken whole from the page cache (so one new result regenerates one phase)."""

from __future__ import annotations

import json
import subprocess

import pytest

from runner.evaluation.examples import prepare_workspace
from runner.site import pages
from runner.site.build import SiteConfig
from runner.site.cache import Cache
from runner.tree.store import Store
from tests.helpers import CHALLENGE, PHASE, REPO, add_result, commit


@pytest.fixture
def scored(tmp_path):
    repo = prepare_workspace(REPO, tmp_path / "repo")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    for participant, dice in (("alice", 0.7), ("bob", 0.8)):
        add_result(repo, participant, "v1", dice, cases=[dice, dice - 0.1, dice + 0.1])
    add_result(repo, "bob", "v2", 0.6, cases=[0.6, 0.5, 0.7])
    commit(repo, "2026-03-01T10:00:00Z")
    return repo


def generate(repo, **kwargs) -> dict[str, bytes]:
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets, **kwargs)
    return {str(p.relative_to(config.stage)): p.read_bytes() for p in config.stage.rglob("*") if p.is_file()}


def test_a_large_phase_bundles_each_participants_results(scored, monkeypatch):
    single = generate(scored)
    monkeypatch.setattr(pages, "BUNDLE_OVER", 2)
    bundled = generate(scored)
    folder = f"{CHALLENGE}/results/{PHASE}"
    bob = json.loads(bundled[f"{folder}/bob.json"])
    assert sorted(bob) == ["v1", "v2"]
    assert bob["v2"] == json.loads(single[f"{folder}/bob/v2.json"])  # the same public record, in one file
    assert f"{folder}/bob/v2.json" not in bundled
    assert 'data-bundled="true"' in bundled[f"{folder}/view.md"].decode()
    assert 'data-bundled' not in single[f"{folder}/view.md"].decode()


def test_an_unchanged_phase_comes_from_the_cache(scored, monkeypatch):
    cache = scored / "build" / "page-cache"
    first = generate(scored, cache=cache)
    phases = cache.with_name(f"{cache.name}-phases")  # each phase's files whole, under a key of its inputs

    def kept() -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in phases.iterdir()}
    before = kept()
    assert before  # the example's phases that withhold nothing are kept there
    phase = Cache.phase

    def computed_only_without_a_key(self, key, make, wanted):  # a phase that withholds has none: always made
        def made():
            if key is not None:
                pytest.fail("an unchanged phase was computed again")
            return make()
        return phase(self, key, made, wanted)
    monkeypatch.setattr(Cache, "phase", computed_only_without_a_key)
    assert generate(scored, cache=cache) == first
    assert kept() == before  # every entry read back: none computed again (in a worker), written or dropped


def test_a_new_result_regenerates_its_phase(scored):
    cache = scored / "build" / "page-cache"
    generate(scored, cache=cache)
    add_result(scored, "carol", "v1", 0.9, cases=[0.9, 0.8, 1.0])
    commit(scored, "2026-03-02T10:00:00Z")
    kept = generate(scored, cache=cache)
    assert kept == generate(scored)  # as generated without any cache
    assert b"carol" in kept[f"{CHALLENGE}/leaderboard/{PHASE}.md"]


def test_an_unchanged_phase_restores_staged_files_changed_behind_its_back(scored):
    cache, stage = scored / "build" / "page-cache", SiteConfig.read(scored).stage
    first = generate(scored, cache=cache)
    table = stage / CHALLENGE / "leaderboard" / PHASE / "leaderboard.json"
    table.write_bytes(table.read_bytes()[::-1])  # the same size, another content
    (stage / CHALLENGE / "leaderboard" / PHASE / "leaderboard.csv").unlink()
    assert generate(scored, cache=cache) == first


def test_unchanged_feeds_come_from_the_cache(scored, monkeypatch):
    cache = scored / "build" / "page-cache"
    first = generate(scored, cache=cache)
    monkeypatch.setattr(pages.feeds, "atom", lambda *a, **k: pytest.fail("an unchanged feed was written again"))
    assert generate(scored, cache=cache) == first
