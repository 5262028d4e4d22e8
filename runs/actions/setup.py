"""Setting up machines and engines from the dashboard: a connection check of an engine's URL,
asked of the machine's own worker, since only that box may fetch it (Engine.url_refusal)."""
from __future__ import annotations

from typing import Any

from django.db import transaction

from engines import connection_checks
from engines.access import get_visible_or_404
from engines.models import Engine, Machine
from runs.models import ConnectionCheck
from runs.worker import dispatch

__all__ = ["adopt_checks", "check_as_dict", "register", "start_check"]


def start_check(machine: Machine, kind: str, base_url: str, api_key: str = "", user: Any = None,
                engine: Engine | None = None) -> ConnectionCheck:
    """Queue a connection check of ``base_url`` on ``machine``'s worker.

    :raises ValueError: for a URL the machine's worker must not fetch (another host), as saving
        the engine would refuse it.
    """
    refusal = Engine(machine=machine, base_url=base_url).url_refusal()
    if refusal:
        raise ValueError(refusal)
    by = user if getattr(user, "is_authenticated", False) else None
    with transaction.atomic():
        check = ConnectionCheck.objects.create(machine=machine, kind=kind, base_url=base_url, api_key=api_key,
                                               engine=engine, created_by=by)
        dispatch.check_on_commit(check)
    return check


def adopt_checks(engine: Engine, user: Any) -> int:
    """Give a just-saved engine the checks its user ran from the form of its URL before saving,
    so its page shows its status at once; how many it took."""
    found = ConnectionCheck.objects.filter(engine=None, machine=engine.machine, kind=engine.kind,
                                           base_url=engine.base_url, created_by=user)
    return found.update(engine=engine) if getattr(user, "is_authenticated", False) else 0


def check_as_dict(user: Any, pk: int) -> dict[str, Any]:
    """Connection check ``pk`` as JSON, if ``user`` sees it (else Http404)."""
    check = get_visible_or_404(user, ConnectionCheck.objects.select_related("machine"), pk=pk)
    return check.to_dict()


def register() -> None:
    """Hand these to the engine set-up pages (engines.connection_checks): runs.apps, when ready."""
    connection_checks.register(connection_checks.ConnectionChecks(
        start=start_check, adopt=adopt_checks, find=check_as_dict))
