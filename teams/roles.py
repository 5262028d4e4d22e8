"""Roles checked on the server: viewer (reads), member (runs, configs, notes, schedules), admin
(machines, engines, relay and metrics tokens, members, roles).

Every view that changes something calls :func:`require_role` with the team the object belongs
to; templates ask :func:`has_role` (or the ``role_of`` attribute views pass) to hide what the
role cannot do. Superusers hold the admin role in every team.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext

from engines.models import Team
from teams.models import Role, TeamRole

__all__ = ["Role", "has_role", "require_role", "role_of", "set_role"]

User = AuthUser | AnonymousUser
RANK = {Role.VIEWER: 1, Role.MEMBER: 2, Role.ADMIN: 3}


def role_of(user: User, team: Team | None) -> Role | None:
    """The role ``user`` holds in ``team``: None for a stranger or an anonymous user."""
    if team is None or not user.is_authenticated:
        return None
    if user.is_superuser:
        return Role.ADMIN
    if not team.members.filter(pk=user.pk).exists():
        return None
    row = TeamRole.objects.filter(team=team, user=user).values_list("role", flat=True).first()
    return Role(row) if row else Role.MEMBER


def has_role(user: User, team: Team | None, needed: Role) -> bool:
    """Whether ``user`` holds ``needed`` or a higher role in ``team``."""
    held = role_of(user, team)
    return held is not None and RANK[held] >= RANK[needed]


def require_role(user: User, team: Team | None, needed: Role) -> None:
    """Raise PermissionDenied (a 403) unless ``user`` holds ``needed`` in ``team``.

    Call it after the object was found through ``engines.access.visible``: a stranger gets the
    404 from there, and only a team member who lacks the role learns it exists.
    """
    if not has_role(user, team, needed):
        raise PermissionDenied(gettext("Your role in this team cannot do this (needs %(role)s).")
                               % {"role": needed.label})


def set_role(user: AuthUser, team: Team, role: Role) -> TeamRole:
    """Make ``user`` a member of ``team`` holding ``role``."""
    team.members.add(user)
    row, _created = TeamRole.objects.update_or_create(team=team, user=user, defaults={"role": role})
    return row
