"""A leaderboard as a table: its columns, its rows as plain records, CSV, and number formatting.

What the site's downloads and snapshots, `challenge leaderboard` and the pull-request comments
share, so a value reads the same everywhere.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from runner.ranking.leaderboard import Leaderboard
from runner.tree.model import RANK_THEN_AVERAGE
from runner.tree.phase_model import Phase

RANK_SCORE = "mean rank / results"  # FLARE's rank-then-average value, the number its ranks order


def fmt(value: float | None, places: int) -> str:
    return "–" if value is None else f"{value:.{places}f}"


def fields(phase: Phase) -> list[str]:
    """The columns of the table's downloads: each value followed by its error where it has one."""
    values = []
    for column in phase.columns:
        values += [column.title, f"{column.title} error"] if column.error_path else [column.title]
    return ["rank", *_rank_score(phase), "participant", "submission", *values, "submitted"]


def _rank_score(phase: Phase) -> list[str]:
    """The rank score is its own column where no other column shows what the ranks order."""
    return [RANK_SCORE] if phase.scoring_method_choice == RANK_THEN_AVERAGE else []


def records(board: Leaderboard, limit: int | None = None) -> list[dict[str, Any]]:
    """The leaderboard's rows (its first `limit`) as plain data, unrounded, for downloads, snapshots and
    `challenge leaderboard`."""
    out, rank_score, columns = [], _rank_score(board.phase), board.phase.columns  # once: history has many rows
    for row in board.rows[:limit]:
        record: dict[str, Any] = {"rank": row.rank, **dict.fromkeys(rank_score, row.rank_score),
                                  "participant": row.participant, "submission": row.submission}
        for column, value, error in zip(columns, row.values, row.errors):
            record[column.title] = value
            if column.error_path:
                record[f"{column.title} error"] = error
        out.append({**record, "submitted": row.created_at})
    return out


def to_csv(rows: list[dict[str, Any]], header: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
