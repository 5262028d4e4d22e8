"""Fixtures shared by every test: alice, and a test client logged in as her; two teams' worlds."""
from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import TeamWorld, UserFactory, team_world


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


@pytest.fixture
def alice_client(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def alpha(db) -> TeamWorld:
    """The team whose objects the access tests request (its owner and teammate may see them)."""
    return team_world("alpha")


@pytest.fixture
def bravo(db) -> TeamWorld:
    """Another team: its members are the outsiders of alpha's objects."""
    return team_world("bravo")
