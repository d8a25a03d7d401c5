"""The two protocols' rankings on phase records, with every expected rank computed by hand.

FLARE (../shared/reference/README.md, "FLARE"; FLARE21's ranking scheme): in each case every team
is ranked on each metric (DSC and NSD larger better, time and GPU memory smaller better), a failed
case taking the worst value; a team's ranks are averaged and divided by the number of teams.

L2L (the MICCAI Learn2Learn challenge's rules): accuracy per task (averaged over N before it comes
here), a ranking per task, the rankings averaged, "so as not to implicitly weigh any task higher".
That is grand-challenge's mean of per-column ranks with one column per task.
"""

from __future__ import annotations

import pytest

from runner.ranking.leaderboard import case_metric, leaderboard
from runner.ranking.tables import RANK_SCORE, records
from runner.site.pages import METHOD_NAMES, ranking_method
from runner.tree.loading import load_phase
from runner.tree.located import ModelError
from runner.tree.phase_model import Column, Phase, RankingMetric
from runner.tree.result_model import Result, RunRecord
from runner.tree.schema_parse import each_problem

WHEN = "2026-05-0{}T00:00:00+00:00"


def flare_phase(display: str = "all") -> Phase:
    metrics = (RankingMetric(path="case.*.dsc", title="DSC"), RankingMetric(path="case.*.nsd", title="NSD"),
               RankingMetric(path="runner.cases.*.wall_time_s", title="Running time", order="asc"),
               RankingMetric(path="runner.cases.*.gpu_memory_max_bytes", title="GPU memory", order="asc"))
    return Phase(challenge="c", slug="test", title="Test", submission_kind="algorithm",
                 score=Column(path="aggregates.dsc.mean", title="DSC"), scoring_method_choice="rank-then-average",
                 ranking_metrics=metrics, result_display_choice=display)


def flare_result(team: str, cases: dict[str, tuple], day: int = 1) -> Result:
    """cases: case -> (dsc, nsd, seconds, gpu bytes); None leaves a value out (a failed case)."""
    metrics = {"case": {c: {"dsc": v[0], "nsd": v[1]} for c, v in cases.items()}, "aggregates": {"dsc": {"mean": .5}}}
    runs = {f"{c}.nii.gz": {"wall_time_s": v[2], "gpu_memory_max_bytes": v[3]} for c, v in cases.items()}
    return Result(challenge="c", phase="test", participant=team, submission=f"{team}{day}", status="succeeded",
                  created_at=WHEN.format(day), started_at=WHEN.format(day), finished_at=WHEN.format(day),
                  metrics=metrics, algorithm=RunRecord(image="i", cases=runs))


# case c1: DSC A .9 B .8 C .7 -> 1 2 3; NSD .8 .9 .7 -> 2 1 3; time 10 20 5 -> 2 3 1; GPU 2 1 3 -> 2 1 3
# case c2: DSC .85 .85 .6 -> 1 1 3 (tie: min); NSD .7 .8 .9 -> 3 2 1; C failed: no time, no GPU memory,
#          so time 12 11 - -> 2 1 3 and GPU 2 3 - -> 1 2 3
# sums: A 7 + 7 = 14, B 7 + 6 = 13, C 10 + 10 = 20 over 8 ranks; divided by 8 and by 3 teams:
# A 0.583333, B 0.541667, C 0.833333 -> B 1, A 2, C 3
TEAMS = {"A": {"c1": (.9, .8, 10, 2), "c2": (.85, .7, 12, 2)},
         "B": {"c1": (.8, .9, 20, 1), "c2": (.85, .8, 11, 3)},
         "C": {"c1": (.7, .7, 5, 3), "c2": (.6, .9, None, None)}}


def test_flare_rank_then_average_by_hand():
    board = leaderboard(flare_phase(), [flare_result(team, cases) for team, cases in TEAMS.items()])
    assert [(r.participant, r.rank) for r in board.rows] == [("B", 1), ("A", 2), ("C", 3)]
    assert [r.rank_score for r in board.rows] == pytest.approx([13 / 8 / 3, 14 / 8 / 3, 20 / 8 / 3])
    assert records(board)[0][RANK_SCORE] == pytest.approx(13 / 24)


def test_a_case_a_team_lacks_counts_worst_in_every_metric():
    # C has no c2 at all: worst in all four metrics there (3 3 3 3), where before it won NSD, so in
    # c2 NSD is now B 1, A 2: A 7 + (1 + 2 + 2 + 1) = 13, B 7 + (1 + 1 + 1 + 2) = 12, C 10 + 12 = 22
    teams = {**TEAMS, "C": {"c1": TEAMS["C"]["c1"]}}
    board = leaderboard(flare_phase(), [flare_result(team, cases) for team, cases in teams.items()])
    assert [(r.participant, r.rank) for r in board.rows] == [("B", 1), ("A", 2), ("C", 3)]
    assert [r.rank_score for r in board.rows] == pytest.approx([12 / 24, 13 / 24, 22 / 24])


