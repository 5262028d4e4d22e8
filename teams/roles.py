"""Roles checked on the server: viewer (reads), member (runs, configs, notes, schedules), admin
(machines, engines, relay and metrics tokens, members, roles).

Every view that changes something calls :func:`require_role` with the team the object belongs
to; templates ask :func:`has_role` (or the ``role_of`` attribute views pass) to hide what the
role cannot do. Superusers hold the admin role in every team.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, QuerySet, Subquery
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext

from teams.models import Role, Team, TeamRole

__all__ = [
    "Role", "has_role", "holds_in_each", "require_role", "require_role_in_each", "role_of", "set_role",
    "team_or_404", "teams_with_role", "visible_teams",
]

User = AuthUser | AnonymousUser
RANK = {Role.VIEWER: 1, Role.MEMBER: 2, Role.ADMIN: 3}


def role_of(user: User, team: Team | None) -> Role | None:
    """The role ``user`` holds in ``team``: None for a stranger or an anonymous user."""
    if team is None or not user.is_authenticated:
        return None
    if user.is_superuser:
        return Role.ADMIN
    return _lookup_role(user, team)


def _lookup_role(user: AuthUser, team: Team) -> Role | None:
    """One query: whether ``user`` is in ``team`` and the role its row says, if any."""
    row = (
        team.members.filter(pk=user.pk)
        .annotate(held=Subquery(TeamRole.objects.filter(team=team, user=OuterRef("pk")).values("role")[:1]))
        .values_list("pk", "held")
        .first()
    )
    if row is None:
        return None
    return Role(row[1]) if row[1] else Role.MEMBER


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


def require_role_in_each(user: User, teams: Iterable[Team], needed: Role) -> None:
    """Like :func:`require_role` for an object that spans teams (a sweep's configs): ``needed``
    in each of ``teams``; with no team at all, ``needed`` in at least one of the user's teams."""
    if not holds_in_each(user, [team.pk for team in teams], needed):
        raise PermissionDenied(gettext("Your role in this team cannot do this (needs %(role)s).")
                               % {"role": needed.label})


def holds_in_each(user: User, team_ids: Iterable[int], needed: Role) -> bool:
    """Whether ``user`` holds ``needed`` in each team of ``team_ids`` (one query); with no team
    at all, whether they hold it in at least one team."""
    granted = set(teams_with_role(user, needed).values_list("pk", flat=True))
    return bool(granted) and set(team_ids) <= granted


def teams_with_role(user: User, needed: Role) -> QuerySet[Team]:
    """The teams where ``user`` holds ``needed`` or a higher role (what a form may offer)."""
    if not user.is_authenticated:
        return Team.objects.none()
    if user.is_superuser:
        return Team.objects.all()
    allowed = [role for role, rank in RANK.items() if rank >= RANK[needed]]
    teams = Team.objects.filter(members=user)
    rows = TeamRole.objects.filter(user=user)
    if Role.MEMBER in allowed:  # no row counts as member
        return teams.exclude(pk__in=rows.exclude(role__in=allowed).values("team_id"))
    return teams.filter(pk__in=rows.filter(role__in=allowed).values("team_id"))


def set_role(user: AuthUser, team: Team, role: Role) -> TeamRole:
    """Make ``user`` a member of ``team`` holding ``role``."""
    team.members.add(user)
    row, _created = TeamRole.objects.update_or_create(team=team, user=user, defaults={"role": role})
    return row


def visible_teams(user: User) -> QuerySet[Team]:
    """The teams ``user`` sees (their own; every team for a superuser), as ``engines.access.visible``
    says of teams: the rule lives here, as teams imports nothing of engines."""
    if not user.is_authenticated:
        return Team.objects.none()
    if user.is_superuser:
        return Team.objects.all()
    return Team.objects.filter(members=user)


def team_or_404(user: User, pk: int) -> Team:
    """Team ``pk`` if ``user`` sees it, else Http404 (never a 403 that would say it exists)."""
    return get_object_or_404(visible_teams(user), pk=pk)
