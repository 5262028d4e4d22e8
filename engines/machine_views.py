"""Adding and editing a team's machine (team admins, on GET too: members have nothing to do here).

The pages hang off the team's page (teams.views) but live beside Machine, as teams imports nothing
of engines. A stranger gets 404 (engines.access), a member without the admin role 403; each saved
change goes in the team's audit log.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _

from engines.access import get_visible_or_404
from engines.models import Machine
from teams import audit
from teams.changes import changed_fields, snapshot
from teams.models import Team
from teams.roles import Role, require_role

__all__ = ["MachineForm", "machine_add", "machine_edit"]


class MachineForm(forms.ModelForm):
    """A new machine of the team: its name, where its engines listen, and its memory."""

    class Meta:
        model = Machine
        fields = ["name", "host", "bandwidth_gbps", "memory_gb", "notes"]
        labels = {"name": _("name"), "host": _("host"), "notes": _("notes")}
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}

    def _get_validation_exclusions(self) -> Any:
        # The team is set by the view, not the form; a name unique per team is still checked.
        exclude = super()._get_validation_exclusions()  # type: ignore[misc]  # Django's, not in the stubs
        exclude.discard("team")
        return exclude


def _admin_team(request: HttpRequest, pk: int) -> Team:
    team = get_visible_or_404(request.user, Team, pk=pk)
    require_role(request.user, team, Role.ADMIN)
    return team


@login_required
def machine_add(request: HttpRequest, pk: int) -> HttpResponse:
    """A new machine in the team (team admins)."""
    return _machine_form(request, _admin_team(request, pk), None)


@login_required
def machine_edit(request: HttpRequest, pk: int, machine_pk: int) -> HttpResponse:
    """Change one of the team's machines (team admins): its name, host, memory and notes."""
    team = _admin_team(request, pk)
    return _machine_form(request, team, get_object_or_404(Machine, pk=machine_pk, team=team))


def _machine_form(request: HttpRequest, team: Team, machine: Machine | None) -> HttpResponse:
    form = MachineForm(request.POST if request.method == "POST" else None, instance=machine)
    form.instance.team = team
    before = snapshot(machine, form.fields)
    if form.is_valid():
        saved = form.save()
        if machine is None:
            audit.record(request.user, "created", saved, team, request=request)
        elif fields := changed_fields(before, saved):
            audit.record(request.user, "changed", saved, team, request=request, fields=fields)
        return redirect("teams:detail", team.pk)
    ctx = {"team": team, "form": form, "machine": machine}
    return render(request, "engines/machine_form.html", ctx, status=400 if form.errors else 200)
