"""Who a container runs as: the user its image declares, resolved to numbers, never root."""

from __future__ import annotations

import pytest

from runner.execution.sandbox import NOBODY, RunAs
from runner.execution.users import RefusedUser, run_as

PASSWD = """root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
user:x:999:998::/home/user:/bin/sh
toor:x:0:0::/root:/bin/sh
broken line
twin:x:1001:1001::/home/twin:/bin/sh
twin:x:1002:1002::/home/other:/bin/sh
"""
GROUP = """root:x:0:
user:x:998:
extra:x:997:user
docker:x:999:user
"""


def declared(user: str) -> RunAs:
    return run_as(user, passwd=PASSWD, group=GROUP)


@pytest.mark.parametrize("user", ["", "  ", "root", "0", "0:0", "root:user", "toor", "toor:user", "0:998"])
def test_root_however_named_runs_as_nobody(user):
    assert declared(user) == RunAs(user=NOBODY, groups=(), home="/tmp")


def test_a_declared_user_runs_as_its_numbers_and_keeps_the_hidden_datas_group():
    assert declared("user") == RunAs(user="999:998", groups=("65534",), home=None)
    assert declared("999") == RunAs(user="999:998", groups=("65534",), home=None)


def test_the_groups_the_image_lists_for_its_user_are_not_given():
    """/etc/group puts `user` into `docker` (999 here, maybe the host's docker group): only numbers reach the engine."""
    assert declared("user").groups == ("65534",)


@pytest.mark.parametrize("user, expected", [
    ("user:extra", "999:997"), ("user:997", "999:997"), ("user:4000", "999:4000"),
    ("user:root", "999:65534"), ("user:0", "999:65534"), ("4242", "4242:65534"), ("4242:4242", "4242:4242"),
    ("nobody", "65534:65534"),
])
def test_groups_by_name_or_number_and_never_root(user, expected):
    who = declared(user)
    assert who.user == expected
    assert who.groups == (() if expected.endswith(":65534") else ("65534",))


def test_the_first_entry_of_a_name_wins_as_with_the_engine():
    assert declared("twin").user == "1001:1001"


@pytest.mark.parametrize("user, message", [
    ("ghost", "the image's USER 'ghost' is not in its /etc/passwd"),
    ("user:ghosts", "the image's USER group 'ghosts' is not in its /etc/group"),
    ("99999999999", "the image's USER '99999999999' is not in its /etc/passwd"),
    ("user:a:b", "the image's USER group 'a:b' is not in its /etc/group"),
    ("١٢٣", "the image's USER '١٢٣' is not in its /etc/passwd"),  # digits, but not ASCII ones
])
def test_names_the_image_does_not_define_are_refused(user, message):
    with pytest.raises(RefusedUser) as refused:
        declared(user)
    assert str(refused.value) == message


def test_without_passwd_or_group_files_only_numbers_resolve():
    assert run_as("1000:1000", passwd=None, group=None).user == "1000:1000"
    with pytest.raises(RefusedUser):
        run_as("user", passwd=None, group=None)


@pytest.mark.parametrize("line", ["65534:x:0:", "  65534:x:0:", "4000:x:zz:", "0:x:0:"])
@pytest.mark.parametrize("user", ["", "user", "4242:4000"])
def test_a_group_named_by_a_number_is_refused_whoever_the_image_runs_as(line, user):
    """The engine looks a group up by name first: `65534:x:0:` would give every run root's group."""
    with pytest.raises(RefusedUser) as refused:
        run_as(user, passwd=PASSWD, group=GROUP + line + "\n")
    assert str(refused.value).startswith(f"the image's /etc/group names a group '{line.split(':')[0].strip()}'")
