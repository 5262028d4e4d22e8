"""Fixtures the teams tests share: a team "lab" and its admin "ada"."""

import pytest

from teams.models import Role
from teams.roles import set_role
from tests.factories import TeamFactory, UserFactory


@pytest.fixture
def team():
    return TeamFactory(name="lab")


@pytest.fixture
def admin(team):
    user = UserFactory(username="ada", teams=[])
    set_role(user, team, Role.ADMIN)
    return user
