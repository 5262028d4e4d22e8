"""Which tests depend on the backends, and a guard that keeps the `backend_free` mark honest.

Every test runs on whichever backends the environment selects (Postgres + Redis + Celery with
DATABASE_URL and REDIS_URL set, the embedded default without). CI runs the suite on both; a test
marked `backend_free` tests plain Python (statistics, parsers, recipes, the simulator) and CI runs
it on one only (the embedded pass), since nothing it does differs by backend. A test without the
mark counts as backend-dependent: the safe side for a new test.

The mark is checked, not trusted: a `backend_free` test that asks for the database (a django_db
mark, a database or live-server fixture, a Django TransactionTestCase) stops the collection, and
one that reaches the database, the channel layer or Celery at run time fails.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NoReturn

import pytest
from celery import Celery
from channels.layers import ChannelLayerManager
from django.test import TransactionTestCase

from tests.real_engine import requires_engine

MARK = "backend_free"
LLAMA_SERVER_MARK = "llama_server"
BACKEND_PASS_MARK = "backend_pass"
# The folders whose backend_free tests CI runs in its backend pass rather than its embedded pass:
# about 130 s of the embedded pass's 1,270, which leaves the two passes about as long as each other.
BACKEND_PASS_FOLDERS = ("tests/engines/", "tests/traffic/")
# Fixtures that bring a database (or a server on one) into a test.
DATABASE_FIXTURES = frozenset({
    "db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
    "live_server", "admin_user", "admin_client", "django_user_model",
})


def backend_free(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARK) is not None


def why_not_backend_free(item: pytest.Item) -> str | None:
    """What in a test marked `backend_free` needs a backend; None when nothing does."""
    if item.get_closest_marker("django_db") is not None:
        return "it is marked django_db"
    fixtures = sorted(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))
    if fixtures:
        return f"it uses the fixture(s) {', '.join(fixtures)}"
    cls = getattr(item, "cls", None)
    if isinstance(cls, type) and issubclass(cls, TransactionTestCase):
        return f"{cls.__name__} is a Django TransactionTestCase"
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the mark it adds must count there
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _mark_llama_server_tests(items)
    _mark_backend_pass_tests(items)
    wrong = [
        f"{item.nodeid}: {why}"
        for item in items
        if backend_free(item) and (why := why_not_backend_free(item))
    ]
    if wrong:
        raise pytest.UsageError(f"marked {MARK} but needs a backend:\n  " + "\n  ".join(wrong))


def _mark_backend_pass_tests(items: list[pytest.Item]) -> None:
    """Mark `backend_pass` the backend_free tests under BACKEND_PASS_FOLDERS: with CI_SPLIT, `make test`
    leaves them out and `make test-backends` takes them (each still runs once, on one backend)."""
    for item in items:
        where = item.path.as_posix()
        if backend_free(item) and any(f"/{folder}" in where for folder in BACKEND_PASS_FOLDERS):
            item.add_marker(BACKEND_PASS_MARK)


def _mark_llama_server_tests(items: list[pytest.Item]) -> None:
    """Mark `llama_server` every test that needs the real llama-server (it carries `requires_engine`).

    Their figures are the engine's: no backend changes what llama-server does, and they are the
    suite's heaviest tests (about half its time), so CI runs them once, in a pass of their own on
    Postgres + Redis + Celery, and leaves them out of its two backend passes (docs/testing.md)."""
    needs = requires_engine.mark
    for item in items:
        if any(m.name == "skipif" and m.kwargs == needs.kwargs for m in item.iter_markers("skipif")):
            item.add_marker(LLAMA_SERVER_MARK)


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError(f"a test marked {MARK} reached {what}: it depends on the backend")

    return refuse


@pytest.fixture(autouse=True)
def _backend_free_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """In a `backend_free` test, the channel layer and Celery refuse (pytest-django refuses the database)."""
    if not backend_free(request.node):
        yield
        return
    patch = pytest.MonkeyPatch()
    patch.setattr(ChannelLayerManager, "__getitem__", _refuse("the channel layer"))
    patch.setattr(Celery, "send_task", _refuse("Celery"))
    try:
        yield
    finally:
        patch.undo()
