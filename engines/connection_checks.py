"""The connection test the engine set-up pages ask for, and who runs it.

Only the machine's own worker may fetch an engine's URL (Engine.url_refusal); the worker's queue
and the check's row are runs' (runs.actions.setup, runs.models.ConnectionCheck). engines imports
nothing of runs, so runs hands its functions over here when its app is ready (runs.apps), and the
pages (engines.setup_views) reach them through :func:`current`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

__all__ = ["ConnectionChecks", "current", "register"]


@dataclass(frozen=True)
class ConnectionChecks:
    """What the pages need of connection checks.

    :param start: ``start(machine, kind, base_url, api_key, user, engine=...)`` queues a check on
        the machine's worker and returns it (its ``pk`` and ``to_dict()``); ValueError for a URL
        that machine's worker must not fetch.
    :param adopt: ``adopt(engine, user)`` gives a just-saved engine the checks its user ran from
        its form before saving; how many.
    :param find: ``find(user, pk)`` the check as JSON, if ``user`` sees it (else Http404).
    """

    start: Callable[..., Any]
    adopt: Callable[[Any, Any], int]
    find: Callable[[Any, int], dict[str, Any]]


_registered: list[ConnectionChecks] = []


def register(checks: ConnectionChecks) -> None:
    """Say who runs connection checks (runs, when its app is ready); a second call replaces the first."""
    _registered[:] = [checks]


def current() -> ConnectionChecks:
    """Who runs connection checks; ImproperlyConfigured when no app said so (runs is not installed)."""
    if not _registered:
        raise ImproperlyConfigured("no app runs connection checks: runs registers them when it is ready")
    return _registered[0]
