"""Fixtures shared by every test: alice, and a test client logged in as her; two teams' worlds."""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db.backends.postgresql.operations import DatabaseOperations
from django.test import Client
from django.utils import translation

from tests.factories import TeamWorld, UserFactory, team_world

# The backend_free mark and its guard.
pytest_plugins = ["tests.backends"]

# Every executed run takes an idle telemetry baseline (2 s by default); hundreds of runs in the
# suite would spend minutes idling. Settings are loaded before this file, and workers started by
# tests read the environment, so both are set. A test of the baseline itself sets its own.
os.environ.setdefault("SPARKDASH_TELEMETRY_BASELINE_S", "0.3")
settings.SPARKDASH_TELEMETRY_BASELINE_S = float(os.environ["SPARKDASH_TELEMETRY_BASELINE_S"])


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


@pytest.fixture(autouse=True)
def english_after_each_test() -> Iterator[None]:
    """A request in Japanese leaves its language active on the test's thread (LocaleMiddleware sets
    it per request, as a server thread's next request would); the next test starts in English."""
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(autouse=True, scope="session")
def _flush_postgres_by_delete() -> Iterator[None]:
    """After each transactional test, empty Postgres's tables with DELETE, not TRUNCATE.

    TRUNCATE makes new files for each of the ~30 tables and their indexes: 0.12-0.16 s a test
    here, ~1 s on a loaded box, for tables that hold a few rows. Django's foreign keys are
    deferrable, so one transaction may delete in any order. Sequences are kept either way.
    """
    original = DatabaseOperations.sql_flush

    def sql_flush(self: DatabaseOperations, style: Any, tables: Any, *, reset_sequences: bool = False,
                  allow_cascade: bool = False) -> list[str]:
        if reset_sequences or not tables:
            return original(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return ["SET CONSTRAINTS ALL DEFERRED"] + [f"DELETE FROM {self.quote_name(t)}" for t in tables]

    patch = pytest.MonkeyPatch()
    patch.setattr(DatabaseOperations, "sql_flush", sql_flush)
    yield
    patch.undo()
