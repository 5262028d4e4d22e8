"""Fixtures shared by every test: alice, and a test client logged in as her."""
from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


@pytest.fixture
def alice_client(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client
