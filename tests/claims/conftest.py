"""Claims' tests: checks run on this process's worker thread."""

import pytest


@pytest.fixture
def inprocess(settings, transactional_db) -> None:
    """Runs execute on this process's worker thread (checkclaim --wait waits for them here)."""
    settings.SPARKDASH_WORKER = "inprocess"
