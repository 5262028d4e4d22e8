"""Pages of the engines app: creating and editing a config, and a config matrix made from one (a
config's page, with its runs, is runs').

Each of them changes configs, so each needs the member role in the config's team (teams.roles),
on GET too: a viewer has nothing to do on these pages. Each saved change goes in the audit log.
"""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from engines import matrix
from engines.access import get_visible_or_404
from engines.forms import EngineConfigForm, MatrixForm
from engines.models import EngineConfig
from teams import audit
from teams.changes import changed_fields, snapshot
from teams.roles import Role, require_role, require_role_in_each


def _get_config(request: HttpRequest, pk: int) -> EngineConfig:
    """The config (404 for a stranger), once the user is known to hold the member role in its team."""
    configs = EngineConfig.objects.select_related("engine__machine__team")
    config = get_visible_or_404(request.user, configs, pk=pk)
    require_role(request.user, config.machine.team, Role.MEMBER)
    return config


def _edit(request: HttpRequest, config: EngineConfig | None) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    form = EngineConfigForm(data, instance=config, user=request.user)
    before = snapshot(config, form.fields)
    if form.is_valid():
        saved = form.save()
        team = saved.machine.team
        if config is None:
            audit.record(request.user, "created", saved, team, request=request)
        elif fields := changed_fields(before, saved):
            audit.record(request.user, "changed", saved, team, request=request, fields=fields)
        return redirect(saved)
    ctx = {"form": form, "config": config}
    return render(request, "engines/config_form.html", ctx, status=400 if form.errors else 200)


@login_required
def config_create(request: HttpRequest) -> HttpResponse:
    """A new config on an engine of a team where the user holds the member role (403 if none)."""
    require_role_in_each(request.user, [], Role.MEMBER)
    return _edit(request, None)


@login_required
def config_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _edit(request, _get_config(request, pk))


@login_required
def config_matrix(request: HttpRequest, pk: int) -> HttpResponse:
    """A config matrix from this config: the axes form; POST previews the names (action=preview)
    or creates the new configs (action=create) and offers them to a new sweep."""
    base = _get_config(request, pk)
    form = MatrixForm(request.POST if request.method == "POST" else None, user=request.user)
    ctx: dict[str, object] = {"base": base, "form": form, "most": matrix.MAX_COMBINATIONS, "created": None}
    if not form.is_valid():
        return render(request, "engines/config_matrix.html", ctx, status=400 if form.errors else 200)
    try:
        combinations = matrix.plan(base, form.axes())
    except ValueError as exc:
        form.add_error(None, str(exc))
        return render(request, "engines/config_matrix.html", ctx, status=400)
    ctx["combinations"] = combinations
    ctx["new"] = sum(c.state == "new" for c in combinations)
    if request.POST.get("action") == "create":
        created = matrix.create(combinations)
        for config in created:
            audit.record(request.user, "created", config, config.machine.team, request=request,
                         matrix_of=base.pk)
        query = urlencode([("configs", config.pk) for config in created])
        ctx |= {"created": created, "sweep_url": f"{reverse('runs:sweep-new')}?{query}"}
    return render(request, "engines/config_matrix.html", ctx)