def test_equal_teams_share_a_rank_and_a_result_with_nothing_is_unranked():
    teams = {"A": TEAMS["A"], "twin": TEAMS["A"], "empty": {}}
    board = leaderboard(flare_phase(), [flare_result(team, cases) for team, cases in teams.items()])
    assert [(r.participant, r.rank) for r in board.rows] == [("A", 1), ("twin", 1), ("empty", None)]
    assert board.rows[0].rank_score == pytest.approx(1 / 2)  # rank 1 everywhere, 2 teams ranked


def test_best_display_renormalises_by_the_teams_left():
    # B's second result is worse than its first; keeping each team's best leaves A, B and C
    worse_b = {"c1": (.1, .1, 99, 9), "c2": (.1, .1, 99, 9)}
    results = [flare_result(t, c) for t, c in TEAMS.items()] + [flare_result("B", worse_b, day=2)]
    board = leaderboard(flare_phase("best"), results)
    assert [(r.participant, r.submission, r.rank) for r in board.rows] == [("B", "B1", 1), ("A", "A1", 2),
                                                                          ("C", "C1", 3)]
    assert board.rows[0].rank_score == pytest.approx(13 / 24)  # three teams again, not four results


def test_case_metric_names_cases_up_to_the_first_dot():
    document = {"runner": {"cases": {"case-001.nii.gz": {"wall_time_s": 2.5}, "case-002.nii.gz": {}}},
                "case": {"case-001": {"dsc": 0.9}}}
    assert case_metric(document, "runner.cases.*.wall_time_s")[0] == ("case-001", 2.5)
    assert case_metric(document, "runner.cases.*.wall_time_s")[1][0] == "case-002"
    assert case_metric(document, "case.*.dsc") == (("case-001", 0.9),)
    assert case_metric(document, "nothing.*.dsc") == ()


def test_flare_method_in_one_sentence():
    sentence = ranking_method(flare_phase())
    assert METHOD_NAMES["rank-then-average"] == "Rank then average (FLARE)"
    assert sentence.startswith("in every case each result is ranked on DSC (higher is better), NSD (higher is "
                               "better), Running time (lower is better) and GPU memory (lower is better), a failed "
                               "or missing case ranking last; a result's mean rank divided by the number of "
                               "results ranked orders them")


# --- L2L -------------------------------------------------------------------------------------

TASKS = ("glyphs", "textures", "spots")
# accuracy per task (each already the mean over N = 3..10):
#           glyphs textures spots   ranks      mean rank   mean accuracy
# P          .80    .60     .70     1  3  3    7/3         .700
# Q          .75    .65     .72     3  2  2    7/3         .7067  (best mean accuracy)
# R          .70    .70     .60     4  1  4    9/3         .667
# S          .80    .55     .75     1  4  1    6/3         .700
# rank then average: S 1, P 2, Q 2, R 4 (Q would win on the mean accuracy: tasks are not weighed)
L2L = {"P": (.80, .60, .70), "Q": (.75, .65, .72), "R": (.70, .70, .60), "S": (.80, .55, .75)}


def l2l_phase(**options) -> Phase:
    columns = tuple(Column(path=f"aggregates.task_accuracy.{t}", title=t) for t in TASKS[1:])
    mean = Column(path="aggregates.task_accuracy.mean", title="Mean accuracy", exclude_from_ranking=True)
    return Phase(challenge="c", slug="final", title="Final", submission_kind="algorithm",
                 score=Column(path=f"aggregates.task_accuracy.{TASKS[0]}", title=TASKS[0]),
                 extra_results_columns=(*columns, mean), scoring_method_choice="mean", **options)


def l2l_result(team: str, accuracies: tuple, day: int = 1) -> Result:
    tasks = dict(zip(TASKS, accuracies))
    metrics = {"aggregates": {"task_accuracy": {**tasks, "mean": sum(accuracies) / len(accuracies)}}}
    return Result(challenge="c", phase="final", participant=team, submission=f"{team}{day}", status="succeeded",
                  created_at=WHEN.format(day), started_at=WHEN.format(day), finished_at=WHEN.format(day),
                  metrics=metrics)


