"""The site at scale: large phases publish their results in gzipped shards and draw long tables in part,
and a phase whose inputs did not change is taken whole from the page cache (so one new result
regenerates one phase)."""

from __future__ import annotations

import gzip
import html
import json
import os
import subprocess
import sys
from collections import Counter

import pytest
import yaml

from runner.evaluation.examples import prepare_workspace
from runner.site import cache as cache_module
from runner.site import datafiles, pages
from runner.site.build import SiteConfig, build_site
from runner.site.cache import Cache
from runner.tree.store import Store
from tests.helpers import CHALLENGE, IMAGE, PHASE, REPO, add_result, commit, write_submission


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


def test_a_large_phase_publishes_its_results_in_gzipped_shards(scored, monkeypatch):
    single = generate(scored)
    monkeypatch.setattr(datafiles, "SHARD_OVER", 2)
    monkeypatch.setattr(datafiles, "SHARD_SIZE", 1)  # three results: four shards
    sharded = generate(scored)
    folder = f"{CHALLENGE}/results/{PHASE}"
    shards = {name: json.loads(gzip.decompress(data)) for name, data in sharded.items()
              if name.startswith(f"{folder}/shards/")}
    assert sorted(shards) == [f"{folder}/shards/{k}.json.gz" for k in range(4)]
    for key in ("alice/v1", "bob/v1", "bob/v2"):  # each where its hash says, the same public record
        assert shards[f"{folder}/shards/{datafiles.shard_of(key, 4)}.json.gz"][key] == json.loads(
            single[f"{folder}/{key}.json"])
        assert f"{folder}/{key}.json" not in sharded
    assert sum(len(records) for records in shards.values()) == 3
    assert 'data-shards="4"' in sharded[f"{folder}/view.md"].decode()
    board = f"{CHALLENGE}/leaderboard/{PHASE}/leaderboard"
    assert datafiles.read_data_bytes(sharded[f"{board}.json.gz"]) == json.loads(single[f"{board}.json"])
    assert f"{board}.json" not in sharded and "leaderboard.json.gz" in sharded[f"{folder}/view.md"].decode()
    assert "data-shards" not in single[f"{folder}/view.md"].decode()


def test_a_large_record_is_published_alone_and_its_shard_names_it(scored, monkeypatch):
    """A container may write 16 MiB of metrics: in a shard they would slow every other result of it."""
    monkeypatch.setattr(datafiles, "SHARD_OVER", 0)
    monkeypatch.setattr(datafiles, "ALONE_OVER", 2000)
    add_result(scored, "carol", "v1", 0.9, cases=[0.9] * 200)  # 200 per-case values: past 2,000 bytes
    commit(scored, "2026-03-02T10:00:00Z")
    config = SiteConfig.read(scored)
    generate(scored)
    folder = config.stage / CHALLENGE / "results" / PHASE
    shard = datafiles.read_data(folder / "shards" / "0.json.gz")
    assert shard["carol/v1"] == {"$file": "carol/v1.json"} and "case" in shard["bob/v1"]["metrics"]
    assert datafiles.read_result(folder, "carol/v1")["metrics"]["case"]["case-199"]["dice"] == 0.9
    assert not (folder / "bob" / "v1.json").exists()


def test_a_result_on_the_site_holds_no_signature(scored):
    record = json.loads(generate(scored)[f"{CHALLENGE}/results/{PHASE}/bob/v2.json"])
    assert "signature" not in record and record["verification"]["reason"]  # checked at build, kept in the repo


def test_shards_are_fnv_1a_and_even():
    counts = Counter(datafiles.shard_of(f"team-{n}/s{n}", 8) for n in range(8000))
    assert sorted(counts) == list(range(8)) and min(counts.values()) > 900  # about 1,000 each
    assert datafiles.shard_count(50) == 0 and datafiles.shard_count(51) == 1 and datafiles.shard_count(600) == 4


