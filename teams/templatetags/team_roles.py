"""Template tags that ask the page's user's role, so a page hides the buttons the role cannot
use (the views refuse those actions anyway):

- ``{% role_at_least team "member" as can_run %}``: the role in one team;
- ``{% machine_allows machine_id "member" as can_resolve %}``: the role in a machine's team, by
  the machine's id (tables of many rows: one query per page, not one per row);
- ``{% role_somewhere "member" as can_create %}``: the role in at least one team ("new" buttons).
"""

from __future__ import annotations

from typing import Any

from django import template

from teams.models import Role, Team
from teams.roles import has_role, teams_with_role

register = template.Library()


@register.simple_tag(takes_context=True)
def role_at_least(context: dict[str, Any], team: Team | None, needed: str) -> bool:
    """True when ``context["user"]`` holds ``needed`` (viewer, member, admin) or more in ``team``."""
    user = context.get("user")
    return user is not None and has_role(user, team, Role(needed))


@register.simple_tag(takes_context=True)
def machine_allows(context: dict[str, Any], machine_id: int | None, needed: str) -> bool:
    """True when ``context["user"]`` holds ``needed`` or more in the team of machine ``machine_id``."""
    return machine_id in _machines_with_role(context, Role(needed))


@register.simple_tag(takes_context=True)
def role_somewhere(context: dict[str, Any], needed: str) -> bool:
    """True when ``context["user"]`` holds ``needed`` or more in at least one team."""
    user = context.get("user")
    return user is not None and teams_with_role(user, Role(needed)).exists()


def _machines_with_role(context: Any, needed: Role) -> set[int]:
    """The ids of the machines whose team grants ``needed``, kept for the rest of the render."""
    cache = context.render_context.setdefault("team_roles_machines", {})
    if needed not in cache:
        user = context.get("user")
        teams = teams_with_role(user, needed) if user is not None else Team.objects.none()
        # Through the teams' machines (engines.Machine's related name): teams imports nothing of engines.
        machine_ids = teams.filter(machines__isnull=False).values_list("machines__pk", flat=True)
        cache[needed] = set(machine_ids)
    return cache[needed]
