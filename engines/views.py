"""Pages of the engines app: creating and editing a config, and a config matrix made from one (a
config's page, with its runs, is runs').

Each of them changes configs, so each needs the member role in the config's team (teams.roles),
on GET too: a viewer has nothing to do on these pages. Each saved change goes in the audit log.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from engines import matrix
from engines import revisions as cfg_revisions
from engines.access import get_visible_or_404
from engines.forms import EngineConfigForm, MatrixForm
from engines.ids import parse_key
from engines.models import ConfigRevision, EngineConfig, Machine
from teams import audit
from teams.changes import changed_fields, snapshot
from teams.roles import Role, require_role, require_role_in_each


def _get_config(request: HttpRequest, pk: int) -> EngineConfig:
    """The config (404 for a stranger), once the user is known to hold the member role in its team."""
    configs = EngineConfig.objects.select_related("engine__machine__team")
    config = get_visible_or_404(request.user, configs, pk=pk)
    require_role(request.user, config.machine.team, Role.MEMBER)
    return config


def _edit(
    request: HttpRequest, config: EngineConfig | None, source: ConfigRevision | None = None
) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    initial = clone_initial(source) if source is not None else None
    form = EngineConfigForm(data, instance=config, initial=initial, user=request.user)
    if source is not None:
        mark_source(form, source)
    before = snapshot(config, form.fields)
    if form.is_valid():
        saved = form.save(commit=False)
        saved.save(revised_by=request.user)
        team = saved.machine.team
        if config is None:
            audit.record(request.user, "created", saved, team, request=request)
        elif fields := changed_fields(before, saved):
            audit.record(request.user, "changed", saved, team, request=request, fields=fields)
        return redirect(saved)
    ctx = {"form": form, "config": config, "source": source}
    return render(request, "engines/config_form.html", ctx, status=400 if form.errors else 200)


@login_required
def config_create(request: HttpRequest) -> HttpResponse:
    """A new config on an engine of a team where the user holds the member role (403 if none).

    ``?from=<config>&revision=<n>``: clone and change, the form prefilled with that revision's
    settings (the config's latest without ``revision``), each field that differs from it marked.
    """
    require_role_in_each(request.user, [], Role.MEMBER)
    source = None
    if "from" in request.GET:
        config = _get_config(request, parse_key(request.GET["from"]) or 0)
        source = _source_revision(config, request.GET.get("revision"))
    return _edit(request, None, source)


def _source_revision(config: EngineConfig, number: str | None) -> ConfigRevision:
    revisions = config.revisions.order_by("-number")
    if number is None:
        return revisions[0] if revisions else cfg_revisions.record(config)
    return get_object_or_404(revisions, number=parse_key(number) or 0)


def clone_initial(source: ConfigRevision) -> dict[str, Any]:
    """The new config's form: the source revision's settings, its engine, a name to change."""
    name = gettext("%(name)s (copy)") % {"name": source.config.name}
    return source.settings | {"engine": source.config.engine_id, "name": name}


def mark_source(form: EngineConfigForm, source: ConfigRevision) -> None:
    """Each setting's widget carries the source's value, for clone_highlight.js to compare with."""
    for name, value in source.settings.items():
        if name in form.fields:
            widget = form.fields[name].widget
            widget.attrs["data-source"] = _as_shown(widget, value)


def _as_shown(widget: forms.Widget, value: Any) -> str:
    """The value as the widget puts it in the page (what the browser reads back from the field)."""
    if isinstance(widget, forms.CheckboxInput):
        return "on" if value else "off"
    shown = widget.format_value(value)
    if isinstance(shown, list):
        shown = shown[0] if shown else ""
    return "" if shown is None else str(shown)


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
        # The sweep takes the reused configs too: the matrix is every combination, made or found.
        reused = [c.existing for c in combinations if c.state == "exists" and c.existing is not None]
        query = urlencode([("configs", config.pk) for config in [*created, *reused]])
        ctx |= {"created": created, "sweep_url": f"{reverse('runs:sweep-new')}?{query}"}
    return render(request, "engines/config_matrix.html", ctx)


@login_required
@require_POST
def machine_bandwidth_clear(request: HttpRequest, pk: int) -> HttpResponse:
    """Forget a machine's measured bandwidth (admin role): the roofline goes back to the nominal
    figure. The run that measured it keeps its figures; the audit log says who cleared what."""
    machine = get_visible_or_404(request.user, Machine.objects.select_related("team"), pk=pk)
    require_role(request.user, machine.team, Role.ADMIN)
    cleared = machine.measured_bandwidth_gbps
    Machine.objects.filter(pk=machine.pk).update(
        measured_bandwidth_gbps=None, bandwidth_measured_at=None, bandwidth_method="", bandwidth_run_id=None)
    audit.record(request.user, "changed", machine, machine.team, request=request,
                 fields={"measured_bandwidth_gbps": [cleared, None]})
    back = request.POST.get("next", "")
    local = url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                            require_https=request.is_secure())
    return redirect(back if local else "runs:home")


@login_required
@require_POST
def config_archive(request: HttpRequest, pk: int) -> HttpResponse:
    """Archive the config (POST archived=1) or restore it (archived=0); member role. Nothing is
    deleted: its runs and revisions stay, and its page says it is archived."""
    config = _get_config(request, pk)
    archived = request.POST.get("archived") == "1"
    if config.archived != archived:
        EngineConfig.objects.filter(pk=config.pk).update(archived=archived)
        if archived:
            audit.record(request.user, "archived", config, config.machine.team, request=request)
        else:  # restored
            audit.record(request.user, "changed", config, config.machine.team, request=request,
                         fields=["archived"])
    return redirect(config)
