"""Users holding a role in a team, for the role tests of every app's views."""

from __future__ import annotations

from typing import Any

from teams.models import Role, Team
from teams.roles import set_role
from tests.factories import UserFactory


def person(team: Team, role: Role, username: str | None = None) -> Any:
    """A user in ``team`` only, holding ``role`` there."""
    user = UserFactory(username=username or f"{role.value}-of-{team.pk}", teams=[])
    set_role(user, team, role)
    return user