def test_l2l_ranks_each_task_then_averages_by_hand():
    board = leaderboard(l2l_phase(), [l2l_result(team, acc) for team, acc in L2L.items()])
    assert [(r.participant, r.rank) for r in board.rows] == [("S", 1), ("P", 2), ("Q", 2), ("R", 4)]
    assert [r.rank_score for r in board.rows] == pytest.approx([2, 7 / 3, 7 / 3, 3])


def test_l2l_final_phase_counts_the_best_of_the_last_three():
    # S's first submission is its best (rank 1 above), but three weaker ones followed; only the last
    # three compete, and its best of them, S3 (.55, .52, .50), is last on every task:
    #      glyphs textures spots   mean rank
    # P     1      3       2       2
    # Q     2      2       1       5/3
    # R     3      1       3       7/3
    # S3    4      4       4       4        -> Q 1, P 2, R 3, S 4
    later = [(.50, .50, .50), (.55, .52, .50), (.40, .40, .40)]
    results = [l2l_result(team, acc) for team, acc in L2L.items()]
    results += [l2l_result("S", acc, day=2 + i) for i, acc in enumerate(later)]
    board = leaderboard(l2l_phase(best_of_last=3, result_display_choice="best"), results)
    assert [(r.participant, r.submission, r.rank) for r in board.rows] == [("Q", "Q1", 1), ("P", "P1", 2),
                                                                          ("R", "R1", 3), ("S", "S3", 4)]
    everything = leaderboard(l2l_phase(result_display_choice="best"), results)
    assert everything.rows[0].submission == "S1"  # without best_of_last its first submission still counts


# --- the choice in a phase file ------------------------------------------------------------------


def phase_problems(tmp_path, extra: str) -> list[str]:
    """Every problem load_phase reports for a minimal phase file plus `extra`, without its path."""
    path = tmp_path / "c" / "phases" / "p.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("title: P\nsubmission_kind: algorithm\nscore_jsonpath: aggregates.dsc.mean\n" + extra)
    with pytest.raises(ModelError) as info:
        load_phase(path, "c")
    return [str(p).removeprefix(f"{path}:") for p in each_problem(info.value)]


def test_a_phase_chooses_rank_then_average_with_its_metrics(tmp_path):
    path = tmp_path / "c" / "phases" / "p.yml"
    path.parent.mkdir(parents=True)
    path.write_text("title: P\nsubmission_kind: algorithm\nscore_jsonpath: aggregates.dsc.mean\n"
                    "scoring_method_choice: rank-then-average\nranking_metrics:\n"
                    "  - {path: case.*.dsc, title: DSC}\n  - {path: runner.cases.*.wall_time_s, title: Time, "
                    "order: asc, weight: 0.5}\n")
    phase = load_phase(path, "c")
    assert phase.ranking_metrics == (RankingMetric("case.*.dsc", "DSC"),
                                     RankingMetric("runner.cases.*.wall_time_s", "Time", "asc", 0.5))
    assert "Time (lower is better, weight 0.5)" in ranking_method(phase)


def test_rank_then_average_without_its_metrics_or_with_bad_paths_is_one_line_each(tmp_path):
    assert phase_problems(tmp_path, "scoring_method_choice: rank-then-average\n") == [
        "4: scoring_method_choice: rank-then-average ranks per-case metrics: list them in ranking_metrics, "
        "e.g. {path: case.*.dsc, title: DSC, order: desc}"]
    assert phase_problems(tmp_path, "scoring_method_choice: rank-then-average\nranking_metrics:\n"
                                    "  - {path: aggregates.dsc.mean, title: DSC}\n") == [
        "6: ranking_metrics[0].path: 'aggregates.dsc.mean' must hold exactly one * standing for the case, "
        "e.g. case.*.dsc"]
    assert phase_problems(tmp_path, "ranking_metrics:\n  - {path: case.*.dsc, title: DSC}\n") == [
        "4: ranking_metrics: only scoring_method_choice rank-then-average ranks on these; absolute ranks the "
        "leaderboard's columns"]
    batched = phase_problems(tmp_path, "scoring_method_choice: rank-then-average\ninference_mode: per-case\n"
                                       "cases_per_run: 4\nranking_metrics:\n"
                                       "  - {path: runner.cases.*.wall_time_s, title: Time}\n")
    assert batched == ["8: ranking_metrics[0].path: the runner measures each run, and a run here covers 4 cases: "
                       "rank per case with cases_per_run: 1"]


def test_self_reported_metrics_come_as_a_file(tmp_path):
    assert phase_problems(tmp_path, "self_reported: true\n") == [
        "4: self_reported: self-reported metrics are submitted as a file: set submission_kind: predictions"]