def test_a_long_leaderboard_draws_its_first_rows(scored, monkeypatch):
    monkeypatch.setattr(pages, "PAGE_ROWS", 2)
    monkeypatch.setattr(pages, "SNAPSHOT_ROWS", 1)
    staged = generate(scored)
    board = staged[f"{CHALLENGE}/leaderboard/{PHASE}.md"].decode()
    assert "The first 2 of 3 rows." in board and 'data-src="leaderboard.json"' in board
    assert board.count("view.md?id=") == 2
    found = json.loads(gzip.decompress(staged[f"{CHALLENGE}/leaderboard/{PHASE}/history.json.gz"]))["snapshots"][0]
    assert len(found["rows"]) == 1 and found["total"] == 3 and found["rows"][0]["rank"] == 1


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


def test_an_edited_organizer_page_costs_no_phase_and_any_other_file_does(scored):
    cache = scored / "build" / "page-cache"
    generate(scored, cache=cache)
    phases = cache.with_name(f"{cache.name}-phases")  # one entry per phase key: a phase computed anew adds one

    def kept() -> set[str]:
        return {p.name for p in phases.iterdir()}
    before = kept()
    folder = scored / "challenges" / CHALLENGE
    (folder / "index.md").write_text((folder / "index.md").read_text() + "\nA new paragraph.\n")
    (folder / "guides").mkdir()
    (folder / "guides" / "faq.md").write_text("# FAQ\n")
    (folder / "guides" / "figure.png").write_bytes(b"\x89PNG not really")
    staged = generate(scored, cache=cache)
    assert kept() == before  # the pages are no phase's input
    assert staged == generate(scored)  # and the site is as generated without any cache
    assert b"A new paragraph." in staged[f"{CHALLENGE}/index.md"] and f"{CHALLENGE}/guides/figure.png" in staged
    (folder / "teams.yml").write_text("teams: {}\n")  # a file the store reads: every phase's input
    generate(scored, cache=cache)
    assert kept() - before  # its phases computed anew


def test_links_in_a_challenge_folder_are_keyed_by_where_they_point_never_walked(scored):
    cache = scored / "build" / "page-cache"
    folder = scored / "challenges" / CHALLENGE
    (scored / "shared.yml").write_text("a: 1\n")  # outside the challenge's folder: seen only through the link
    for name, target in (("evaluation-link", "evaluation"), ("loop", "."), ("gone", "nowhere"),
                         ("settings.yml", "../../shared.yml")):
        (folder / name).symlink_to(target)
    generate(scored, cache=cache)
    phases = cache.with_name(f"{cache.name}-phases")
    before = {p.name for p in phases.iterdir()}
    generate(scored, cache=cache)
    assert {p.name for p in phases.iterdir()} == before
    (scored / "shared.yml").write_text("a: 2\n")  # what a link to a file holds counts
    generate(scored, cache=cache)
    assert {p.name for p in phases.iterdir()} - before


def test_a_new_result_regenerates_its_phase(scored):
    cache = scored / "build" / "page-cache"
    generate(scored, cache=cache)
    add_result(scored, "carol", "v1", 0.9, cases=[0.9, 0.8, 1.0])
    commit(scored, "2026-03-02T10:00:00Z")
    kept = generate(scored, cache=cache)
    assert kept == generate(scored)  # as generated without any cache
    assert b"carol" in kept[f"{CHALLENGE}/leaderboard/{PHASE}.md"]


