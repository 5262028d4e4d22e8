"""engines.connection_checks: the set-up pages' connection test is runs', handed over when runs is
ready, and a missing hand-over says so rather than failing somewhere later."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from engines import connection_checks
from runs.actions import setup

pytestmark = pytest.mark.backend_free


def test_it_is_handed_runs_checks_when_runs_is_ready():
    checks = connection_checks.current()
    assert (checks.start, checks.adopt, checks.find) == (setup.start_check, setup.adopt_checks,
                                                          setup.check_as_dict)


def test_it_says_when_no_app_runs_connection_checks(monkeypatch):
    monkeypatch.setattr(connection_checks, "_registered", [])
    with pytest.raises(ImproperlyConfigured, match="no app runs connection checks"):
        connection_checks.current()
