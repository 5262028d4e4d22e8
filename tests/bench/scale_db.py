"""The scale benchmark's databases: created when missing, dropped when they hold something else."""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg

from tests.bench.scale_data import MARKER, SIZES, VERSION


def database_url(base_url: str, name: str) -> str:
    """`base_url` (a postgres:// URL) naming database `name` instead."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path="/" + name))


def ensure_database(url: str, size_name: str) -> bool:
    """Make sure the database of `url` exists; True when it is new (empty), False to reuse it.

    A database whose marker does not match `size_name` (or that has none) is dropped and
    created again: it belongs to the benchmark alone.
    """
    name = urlsplit(url).path.lstrip("/")
    if _holds(url, size_name):
        return False
    with psycopg.connect(database_url(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return True


def _holds(url: str, size_name: str) -> bool:
    size = SIZES[size_name]
    try:
        conn = psycopg.connect(url)
    except psycopg.OperationalError:
        return False
    with conn:
        if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", [MARKER]).fetchone()[0]:
            return False
        row = conn.execute(f"SELECT runs, samples, version FROM {MARKER}").fetchone()
        return row == (size.runs, size.samples, VERSION)


def create_database(url: str) -> None:
    """Create the database of `url` unless it exists (its data is kept)."""
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(database_url(url, "postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
