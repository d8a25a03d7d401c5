"""The L2L-style few-shot challenge: its example algorithms run on the real engine over the hidden
task instances, scored per instance and per task, ranked per task then averaged; and its
registration deadline, apart from the submission deadline, in the pull-request rules."""

from __future__ import annotations

import csv
import datetime as dt
from statistics import fmean

import pytest

from runner.pullrequests.rules import Change, Proposal, check
from runner.ranking.leaderboard import leaderboard
from runner.site.facts import phase_facts
from runner.site.pages import ranking_method
from runner.tree.loading import load_challenge
from runner.tree.located import ModelError
from runner.tree.schema_parse import each_problem
from runner.tree.store import Store
from tests.evaluation.test_challenges_examples import make_data, run_example

SLUG = "few-shot-classification"
UTC = dt.UTC


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return make_data(SLUG, tmp_path_factory.mktemp("l2l-data"))


def instances(data_root, phase: str) -> dict[str, tuple[str, int]]:
    with open(data_root / SLUG / phase / "ground-truth" / "instances.csv", newline="") as handle:
        return {row["instance"]: (row["task"], int(row["shots"])) for row in csv.DictReader(handle)}


@pytest.mark.docker
def test_validation_runs_one_instance_per_run(repo, engine, base_image, data_root):
    result = run_example(repo, SLUG, "cosine-prototypes", engine=engine, base=base_image, data_root=data_root)
    assert result.status == "succeeded", result.error
    index = instances(data_root, "validation")
    assert set(result.algorithm.cases) == set(index) == set(result.metrics["case"])  # each instance its own run
    accuracy = result.metrics["aggregates"]["task_accuracy"]["blobs"]
    assert accuracy == pytest.approx(fmean(result.metrics["case"][i]["accuracy"] for i in index))  # one per N
    assert 0.5 < accuracy <= 1


@pytest.mark.docker
def test_final_phase_scores_instances_tasks_and_ranks_per_task(repo, engine, base_image, data_root):
    results = {name: run_example(repo, SLUG, name, engine=engine, base=base_image, data_root=data_root)
               for name in ("prototypes", "nearest-neighbour", "needs-four-shots")}
    good = results["prototypes"]
    assert good.status == "succeeded", good.error
    index = instances(data_root, "final")
    assert set(good.metrics["case"]) == set(index) and len(index) == 16
    # the task's accuracy: per N the mean over its instances, then the mean over N = 3..10
    for task in ("glyphs", "textures"):
        per_n = {n: fmean(good.metrics["case"][i]["accuracy"] for i, (t, m) in index.items() if t == task and m == n)
                 for n in range(3, 11)}
        assert good.metrics["aggregates"]["task_accuracy"][task] == pytest.approx(fmean(per_n.values()))
        assert good.metrics["aggregates"]["shot_accuracy"][task]["n3"] == pytest.approx(per_n[3])
    # the runner fed the 16 instances in 4 runs (cases_per_run: 4) and measured each run
    runs = good.algorithm.cases
    assert len(runs) == 4 and sorted(i for run in runs.values() for i in run["cases"]) == sorted(index)
    assert next(iter(runs)) == "glyphs-n03-0..glyphs-n06-0"
    assert all(run["wall_time_s"] > 0 and run["peak_memory_bytes"] > 0 for run in runs.values())

    failed = results["needs-four-shots"]
    assert failed.status == "failed"
    assert failed.error == ("Algorithm failed on cases glyphs-n03-0 to glyphs-n06-0: ValueError: needs at least 4 "
                            "support images per class, got 3")
    assert list(failed.algorithm.cases) == ["glyphs-n03-0..glyphs-n06-0"]  # the first run failed: no more ran

    store = Store(repo)
    phase = store.phase(SLUG, "final")
    board = leaderboard(phase, store.results(SLUG, "final"))
    weak = results["nearest-neighbour"].metrics["aggregates"]["task_accuracy"]
    strong = good.metrics["aggregates"]["task_accuracy"]
    assert strong["glyphs"] > weak["glyphs"] and strong["textures"] > weak["textures"]
    assert [(r.participant, r.rank, r.rank_score) for r in board.rows] == [("alice", 1, 1.0), ("organizers", 2, 2.0)]
    assert ranking_method(phase).startswith("each result is ranked on every ranked column separately (Glyphs "
                                            "accuracy: higher is better; Textures accuracy: higher is better)")


# --- the registration deadline -------------------------------------------------------------------------


def registration(repo, login: str, *, now: dt.datetime):
    path = f"challenges/{SLUG}/registrations/{login}.yml"
    body = b"name: Alice Example\naffiliation: Somewhere\naccept_rules: true\n"
    return check(Store(repo), Proposal(login, (Change(path, "added"),), lambda _: body), now=now)


def submission(repo, login: str, *, now: dt.datetime):
    path = f"challenges/{SLUG}/submissions/final/{login}/v1.yml"
    body = f"phase: final\nimage: ghcr.io/{login}/fsl@sha256:{'a' * 64}\n".encode()
    return check(Store(repo), Proposal(login, (Change(path, "added"),), lambda _: body), now=now)


def test_registration_closes_before_submissions_do(repo):
    closes = Store(repo).challenge(SLUG).registration_closes_at
    assert closes == dt.datetime(2027, 6, 30, 23, 59, 59, tzinfo=UTC) or closes.date() == dt.date(2027, 6, 30)
    before, after = closes - dt.timedelta(days=2), closes + dt.timedelta(days=3)
    assert registration(repo, "alice", now=before).ok
    late = registration(repo, "alice", now=after)
    assert late.problems == (f"challenge '{SLUG}': registration closed on 2027-06-30 23:59 UTC (3 days ago)",)

    folder = repo / "challenges" / SLUG / "registrations"
    folder.mkdir()
    (folder / "alice.yml").write_text("name: Alice Example\naccept_rules: true\n")  # merged in time
    assert submission(repo, "alice", now=after).ok  # registered in time: may still submit
    refused = submission(repo, "bob", now=after).problems
    assert refused == ("challenge 'Cross-Domain Few-Shot Classification (L2L-style)' requires registration, and "
                       "registration closed on 2027-06-30 23:59 UTC (3 days ago): only participants registered "
                       "before then may submit",)


def test_the_challenge_page_shows_the_registration_deadline(repo):
    store = Store(repo)
    challenge, phase = store.challenge(SLUG), store.phase(SLUG, "final")
    facts = phase_facts(challenge, phase, parents={}, ranking="", now=dt.datetime(2027, 1, 1, tzinfo=UTC))
    deadline = "by 2027-06-30 23:59 UTC (registration closes then, apart from the submission deadline)"
    assert deadline in facts.registration
    assert facts.window.endswith("until 2027-09-07 23:59 UTC")


def test_a_registration_deadline_needs_registration(tmp_path):
    path = tmp_path / "c" / "challenge.yml"
    path.parent.mkdir()
    path.write_text("name: A challenge\nheadline: One line\nregistration_closes_at: 2027-06-30\n")
    with pytest.raises(ModelError) as info:
        load_challenge(path)
    assert [str(p) for p in each_problem(info.value)] == [
        f"{path}:3: registration_closes_at: closes a registration nobody needs: set registration: required"]
