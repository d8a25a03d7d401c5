"""The site: pages generated from the tree and results, built for real by MkDocs and Zensical."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.ranking.leaderboard import leaderboard
from runner.ranking.phase_uncertainty import case_values
from runner.site import pages
from runner.site.build import BuildError, SiteConfig, build_site
from runner.tree.result_model import MEASUREMENTS
from runner.tree.schema import json_schemas
from runner.tree.sealing import new_identity
from runner.tree.store import Store
from tests.helpers import CHALLENGE, DIGEST, PHASE, add_result, edit_yaml, phase_file


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
    assert f'href="../../results/{PHASE}/view/?id=bob/v2"' in html  # each row links to the result viewer
    assert (site / CHALLENGE / "results" / PHASE / "view" / "index.html").is_file()
    assert f'results/{PHASE}/view/"' not in html  # the viewer stays out of the navigation
    assert (site / CHALLENGE / "leaderboard" / PHASE / "leaderboard.csv").is_file()
    found = (site / "search" / "search_index.json") if builder == "mkdocs" else site / "search.json"
    index = json.loads(found.read_text())
    indexed = {doc["location"].split("#")[0] for doc in index.get("docs", index.get("items", []))}
    assert f"{CHALLENGE}/submit/" in indexed  # organizers' pages are searched, generated ones are not
    assert not [page for page in indexed if "/leaderboard/" in page or "/results/" in page]
    home = (site / "index.html").read_text()
    assert 'class="catalog-card"' in home and "Ellipsoid Segmentation" in home
    assert (site / CHALLENGE / "index.html").is_file() and (site / CHALLENGE / "submit" / "index.html").is_file()


def test_mkdocs_strict_build_has_no_broken_links(scored_repo):
    assert main(["--root", str(scored_repo), "build", "--strict"]) == 0


def test_catalog_export_speaks_openchallenges(scored_repo):
    config = SiteConfig.read(scored_repo)
    pages.generate(Store(scored_repo), config.stage, config.templates, config.assets, today=dt.date(2026, 6, 1))
    [entry] = [e for e in json.loads((config.stage / "catalog.json").read_text()) if e["slug"] == CHALLENGE]
    assert entry["status"] == "active"
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


def test_folders_of_records_never_become_pages(repo):
    challenge = repo / "challenges" / CHALLENGE
    for folder in ("approvals", "registrations", "submissions", "results"):
        (challenge / folder).mkdir(exist_ok=True)
        (challenge / folder / "notes.md").write_text("# private notes\n")
    (challenge / "faq.md").write_text("# FAQ\n")
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    assert (config.stage / CHALLENGE / "faq.md").is_file()
    assert not list((config.stage / CHALLENGE).rglob("notes.md"))


def test_broken_builder_config_is_one_clear_error(scored_repo, capsys):
    config = scored_repo / "mkdocs.yml"
    config.write_text(config.read_text().replace("name: material", "name: nosuchtheme"))
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
    assert lines[0] == ("rank,participant,submission,Dice (mean),Dice (mean) error,Jaccard (mean),"
                        "Jaccard (mean) error,Dice (worst case),submitted")
    assert lines[1].startswith("1,bob,v2,0.93456,0.01,")
    assert main(["--root", str(scored_repo), "leaderboard", CHALLENGE, "nope"]) == 1
    assert "has no phase 'nope'" in capsys.readouterr().err


def stage_of(repo: Path, **kwargs) -> Path:
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets, **kwargs)
    return config.stage


def test_leaderboard_downloads_and_ranking_sentence(scored_repo):
    stage = stage_of(scored_repo)
    folder = stage / CHALLENGE / "leaderboard" / PHASE
    rows = json.loads((folder / "leaderboard.json").read_text())
    assert [(r["rank"], r["participant"], r["Dice (mean)"], r["Dice (mean) error"]) for r in rows] == [
        (1, "bob", 0.93456, 0.01), (2, "alice", 0.81234, 0.01), (3, "carol", 0.5, 0.01)]
    lines = (folder / "leaderboard.csv").read_text().splitlines()
    assert lines[0].startswith("rank,participant,submission,Dice (mean),Dice (mean) error,") and len(lines) == 4
    page = (stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert ("**Absolute ranking**: results are ordered on Dice (mean) alone (higher is better), equal ones "
            "sharing a rank (1, 2, 2, 4); every successful result is listed") in page
    assert f"[CSV]({PHASE}/leaderboard.csv) · [JSON]({PHASE}/leaderboard.json)" in page


def test_mean_of_ranks_is_explained_with_its_columns(repo):
    phase = Store(repo).phase(CHALLENGE, PHASE)
    jaccard = replace(phase.extra_results_columns[0], exclude_from_ranking=False)
    mean = replace(phase, scoring_method_choice="mean", result_display_choice="best",
                   extra_results_columns=(jaccard,))
    assert pages.ranking_method(mean) == (
        "each result is ranked on every ranked column separately (Dice (mean): higher is better; "
        "Jaccard (mean): higher is better), then ordered by the mean of those ranks, equal ones sharing a "
        "rank (1, 2, 2, 4); each participant's best result is listed, and one missing a ranked value is "
        "listed without a rank.")
    tested = replace(phase, scoring_method_choice="test-then-rank")
    assert pages.ranking_method(tested).startswith(
        "every pair of results is compared on Dice (mean) by a one-sided Wilcoxon signed-rank test over cases "
        "(p ≤ 0.05), and results are ordered by the share of the others they beat, equal ones sharing")


def write_blind_phase(repo: Path) -> str:
    """A copy of the example phase that withholds scores until it closes (2027-12-31 23:59:59 UTC)."""
    phases = repo / "challenges" / CHALLENGE / "phases"
    text = (phases / f"{PHASE}.yml").read_text().replace("title: Final test", "title: Blind test")
    (phases / "blind.yml").write_text(text + "blind: true\n")
    return "blind"


def test_blind_phase_publishes_no_score_until_it_closes(repo):
    blind = write_blind_phase(repo)
    add_result(repo, "alice", "v1", 0.81234, cases=[0.71111, 0.82222, 0.93333], phase=blind)
    add_result(repo, "bob", "v2", 0.93456, cases=[0.64444, 0.75555, 0.86666], phase=blind)
    stage = stage_of(repo, now=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))
    published = "".join(p.read_text() for p in stage.rglob("*") if p.is_file() and p.suffix in (".md", ".json", ".csv"))
    for secret in ("0.81234", "0.93456", "0.40617", "0.71111", "0.64444", "2.5"):  # scores, per case, times
        assert secret not in published
    page = (stage / CHALLENGE / "leaderboard" / f"{blind}.md").read_text()
    assert page.count("succeeded — scores withheld until 2027-12-31 23:59 UTC") == 2
    assert page.index("| alice |") < page.index("| bob |")  # in order of submission, not of score
    assert not (stage / CHALLENGE / "leaderboard" / blind / "uncertainty.json").exists()
    result = json.loads((stage / CHALLENGE / "results" / blind / "bob" / "v2.json").read_text())
    assert result["metrics"] is None and result["status"] == "succeeded"
    assert result["algorithm"]["image"] == f"ghcr.io/bob/a@{DIGEST}" and result["algorithm"]["wall_time_s"] is None

    stage = stage_of(repo, now=dt.datetime(2028, 1, 1, tzinfo=dt.UTC))
    rows = json.loads((stage / CHALLENGE / "leaderboard" / blind / "leaderboard.json").read_text())
    assert [(r["rank"], r["participant"], r["Dice (mean)"]) for r in rows] == [
        (1, "bob", 0.93456), (2, "alice", 0.81234)]


def test_published_results_carry_no_logs(repo):
    add_result(repo, "alice", "v1", 0.8, logs={"algorithm": "Traceback: secret"})
    data = json.loads((stage_of(repo) / CHALLENGE / "results" / PHASE / "alice" / "v1.json").read_text())
    assert "logs" not in data and data["metrics"]["aggregates"]["dice"]["mean"] == 0.8


def test_ranking_uncertainty_needs_two_teams_and_three_cases(repo):
    target = repo / "build" / "stage" / CHALLENGE / "leaderboard" / PHASE / "uncertainty.json"
    add_result(repo, "alice", "v1", 0.835, cases=[0.8 + 0.01 * i for i in range(8)])
    stage_of(repo)
    assert not target.exists()  # one team
    add_result(repo, "bob", "v1", 0.635, cases=[0.6 + 0.01 * i for i in range(8)])
    add_result(repo, "bob", "v2", 0.535, cases=[0.5 + 0.01 * i for i in range(8)])  # a team counts once, by its best
    stage = stage_of(repo)
    data = json.loads(target.read_text())
    assert data["algorithms"] == ["alice", "bob"] and data["cases"] == 8 and data["samples"] == 1000
    assert data["rank_frequencies"] == {"alice": {"1": 1.0}, "bob": {"2": 1.0}}
    assert data["significance"] == [[False, True], [False, False]]  # alice beats bob in all 8 cases
    page = (stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert "## Ranking uncertainty" in page and f"[uncertainty.json]({PHASE}/uncertainty.json)" in page


def test_uncertainty_reads_the_phases_per_case_values_or_the_convention(repo):
    add_result(repo, "alice", "v1", 0.8, cases=[0.7, 0.8, 0.9])
    add_result(repo, "bob", "v1", 0.6, cases=[0.5, 0.6, 0.7])
    store = Store(repo)
    named, results = store.phase(CHALLENGE, PHASE), store.results(CHALLENGE, PHASE)
    conventional = replace(named, score_case_jsonpath=None)  # aggregates.dice.mean: case.*.dice
    unresolved = replace(conventional, score=replace(named.score, path="aggregates.dice.min"))
    for phase in (named, conventional):
        found = case_values(phase, leaderboard(phase, results), results)
        assert found is not None
        frame, spec = found.frame(), found.spec
        assert sorted(frame["algorithm"].unique()) == ["alice", "bob"] and len(frame) == 6
        assert set(frame["task"]) == {PHASE} and list(frame.columns) == ["algorithm", "case", "value", "task"]
        assert (spec.method, spec.aggregate, spec.smaller_better) == ("aggregate-then-rank", "mean", False)
    assert case_values(unresolved, leaderboard(unresolved, results), results) is None
    per_case = replace(named, scoring_method_choice="rank-then-aggregate")
    found = case_values(per_case, leaderboard(per_case, results), results)
    assert found is not None and found.spec.method == "rank-then-aggregate"  # ranked as the leaderboard ranks


def test_combined_leaderboard_page_and_command(scored_repo, capsys):
    challenge = scored_repo / "challenges" / CHALLENGE
    (challenge / "phases" / "second.yml").write_text((challenge / "phases" / f"{PHASE}.yml").read_text())
    (challenge / "challenge.yml").write_text((challenge / "challenge.yml").read_text() + (
        "combined_leaderboards:\n  - slug: overall\n    title: Overall\n    combine: mean\n    phases:\n"
        f"      - phase: {PHASE}\n      - phase: second\n"))
    import shutil
    shutil.copytree(challenge / "results" / PHASE, challenge / "results" / "second")
    (challenge / "results" / "second" / "carol" / "v1.json").unlink()  # carol is not ranked in every phase
    assert main(["--root", str(scored_repo), "leaderboard", CHALLENGE, "overall", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["rank"], r["participant"], r["combined"]) for r in rows] == [(1, "bob", 1.0), (2, "alice", 2.0)]
    assert main(["--root", str(scored_repo), "build"]) == 0
    html = (scored_repo / "build" / "site" / CHALLENGE / "leaderboard" / "overall" / "index.html").read_text()
    assert [r[:2] for r in table_rows(html)] == [["1", "bob"], ["2", "alice"]]


def test_phase_that_is_not_public_is_not_published(scored_repo):
    phase = scored_repo / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml"
    phase.write_text(phase.read_text() + "public: false\n")
    config = SiteConfig.read(scored_repo)
    pages.generate(Store(scored_repo), config.stage, config.templates, config.assets)
    assert not (config.stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").exists()
    assert not (config.stage / CHALLENGE / "results" / PHASE).exists()
    assert f"leaderboard/{PHASE}/" not in (config.stage / "index.md").read_text()


def test_results_wait_for_approval_when_auto_publish_is_off(scored_repo, capsys):
    phase = scored_repo / "challenges" / CHALLENGE / "phases" / f"{PHASE}.yml"
    phase.write_text(phase.read_text() + "auto_publish_new_results: false\n")
    approvals = scored_repo / "challenges" / CHALLENGE / "approvals" / f"{PHASE}.yml"
    approvals.parent.mkdir()
    approvals.write_text("- alice/v1\n- carol/v1\n")
    config = SiteConfig.read(scored_repo)
    pages.generate(Store(scored_repo), config.stage, config.templates, config.assets)
    board = json.loads((config.stage / CHALLENGE / "leaderboard" / PHASE / "leaderboard.json").read_text())
    assert [r["participant"] for r in board] == ["alice", "carol"]  # bob's better result awaits approval
    assert not (config.stage / CHALLENGE / "results" / PHASE / "bob").exists()
    approvals.write_text("- alice/v1\n- not an entry\n")
    assert main(["--root", str(scored_repo), "check"]) == 1
    assert f"{approvals}:2: [1]: 'not an entry' is not participant/id" in capsys.readouterr().out


def test_navigation_names_challenges_and_follows_phase_order(scored_repo):
    phases = scored_repo / "challenges" / CHALLENGE / "phases"
    (phases / "new-scanner.yml").unlink(missing_ok=True)  # only the two phases whose dates this test sets
    text = (phases / f"{PHASE}.yml").read_text()
    (phases / "a-late-phase.yml").write_text(text.replace("2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z")
                                             .replace("title: Final test", "title: Late phase"))
    config = SiteConfig.read(scored_repo)
    nav = json.loads((stage_of(scored_repo) / ".nav.json").read_text())
    assert nav[0] == "index.md"
    assert next(e for e in nav if isinstance(e, dict) and "Ellipsoid Segmentation" in e) == {"Ellipsoid Segmentation": [
        f"{CHALLENGE}/index.md", f"{CHALLENGE}/submit.md",
        {"Leaderboards": [{"Final test": f"{CHALLENGE}/leaderboard/{PHASE}.md"},
                          {"Late phase": f"{CHALLENGE}/leaderboard/a-late-phase.md"}]}]}
    # The navigation is pruned to the page's own section: read the phase's leaderboard page.
    html = (build_site(config) / CHALLENGE / "leaderboard" / PHASE / "index.html").read_text()
    labels = [" ".join(m.split()) for m in re.findall(r'class="md-ellipsis">(.*?)</span>', html, flags=re.S)]
    assert "Ellipsoid Segmentation" in labels and "ellipsoid-segmentation" not in " ".join(labels).lower().split()
    assert labels.index("Final test") < labels.index("Late phase")


def test_challenge_page_shows_each_phases_rules_from_its_file(scored_repo):
    edit_yaml(phase_file(scored_repo), submission_limit_period=7, count_failed_submissions=True, blind=True,
              algorithm_resources={"memory": "2g", "cpus": 2, "gpus": 1, "output": "512m"}, inference_mode="per-case")
    edit_yaml(scored_repo / "challenges" / CHALLENGE / "challenge.yml", registration="required")
    page = (stage_of(scored_repo) / CHALLENGE / "index.md").read_text()
    assert "<!-- phases -->" not in page and "## Phases" in page and "### Final test" in page
    section = page.split("### Final test", 1)[1].split("\n### ", 1)[0]  # this phase's table, not the others'
    rows = dict(re.findall(r"^\| (\w[\w ]*) \| (.*) \|$", section, flags=re.M))
    assert rows["Submissions"].startswith("open from 2026-01-01 00:00 UTC until 2027-12-31 23:59 UTC "
                                          '<span class="countdown" data-until="2027-12-31T23:59:59+00:00">')
    assert rows["Limit"] == "3 submissions per 7 days per participant (failed ones count too)"
    registration = f"required: open a pull request adding `challenges/{CHALLENGE}/registrations/"
    assert rows["Registration"].startswith(registration)
    assert rows["Algorithm"] == "2 CPU, 2 GiB memory, 1 GPU, 120 s per case, 512 MiB of output; no network"
    assert rows["Results"] == "scores withheld until submissions close"
    assert rows["Ranking"].startswith("results are ordered on Dice (mean) alone (higher is better)")
    assert f"`challenges/{CHALLENGE}/submissions/{PHASE}/<your GitHub login>/<id>.yml`" in page
    image = "        image: ghcr\\.io/<you>/<algorithm>@sha256:<64 hex digits> "
    assert re.search(rf"^        phase: {PHASE} +# .*\n{image}", page, flags=re.M)  # each form: test_facts.py


def declared_prose() -> list[str]:
    """Every description of every file kind's fields, and of the runner's measurements, on one line."""
    def found(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            if isinstance(node.get("description"), str):
                yield " ".join(node["description"].split())
            for value in node.values():
                yield from found(value)
        elif isinstance(node, list):
            for value in node:
                yield from found(value)
    return [*found(json_schemas()), *(m.meaning for m in MEASUREMENTS)]


def test_the_built_field_reference_shows_the_declared_prose_as_text(repo):
    """Placeholders such as registrations/<login>.yml were raw HTML to Markdown, and vanished from the page."""
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    built = (build_site(config) / "reference" / "index.html").read_text()
    shown = html.unescape(re.sub(r"<[^>]+>", "", built))
    prose = declared_prose()
    placeholders = {p for text in prose for p in re.findall(r"<[^<>]+>", text.replace("`", ""))}
    assert len(placeholders) >= 10 and {"<login>", "<challenge>", "<phase>", "<64 hex digits>"} <= placeholders
    assert [p for p in placeholders if p not in shown] == []
    written = html.unescape((config.stage / "reference.md").read_text())  # the prose the page holds, as text
    lost = [text for text in prose if text in written and text.replace("`", "") not in shown]
    assert lost == []  # nothing else taken as Markdown either (a * for emphasis)
    assert '<td><code class="field-name">auto_publish_new_results</code></td>' in html.unescape(built)  # on one line:
    assert ".md-typeset code.field-name { white-space: nowrap; }" in (config.assets / "challenge.css").read_text()


def test_the_field_reference_and_json_schemas_are_published(scored_repo):
    stage = stage_of(scored_repo)
    assert (stage / "reference.md").read_text().startswith("# Field reference")
    schema = json.loads((stage / "schemas" / "phase.schema.json").read_text())
    assert schema["$id"] == "phase.schema.json" and "score_jsonpath" in schema["properties"]
    assert "reference.md" in json.loads((stage / ".nav.json").read_text())


def test_a_challenge_without_its_own_page_shows_its_name_and_headline_as_text(repo):
    """A listing's name and headline (anyone may propose one) reach its fallback page and every page's
    navigation as text, never as markup."""
    challenge = repo / "challenges" / CHALLENGE
    (challenge / "index.md").unlink()
    edit_yaml(challenge / "challenge.yml", name="R&D <img src=x onerror=alert(1)></title><script>alert(3)</script>",
              headline="[x](javascript:alert(1)) <script>alert(2)</script>")
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    site = build_site(config)
    for page in (site / CHALLENGE / "index.html", site / "index.html"):
        text = page.read_text()
        assert "<img src=x" not in text and "<script>alert" not in text and 'href="javascript:' not in text, page
    assert "R&amp;D &lt;img src=x onerror=alert(1)&gt;" in (site / "index.html").read_text()  # the navigation


def test_the_leaderboard_shows_the_algorithms_mean_running_time_where_results_show_it(scored_repo):
    def running_time(stage: Path) -> str | None:
        found = re.search(r"^\*\*Algorithm running time\*\*: (.*?) \(", (
            stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text(), flags=re.M)
        return found and found.group(1)
    assert running_time(stage_of(scored_repo)) == "1.0 s on average over 3 succeeded results"
    edit_yaml(phase_file(scored_repo), blind=True)  # measurements withheld until it closes: their mean too
    edit_yaml(scored_repo / "challenges" / CHALLENGE / "challenge.yml", publish_key=new_identity()[1])
    assert running_time(stage_of(scored_repo)) is None


@pytest.mark.parametrize("shown", [True, False])
def test_a_comment_and_a_link_are_published_where_the_phase_shows_them(repo, shown):
    edit_yaml(phase_file(repo), allow_submission_comments=True, display_submission_comments=shown,
              supplementary_url_choice="optional", supplementary_url_label="Preprint", show_supplementary_url=shown)
    add_result(repo, "alice", "v1", 0.8)
    submission = repo / "challenges" / CHALLENGE / "submissions" / PHASE / "alice" / "v1.yml"
    edit_yaml(submission, comment="fold 2", supplementary_url="https://arxiv.org/abs/2601.00001")
    stage = stage_of(repo)
    record = json.loads((stage / CHALLENGE / "results" / PHASE / "alice" / "v1.json").read_text())
    details = record["details"] or {}  # details the phase shows none of are left out
    board = (stage / CHALLENGE / "leaderboard" / f"{PHASE}.md").read_text()
    assert (details.get("comment"), details.get("supplementary_url")) == (
        ("fold 2", "https://arxiv.org/abs/2601.00001") if shown else (None, None))
    assert ("[Preprint](https://arxiv.org/abs/2601.00001)" in board) == shown
    viewer = (stage / CHALLENGE / "results" / PHASE / "view.md").read_text()
    assert 'data-supplementary-url="Preprint"' in viewer


def test_the_field_reference_kept_between_builds_is_the_one_made_now(repo, tmp_path, monkeypatch):
    from runner.site.reference import reference_markdown

    config, made = SiteConfig.read(repo), []
    real = pages.reference_markdown
    monkeypatch.setattr(pages, "reference_markdown", lambda: made.append(1) or real())
    for _ in range(2):
        pages.generate(Store(repo), config.stage, config.templates, config.assets, cache=tmp_path / "page-cache")
    assert made == [1]  # made once, then read back
    assert (config.stage / "reference.md").read_text() == reference_markdown()
    for name, schema in json_schemas().items():
        assert json.loads((config.stage / "schemas" / f"{name}.schema.json").read_text()) == schema
