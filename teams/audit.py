"""Writing the audit log: who did what to which object, when and from which address.

Call :func:`record` where an action succeeds (after the save), from views, actions and
management commands. Names are copied into the row so the log keeps saying who and what after
the rows it links to are renamed or deleted.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model
from django.http import HttpRequest

from teams.models import AuditEvent, Team

__all__ = ["ACTIONS", "record"]

# What the log says people did; one word each, the same across object types.
ACTIONS = (
    "created", "changed", "archived", "started", "cancelled", "deleted", "revoked",
    "added", "removed", "role changed", "locked out", "unlocked",
)  # fmt: skip


def record(
    actor: Any,
    action: str,
    obj: Model | None,
    team: Team | None,
    *,
    request: HttpRequest | None = None,
    object_type: str = "",
    **detail: Any,
) -> AuditEvent:
    """Add one event to the log and return it.

    :param actor: the user who acted (None or anonymous for the system, e.g. a schedule).
    :param action: one of :data:`ACTIONS`.
    :param obj: the object acted on; its model name and ``str`` are copied.
    :param team: the team the object belongs to (whose admins see the event).
    :param request: where the address comes from (``REMOTE_ADDR``; proxies set it upstream).
    :param detail: JSON-serialisable facts worth keeping (e.g. which fields changed).
    """
    if action not in ACTIONS:
        raise ValueError(f"audit action {action!r} is not one of {ACTIONS}")
    person = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        team=team,
        team_name=team.name if team else "",
        actor=person,
        actor_name=person.get_username() if person else "system",
        address=request.META.get("REMOTE_ADDR") or None if request else None,
        action=action,
        object_type=object_type or (obj._meta.model_name or "" if obj is not None else ""),
        object_id=str(obj.pk) if obj is not None and obj.pk is not None else "",
        object_name=str(obj)[:300] if obj is not None else "",
        detail=detail,
    )
