"""Team pages: the user's teams, a team's members and their roles (adding a machine is
engines.machine_views').

Every member sees the team page; only the team's admins see and use its forms (adding a member,
changing a role, removing a member), checked on the server with ``teams.roles.require_role``. A
stranger gets 404 (teams.roles.visible_teams), never 403. Each change goes in the audit log.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from teams import audit
from teams.forms import AddMemberForm, RoleForm
from teams.models import Role, Team, TeamRole
from teams.roles import has_role, require_role, role_of, set_role, team_or_404, visible_teams


def _team(request: HttpRequest, pk: int, needed: Role = Role.VIEWER) -> Team:
    team = team_or_404(request.user, pk)
    require_role(request.user, team, needed)
    return team


@login_required
def team_list(request: HttpRequest) -> HttpResponse:
    """The user's teams with the role they hold in each."""
    teams = [(team, role_of(request.user, team)) for team in visible_teams(request.user)]
    return render(request, "teams/team_list.html", {"teams": teams})


def _members(team: Team) -> list[dict[str, Any]]:
    roles = dict(TeamRole.objects.filter(team=team).values_list("user_id", "role"))
    users = team.members.order_by("username")
    return [{"user": user, "role": Role(roles.get(user.pk, Role.MEMBER))} for user in users]


def _render_team(request: HttpRequest, team: Team, add_form: AddMemberForm | None = None,
                 error: str = "") -> HttpResponse:
    ctx = {
        "team": team, "members": _members(team), "machines": team.machines.all(),
        "can_admin": has_role(request.user, team, Role.ADMIN),
        "add_form": add_form or AddMemberForm(team=team, initial={"role": Role.MEMBER}),
        "roles": Role.choices, "error": error,
    }
    bad = error or (add_form is not None and add_form.errors)
    return render(request, "teams/team_detail.html", ctx, status=400 if bad else 200)


@login_required
def team_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The team's members and roles, and its machines; admins get the forms to change them."""
    return _render_team(request, _team(request, pk))


@login_required
@require_POST
def member_add(request: HttpRequest, pk: int) -> HttpResponse:
    """An existing user joins the team with a role (team admins)."""
    team = _team(request, pk, Role.ADMIN)
    form = AddMemberForm(request.POST, team=team)
    if not form.is_valid():
        return _render_team(request, team, add_form=form)
    user, role = form.cleaned_data["username"], Role(form.cleaned_data["role"])
    set_role(user, team, role)
    audit.record(request.user, "added", user, team, request=request, object_type="member", role=role.value)
    return redirect("teams:detail", team.pk)


def _member(team: Team, user_pk: int) -> Any:
    return get_object_or_404(team.members.all(), pk=user_pk)


def _last_admin(team: Team, user: Any) -> bool:
    """Whether ``user`` is the team's only admin (who would then be locked out of its pages)."""
    admins = TeamRole.objects.filter(team=team, role=Role.ADMIN, user__in=team.members.all())
    return admins.filter(user=user).exists() and admins.count() == 1


@login_required
@require_POST
def member_role(request: HttpRequest, pk: int, user_pk: int) -> HttpResponse:
    """Change a member's role (team admins); the team's last admin stays an admin."""
    team = _team(request, pk, Role.ADMIN)
    member = _member(team, user_pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        return _render_team(request, team, error=gettext("choose a role: viewer, member or admin"))
    before, role = role_of(member, team), Role(form.cleaned_data["role"])
    if role != Role.ADMIN and _last_admin(team, member):
        return _render_team(request, team, error=_last_admin_error())
    if role != before:
        set_role(member, team, role)
        audit.record(request.user, "role changed", member, team, request=request, object_type="member",
                     before=before.value if before else None, after=role.value)
    return redirect("teams:detail", team.pk)


def _last_admin_error() -> str:
    return gettext("the team's last admin cannot be demoted or removed: make another member admin first")


@login_required
@require_POST
def member_remove(request: HttpRequest, pk: int, user_pk: int) -> HttpResponse:
    """Take a member out of the team (team admins); the team's last admin stays."""
    team = _team(request, pk, Role.ADMIN)
    member = _member(team, user_pk)
    if _last_admin(team, member):
        return _render_team(request, team, error=_last_admin_error())
    before = role_of(member, team)
    team.members.remove(member)
    TeamRole.objects.filter(team=team, user=member).delete()
    audit.record(request.user, "removed", member, team, request=request, object_type="member",
                 role=before.value if before else None)
    return redirect("teams:detail", team.pk)
