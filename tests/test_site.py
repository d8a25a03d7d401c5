"""The site: pages generated from the tree and results, built for real by MkDocs and Zensical."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from runner import pages
from runner.cli import main
from runner.model import Result, RunRecord
from runner.sitebuild import BuildError, SiteConfig, build_site
from runner.store import Store
from conftest import CHALLENGE, PHASE, write_submission

DIGEST = "sha256:" + "cd" * 32


def add_result(repo: Path, participant: str, sub_id: str, dice: float | None, status: str = "succeeded",
               error: str | None = None) -> None:
    store = Store(repo)
    submission = store.submission(write_submission(repo, participant, sub_id, f"ghcr.io/{participant}/a@{DIGEST}"))
    metrics = None if dice is None else {"aggregates": {"dice": {"mean": dice, "std": 0.01, "min": dice - 0.1},
                                                          "jaccard": {"mean": dice / 2, "std": 0.02}}}
    when = "2026-03-01T10:00:00+00:00"
    store.write_result(submission, Result(
        challenge=CHALLENGE, phase=PHASE, participant=participant, submission=sub_id, status=status,
        created_at=when, started_at=when, finished_at=when, metrics=metrics, error=error,
        algorithm=RunRecord(image=f"ghcr.io/{participant}/a@{DIGEST}", exit_code=0, wall_time_s=1.0)))


@pytest.fixture
def scored_repo(repo) -> Path:
    add_result(repo, "alice", "v1", 0.81234)
    add_result(repo, "bob", "v2", 0.93456)
    add_result(repo, "carol", "v1", 0.5)
    add_result(repo, "dave", "broken", None, status="failed", error="Algorithm failed: ValueError: bad shape")
    return repo


def table_rows(html: str) -> list[list[str]]:
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [[re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in rows]


@pytest.mark.parametrize("builder", ["mkdocs", "zensical"])
def test_built_site_has_leaderboard_in_score_order(scored_repo, builder):
    config = SiteConfig.read(scored_repo)
    pages.generate(Store(scored_repo), config.stage, config.templates, config.assets)
    site = build_site(config, builder)
    html = (site / CHALLENGE / "leaderboard" / PHASE / "index.html").read_text()
    rows = table_rows(html)
    assert [r[:3] for r in rows[:3]] == [["1", "bob", "v2"], ["2", "alice", "v1"], ["3", "carol", "v1"]]
    assert rows[0][3] == "0.935 ± 0.010"          # score with its error, 3 decimal places
    assert rows[0][4] == "0.467 ± 0.020"          # extra column
    assert "Algorithm failed: ValueError: bad shape" in html  # failed evaluations are listed with their reason
    assert (site / CHALLENGE / "results" / PHASE / "bob" / "v2.json").is_file()
    home = (site / "index.html").read_text()
    assert 'class="catalog-card"' in home and "Ellipsoid Segmentation" in home
    assert (site / CHALLENGE / "index.html").is_file() and (site / CHALLENGE / "submit" / "index.html").is_file()


def test_mkdocs_strict_build_has_no_broken_links(scored_repo):
    assert main(["--root", str(scored_repo), "build", "--strict"]) == 0


def test_catalog_export_speaks_openchallenges(scored_repo):
    config = SiteConfig.read(scored_repo)
    pages.generate(Store(scored_repo), config.stage, config.templates, config.assets, today=dt.date(2026, 6, 1))
    [entry] = json.loads((config.stage / "catalog.json").read_text())
    assert entry["slug"] == CHALLENGE and entry["status"] == "active"
    assert entry["submission_types"] == ["container_image"] and entry["incentives"] == ["publication"]
    assert entry["organizations"][0]["role"] == "challenge_organizer"


def test_generation_writes_only_changes_and_drops_stale_pages(scored_repo):
    config = SiteConfig.read(scored_repo)
    store = Store(scored_repo)
    pages.generate(store, config.stage, config.templates, config.assets)
    board = config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md"
    page = config.stage / CHALLENGE / "index.md"
    stamp = page.stat().st_mtime_ns
    stale = config.stage / "old.md"
    stale.write_text("# gone")
    add_result(scored_repo, "erin", "v1", 0.99)
    pages.generate(store, config.stage, config.templates, config.assets)
    assert page.stat().st_mtime_ns == stamp
    assert "erin" in board.read_text() and not stale.exists()


def test_organizer_page_edit_is_rendered(scored_repo):
    (scored_repo / "challenges" / CHALLENGE / "faq.md").write_text("# FAQ\n\nAsk on the forum.\n")
    assert main(["--root", str(scored_repo), "build"]) == 0
    assert "Ask on the forum." in (scored_repo / "build" / "site" / CHALLENGE / "faq" / "index.html").read_text()


def test_broken_builder_config_is_one_clear_error(scored_repo, capsys):
    (scored_repo / "mkdocs.yml").write_text((scored_repo / "mkdocs.yml").read_text().replace("name: material", "name: nosuchtheme"))
    with pytest.raises(BuildError, match="mkdocs build failed"):
        build_site(SiteConfig.read(scored_repo))
    assert main(["--root", str(scored_repo), "build"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: mkdocs build failed")


def test_leaderboard_command_formats(scored_repo, capsys):
    assert main(["--root", str(scored_repo), "leaderboard", CHALLENGE, PHASE, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["rank"], r["participant"]) for r in rows] == [(1, "bob"), (2, "alice"), (3, "carol")]
    assert rows[0]["Dice (mean)"] == 0.93456
    assert main(["--root", str(scored_repo), "leaderboard", CHALLENGE, PHASE, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "rank,participant,submission,Dice (mean),Jaccard (mean),Dice (worst case),submitted"
    assert lines[1].startswith("1,bob,v2,0.93456,")
    assert main(["--root", str(scored_repo), "leaderboard", CHALLENGE, "nope"]) == 1
    assert "has no phase 'nope'" in capsys.readouterr().err
