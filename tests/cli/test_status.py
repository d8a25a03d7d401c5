"""`challenge status`: a participant learns what the rules would say before sending a pull request."""

from __future__ import annotations

import datetime as dt

from runner.cli import main
from tests.helpers import CHALLENGE, PHASE, edit_yaml, phase_file, write_result, write_submission


def status(repo, capsys, participant: str = "alice") -> list[str]:
    assert main(["--root", str(repo), "status", CHALLENGE, PHASE, "--participant", participant]) == 0
    return capsys.readouterr().out.splitlines()


def test_submissions_left_and_when_the_next_fits(repo, capsys):
    now = dt.datetime.now(dt.UTC)
    assert status(repo, capsys) == ["phase 'Final test' takes submissions now",
                                    "phase 'Final test' allows 3 submissions per day; 'alice' has 0 evaluated and 0 "
                                    "pending: 3 left"]
    write_result(repo, "alice", "v1", created=now - dt.timedelta(hours=3))
    write_result(repo, "alice", "v2", status="failed", created=now - dt.timedelta(hours=2))  # failed: not counted
    write_submission(repo, "alice", "v3", "ghcr.io/alice/a@sha256:" + "a" * 64)  # pending: counted
    assert status(repo, capsys)[1].endswith("'alice' has 1 evaluated and 1 pending: 1 left")
    write_result(repo, "alice", "v4", created=now - dt.timedelta(hours=1))
    line = status(repo, capsys)[1]
    assert line.startswith("phase 'Final test' allows 3 submissions per day and 'alice' has 2 evaluated and 1 "
                           "pending; you can submit again on ")  # when v1 is a day old
    assert (now + dt.timedelta(hours=21)).strftime("%Y-%m-%d %H:") in line
    assert main(["--root", str(repo), "status", CHALLENGE, PHASE, "--participant", "bob"]) == 0
    said = capsys.readouterr()
    assert said.out.splitlines()[1].endswith("'bob' has 0 evaluated and 0 pending: 3 left")
    assert "note: 'bob' has no submission in challenge" in said.err  # a typo would read as a clean slate
    main(["--root", str(repo), "status", CHALLENGE, PHASE, "--participant", "alice"])
    assert "note:" not in capsys.readouterr().err


def test_a_hidden_phase_says_it_takes_no_submissions(repo, capsys):
    edit_yaml(phase_file(repo), public=False)
    assert status(repo, capsys)[0] == "phase 'Final test' is not public (public: false): it takes no submissions"