# A build in a new process (no other thread, so it may fork), saying which phases it computed itself: those
# with a key (True) or without one (False: results that may be sealed are computed every time).
COMPUTED_HERE = """
import os, sys
from pathlib import Path
from runner.site import pages
from runner.site.build import SiteConfig
from runner.site.cache import Cache
from runner.tree.store import Store
repo = Path(sys.argv[1])
config = SiteConfig.read(repo)
phase, here, computed = Cache.phase, os.getpid(), set()
def counted(self, key, make, wanted):
    def made():
        if os.getpid() == here:
            computed.add(key is not None)
        return make()
    return phase(self, key, made, wanted)
Cache.phase = counted
pages.generate(Store(repo), config.stage, config.templates, config.assets, cache=repo / "build" / "page-cache")
print(sorted(computed))
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a phase is computed beside the rest only with a second core")
def test_a_new_results_phase_is_computed_by_a_worker_beside_the_other_pages(scored):
    generate(scored, cache=scored / "build" / "page-cache")
    add_result(scored, "carol", "v1", 0.9, cases=[0.9, 0.8, 1.0])
    commit(scored, "2026-03-02T10:00:00Z")
    run = subprocess.run([sys.executable, "-c", COMPUTED_HERE, str(scored)], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == "[False]"  # the new result's phase was computed by a forked worker
    stage = SiteConfig.read(scored).stage
    kept = {str(p.relative_to(stage)): p.read_bytes() for p in stage.rglob("*") if p.is_file()}
    assert kept == generate(scored)  # as generated without any cache
    assert b"carol" in kept[f"{CHALLENGE}/leaderboard/{PHASE}.md"]


def test_a_host_that_cannot_start_workers_computes_the_phases_itself(scored, monkeypatch):
    def no_semaphores(*args, **kwargs):
        raise OSError(38, "Function not implemented")  # as multiprocessing says where /dev/shm is missing
    monkeypatch.setattr(cache_module, "ProcessPoolExecutor", no_semaphores)
    cache = scored / "build" / "page-cache"
    generate(scored, cache=cache)
    add_result(scored, "carol", "v1", 0.9, cases=[0.9, 0.8, 1.0])
    commit(scored, "2026-03-02T10:00:00Z")
    kept = generate(scored, cache=cache)
    assert kept == generate(scored) and b"carol" in kept[f"{CHALLENGE}/leaderboard/{PHASE}.md"]


def test_an_unchanged_phase_restores_staged_files_changed_behind_its_back(scored):
    cache, stage = scored / "build" / "page-cache", SiteConfig.read(scored).stage
    first = generate(scored, cache=cache)
    table = stage / CHALLENGE / "leaderboard" / PHASE / "leaderboard.json"
    table.write_bytes(table.read_bytes()[::-1])  # the same size, another content
    (stage / CHALLENGE / "leaderboard" / PHASE / "leaderboard.csv").unlink()
    assert generate(scored, cache=cache) == first


def test_a_submission_to_another_phase_keeps_a_phases_cache_entry(scored):
    cache = scored / "build" / "page-cache"
    generate(scored, cache=cache)
    phases = cache.with_name(f"{cache.name}-phases")
    before = {p.name for p in phases.iterdir()}
    write_submission(scored, "dave", "v1", IMAGE, phase="new-scanner")  # pending in the other phase
    generate(scored, cache=cache)
    after = {p.name for p in phases.iterdir()}
    assert len(after - before) == 1  # the other phase's key changed; this one's entry was read back
    write_submission(scored, "dave", "v2", IMAGE)  # in this phase: its key changes too
    generate(scored, cache=cache)
    assert len({p.name for p in phases.iterdir()} - after) == 1


def test_a_fresh_clone_with_the_cache_restored_computes_no_phase_again(scored, tmp_path):
    """What a workflow pays: a new checkout gives every file a new time and inode, but its folders the same tree
    ids, so the page cache it restores still holds every phase; an edit in place is seen all the same."""
    cache = scored / "build" / "page-cache"
    generate(scored, cache=cache)
    phases = cache.with_name(f"{cache.name}-phases")
    before = {p.name for p in phases.iterdir()}
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(scored), str(clone)], check=True)
    for name in ("build", "site", "mkdocs.yml"):  # the cache restored; the site's files, which tests do not commit
        subprocess.run(["cp", "-a", str(scored / name), str(clone / name)], check=True)
    generate(clone, cache=clone / "build" / "page-cache")
    assert {p.name for p in (clone / "build" / "page-cache-phases").iterdir()} == before
    result = clone / "challenges" / CHALLENGE / "results" / PHASE / "alice" / "v1.json"
    result.write_text(result.read_text().replace('"mean": 0.7', '"mean": 0.1'))  # same size, rewritten in place
    kept = generate(clone, cache=clone / "build" / "page-cache")
    assert kept == generate(clone)  # as generated without any cache


def test_many_challenges_are_grouped_in_the_navigation_and_each_page_lists_its_own_group(scored, monkeypatch):
    """The theme writes each section's link into every page: grouped, a page holds its own group's challenges
    and one link per other group (the six example challenges, two to a group here)."""
    monkeypatch.setattr(pages, "NAV_GROUP", 2)
    generate(scored)
    site = build_site(SiteConfig.read(scored))
    nav = yaml.safe_load((scored / "mkdocs.generated.yml").read_text())["nav"]
    groups = [item for item in nav if isinstance(item, dict) and " – " in next(iter(item))]
    assert [len(next(iter(g.values()))) for g in groups] == [2, 2, 2]
    page = (site / CHALLENGE / "index.html").read_text()
    mine = next(g for g in groups if any("Ellipsoid" in next(iter(c)) for c in next(iter(g.values()))))
    assert f'href="leaderboard/{PHASE}/"' in page  # its own leaderboard, in its open group
    for group in groups:
        if group is not mine:  # another group: one link, to its first page; its second challenge not at all
            first, second = (next(iter(c.values()))[0].removesuffix("index.md") for c in next(iter(group.values())))
            assert f'href="../{first}"' in page and f'href="../{second}"' not in page
    assert all(html.escape(next(iter(g))) in page for g in groups)


def test_a_few_challenges_are_listed_side_by_side():
    sections = [{f"Challenge {n}": [f"c{n}/index.md"]} for n in range(3)]
    assert pages.grouped(sections) == sections


def test_the_ranking_uncertainty_of_many_teams_is_the_top_teams(scored, monkeypatch):
    add_result(scored, "carol", "v1", 0.5, cases=[0.5, 0.4, 0.6])
    commit(scored, "2026-03-02T10:00:00Z")
    monkeypatch.setattr(pages, "UNCERTAINTY_TEAMS", 2)
    staged = generate(scored)
    found = json.loads(staged[f"{CHALLENGE}/leaderboard/{PHASE}/uncertainty.json"])
    assert sorted(found["algorithms"]) == ["alice", "bob"] and found["teams_ranked"] == 3  # carol ranks last
    assert len(found["significance"]) == 2
    board = staged[f"{CHALLENGE}/leaderboard/{PHASE}.md"].decode()
    assert f"the first 2 of 3 teams (`challenge report {CHALLENGE}` analyses them all)" in board


def test_unchanged_feeds_come_from_the_cache(scored, monkeypatch):
    cache = scored / "build" / "page-cache"
    first = generate(scored, cache=cache)
    monkeypatch.setattr(pages.feeds, "atom", lambda *a, **k: pytest.fail("an unchanged feed was written again"))
    assert generate(scored, cache=cache) == first


def test_a_new_result_writes_its_challenges_feed_again_from_its_phases_news_alone(scored, monkeypatch):
    cache = scored / "build" / "page-cache"
    feed = f"feeds/results/{CHALLENGE}.xml"
    assert b"carol" not in generate(scored, cache=cache)[feed]
    # Nothing changed: the feeds are kept by their phases' digests, never unpickled.
    monkeypatch.setattr(pages.feeds.News, "entries", lambda self: pytest.fail("an unchanged phase's news was read"))
    generate(scored, cache=cache)
    monkeypatch.undo()
    add_result(scored, "carol", "v1", 0.9, cases=[0.9, 0.8, 1.0])
    commit(scored, "2026-03-02T10:00:00Z")
    assert b"carol / v1" in generate(scored, cache=cache)[feed]


@pytest.mark.example_alone  # its phases rank by one score: ranking them needs no numerical library
def test_a_phase_whose_bootstrap_is_kept_imports_no_numerical_library(repo):
    for participant, dice in (("alice", 0.7), ("bob", 0.8)):
        add_result(repo, participant, "v1", dice, cases=[dice, dice - 0.1, dice + 0.1])
    cache = repo / "build" / "page-cache"
    assert "uncertainty.json" in str(generate(repo, cache=cache))  # bootstrapped, into the memo
    # A new staging folder: every phase is computed again, here (one core), its bootstrap read from the memo.
    script = ("import os, sys; from pathlib import Path; from runner.site import pages\n"
              "from runner.tree.store import Store\n"
              "os.cpu_count = lambda: 1\n"
              f"root = Path({str(repo)!r}); pages.generate(Store(root), root / 'again', root / 'site' / 'templates', "
              f"root / 'site' / 'assets', cache=Path({str(cache)!r}))\n"
              "print(sorted(m for m in ('numpy', 'pandas', 'scipy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout.splitlines()[-1] == "[]" and (repo / "again" / CHALLENGE / "leaderboard" / PHASE).is_dir()
