"""Writers that are always closed, the test database seen from outside Django, a live-traffic listener,
and `manage.py relay` as a process of its own."""
from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection

from tests.processes import stop_process
from traffic import live
from traffic.models import RelayState
from traffic.writer import RecordWriter

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs Postgres (DATABASE_URL=postgres://...)"
)


@contextmanager
def relay_process(machine: Any, *args: str) -> Iterator[dict[str, str]]:
    """`manage.py relay` for `machine` on free ports until the block ends (then SIGTERM): its addresses.

    The relay is its own process on the test database, so this needs Postgres (postgres_only)."""
    test_db = settings.DATABASES["default"]["NAME"]
    env = os.environ | {"DATABASE_URL": urlsplit(settings.DATABASE_URL)._replace(path=f"/{test_db}").geturl()}
    command = [sys.executable, "manage.py", "relay", "--machine", machine.name, "--ollama-port", "0",
               "--openai-port", "0", *args]  # fmt: skip
    process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        wait_for(lambda: process.poll() is not None or RelayState.objects.filter(machine=machine).exists())
        assert process.poll() is None, process.communicate()[0]
        yield RelayState.objects.get(machine=machine).addresses
    finally:
        stop_process(process, timeout_s=40)
    assert process.returncode == 0, process.communicate()[0]


@pytest.fixture
def writers() -> Iterator[Callable[..., RecordWriter]]:
    """Makes writers; each is closed after the test, so no thread outlives its tables."""
    made: list[RecordWriter] = []

    def make(machine: Any, **options: Any) -> RecordWriter:
        writer = RecordWriter(machine, **options)
        made.append(writer)
        return writer

    yield make
    for writer in made:
        writer.close(30)


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll until `condition()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def _postgres(dbname: str | None = None) -> Any:
    import psycopg

    conf = connection.settings_dict
    return psycopg.connect(
        host=conf["HOST"], port=conf["PORT"] or 5432, user=conf["USER"], password=conf["PASSWORD"],
        dbname=dbname or conf["NAME"], autocommit=True,
    )


@contextmanager
def table_locked(table: str) -> Iterator[None]:
    """Another client holds `table` locked against writers (Postgres: a table lock; SQLite: the file)."""
    if connection.vendor == "postgresql":
        with _postgres() as other:
            other.execute("BEGIN")
            other.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            yield
            other.execute("ROLLBACK")
        return
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@contextmanager
def database_down() -> Iterator[None]:
    """Postgres refuses new connections to the test database and drops the open ones (but this test's):
    what a restart looks like to a client, for as long as the block runs."""
    name = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own = cursor.fetchone()[0]
    with _postgres("postgres") as admin:
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        try:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
                [name, own],
            )
            yield
        finally:
            admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')


class Listener:
    """A socket's view of a machine's live traffic: joined to its Channels group."""

    def __init__(self, machine_id: int) -> None:
        self.layer = get_channel_layer()
        self.channel = async_to_sync(self.layer.new_channel)()
        async_to_sync(self.layer.group_add)(live.group_name(machine_id), self.channel)

    def messages(self, timeout: float = 2.0) -> list[dict[str, Any]]:
        """Every message sent so far (call it once, after the writer flushed); waits `timeout` for more."""
        return async_to_sync(self._drain)(timeout)

    async def _drain(self, quiet_s: float) -> list[dict[str, Any]]:
        received = []
        while True:
            try:
                received.append(await asyncio.wait_for(self.layer.receive(self.channel), quiet_s))
            except TimeoutError:
                return received


@pytest.fixture
def listener() -> Callable[[int], Listener]:
    return Listener
