"""Who may submit: teams.yml and registrations/<login>.yml, declared once like every other file kind.

The pull-request rules read them to decide who may submit under which folder, and `challenge
check` validates them, so a malformed teams.yml or a registration that does not accept the rules
is caught when it is committed, not when a participant's pull request meets it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import ConfigDict, RootModel

from runner.tree.loading import participant_yaml
from runner.tree.located import load_yaml
from runner.tree.schema_parse import parse
from runner.tree.schema_types import AcceptRules, Login, TeamName, Text, meta


@dataclass(frozen=True, kw_only=True)
class Registration:
    """registrations/<login>.yml: who registers, and their acceptance of the challenge's rules.
    A participant adds it by pull request; an organizer merges it."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")
    name: Annotated[Text, meta("The participant's full name.", max_length=200)]
    affiliation: Annotated[Text, meta("Their institution or company.", max_length=200)] = ""
    accept_rules: Annotated[AcceptRules, meta("true: registering means accepting the challenge's rules.")]


class TeamsFile(RootModel[dict[TeamName, Annotated[tuple[Login, ...], meta("The team's members' GitHub logins.")]]]):
    """teams.yml: each team's name (the folder its members submit under) and its members' GitHub
    logins, compared without case."""

    # A bad name is an error in an editor too; built on first use, not on every import of the package.
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False}, defer_build=True)


def load_registration(path: Path) -> Registration:
    return parse(participant_yaml(path), Registration)


def load_teams(path: Path) -> dict[str, frozenset[str]]:
    """teams.yml: team name -> the GitHub logins of its members, lowercased (none if no file)."""
    if not path.is_file():
        return {}
    teams = parse(load_yaml(path), TeamsFile).root
    return {name: frozenset(login.lower() for login in logins) for name, logins in teams.items()}
