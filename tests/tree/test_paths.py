"""The folder layout's rules: which of a challenge's files are its organizer's pages."""

from __future__ import annotations

import pytest

from runner.tree.paths import organizer_page


@pytest.mark.parametrize(("rel", "page"), [
    ("index.md", True), ("submit.md", True), ("guides/faq.md", True), ("figures/Overview.PNG", True),
    ("rules.pdf", True), ("challenge.yml", False), ("teams.yml", False), ("phases/final.yml", False),
    ("evaluation/README.md", False), ("data/cases.csv", False), ("examples/notes.md", False),
    ("reports/final/alice/report.pdf", False), ("submissions/final/alice/paper.pdf", False),
    ("results/final/alice/v1.json", False), ("guides/script.py", False), ("exclusions/README.md", False),
    ("data-access/notes.md", False), ("leaderboard/rules.md", False), ("leaderboards.md", True),
])
def test_an_organizers_page_is_a_page_file_outside_the_data_folders(rel, page):
    assert organizer_page(rel) is page
