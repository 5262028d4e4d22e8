"""Slow fault injection: every test here is marked `faults`, so `make test` skips it and
`make faults` (run by CI) runs it."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.services import PrivatePostgres
from tests.faults.stack import TEMPLATE, migrated_template

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.faults)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivatePostgres]:
    """A private Postgres cluster holding a migrated template database (stack.TEMPLATE)."""
    postgres = PrivatePostgres()
    try:
        postgres.init()
        postgres.start()
        migrated_template(postgres, TEMPLATE, tmp_path_factory.mktemp("migrate"))
        yield postgres
    finally:
        postgres.stop()
