"""Slow fault injection: every test here is marked `faults`, so `make test` skips it and
`make faults` (run by CI) runs it."""
from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.faults)
