"""Sweep pages: the list, the form, a sweep with its runs, and the live grid of one sweep run.

The grid page polls GET /api/sweep-runs/<id> (static/js/sweep_grid.js); `?format=csv|json`
on the page downloads the grid, one row per cell.
"""
from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max, Q, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext_noop
from django.views.decorators.http import require_GET, require_POST

from engines.access import get_visible_or_404, visible
from engines.ids import parse_key
from engines.models import EngineConfig
from runs.actions.sweeps import record_sweep, start_sweep, sweep_teams
from runs.models import Run, Sweep, SweepExecution
from runs.results.export import table_response, wants_export
from runs.results.sweep_grid import execution_dict
from runs.views.sweep_form import SweepForm
from teams.changes import changed_fields, snapshot
from teams.decorators import api_login_required
from teams.roles import Role, holds_in_each, require_role_in_each

EXECUTIONS_SHOWN = 50
# What a "changed" audit event names (the webhook's value is never in the log, only that it changed).
AUDITED_FIELDS = ("name", "configs", "jobs", "repetitions", "baseline", "webhook_url", "noise_floor_pct")
# A sweep run's trigger (SweepExecution.Trigger) as the pages translate it.
TRIGGERS = (gettext_noop("manual"), gettext_noop("schedule"))
EXPORT_COLUMNS = [
    "config", "engine", "machine", "simulator", "baseline", "job", "metric", "unit", "median", "min", "max",
    "n", "figure", "runs", "done", "running", "failed", "delta", "delta_pct", "verdict",
]


@login_required
def sweep_list(request: HttpRequest) -> HttpResponse:
    sweeps = visible(request.user, Sweep.objects.select_related("baseline")).annotate(
        config_count=Count("configs", distinct=True),
        execution_count=Count("executions", distinct=True),
        last_started=Max("executions__created"),
    )
    return render(request, "runs/sweep_list.html", {"sweeps": sweeps})


@login_required
def sweep_new(request: HttpRequest) -> HttpResponse:
    """The form for a new sweep; GET ?configs=<id>&configs=<id> ticks those configs (the config
    matrix links here)."""
    user = request.user
    chosen = [pk for pk in request.GET.getlist("configs") if parse_key(pk) is not None]
    initial = {"configs": chosen} if chosen else {}
    return _edit(request, Sweep(created_by=user if user.is_authenticated else None), initial)


@login_required
def sweep_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _edit(request, get_visible_or_404(request.user, Sweep, pk=pk))


def _edit(request: HttpRequest, sweep: Sweep, initial: dict[str, Any] | None = None) -> HttpResponse:
    """The sweep's form: the member role in each team its configs run on, before and after the edit."""
    require_role_in_each(request.user, sweep_teams(sweep), Role.MEMBER)
    data, files = (request.POST, request.FILES) if request.method == "POST" else (None, None)
    form = SweepForm(data, files, instance=sweep, user=request.user, initial=initial)
    before = snapshot(sweep, AUDITED_FIELDS)
    if request.method == "POST" and form.is_valid():
        chosen = {config.machine.team for config in form.cleaned_data["configs"]}
        require_role_in_each(request.user, chosen, Role.MEMBER)
        saved = form.save()
        if not before:
            record_sweep(request.user, "created", saved, saved, request=request)
        elif fields := changed_fields(before, saved):
            record_sweep(request.user, "changed", saved, saved, request=request, fields=fields)
        return redirect("runs:sweep-detail", saved.pk)
    status = 400 if form.is_bound else 200
    return render(request, "runs/sweep_form.html", {"form": form, "sweep": sweep}, status=status)


def _executions(sweep: Sweep) -> QuerySet[SweepExecution]:
    """The sweep's latest runs, each with its run counts (one query)."""
    ended = Q(runs__status__in=Run.TERMINAL)
    failed = Q(runs__status__in=(Run.Status.FAILED, Run.Status.CANCELLED))
    counts = {
        "total": Count("runs"), "done": Count("runs", filter=ended), "failed": Count("runs", filter=failed),
        "running": Count("runs", filter=Q(runs__status=Run.Status.RUNNING)),
    }
    return sweep.executions.select_related("created_by").annotate(**counts)[:EXECUTIONS_SHOWN]


@login_required
def sweep_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _detail(request, pk)


def _detail(request: HttpRequest, pk: int, error: str = "") -> HttpResponse:
    """The sweep, its configs and its latest runs; `error` says why starting it failed (400)."""
    sweep = get_visible_or_404(request.user, Sweep.objects.select_related("baseline"), pk=pk)
    configs = sweep.configs.select_related("engine__machine").order_by("name")
    ctx = {
        "sweep": sweep, "configs": configs, "executions": _executions(sweep), "error": error,
        "can_run": _may_run(request, configs),
    }
    return render(request, "runs/sweep_detail.html", ctx, status=400 if error else 200)


def _may_run(request: HttpRequest, configs: QuerySet[EngineConfig]) -> bool:
    """Whether the page offers the sweep's start and edit buttons (the member role in the teams
    of its configs, read from the configs the page shows: one query)."""
    return holds_in_each(request.user, {config.engine.machine.team_id for config in configs}, Role.MEMBER)


@login_required
@require_POST
def sweep_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Start now: queue every run of the sweep and go to its live grid (member role in each of its
    configs' teams)."""
    sweep = get_visible_or_404(request.user, Sweep, pk=pk)
    require_role_in_each(request.user, sweep_teams(sweep), Role.MEMBER)
    try:
        execution = start_sweep(sweep, user=request.user, request=request)
    except ValueError as exc:
        return _detail(request, pk, error=str(exc))
    return redirect("runs:sweep-run", execution.pk)


def _get_execution(request: HttpRequest, pk: int) -> SweepExecution:
    return get_visible_or_404(request.user, SweepExecution.objects.select_related("sweep__baseline"), pk=pk)


@login_required
def sweep_run(request: HttpRequest, pk: int) -> HttpResponse:
    """The live grid (sweep_grid.js polls the API), or the grid as a CSV/JSON download."""
    execution = _get_execution(request, pk)
    data = execution_dict(execution)
    fmt = wants_export(request)
    if fmt:
        name = f"sweep-run-{execution.pk}"
        return table_response(_export_rows(data["grid"]), EXPORT_COLUMNS, fmt, name)
    return render(request, "runs/sweep_run.html", {"execution": execution, "data": data})


@require_GET
@api_login_required
def api_sweep_run(request: HttpRequest, pk: int) -> JsonResponse:
    """GET /api/sweep-runs/<id>: the sweep run and its grid."""
    return JsonResponse(execution_dict(_get_execution(request, pk)))


def _export_rows(grid: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for row in grid["rows"]:
        config = row["config"]
        for column, cell in zip(grid["columns"], row["cells"], strict=True):
            spread = cell["spread"] or {}
            rows.append({
                "config": config["name"], "engine": config["engine"], "machine": config["machine"],
                "simulator": config["simulator"], "baseline": row["baseline"], "job": column["job"],
                "metric": column["metric"], "unit": column["unit"], "median": spread.get("median"),
                "min": spread.get("min"), "max": spread.get("max"), "n": spread.get("n", 0),
                "figure": cell["text"], "runs": cell["total"], "done": cell["done"],
                "running": cell["running"], "failed": cell["failed"], "delta": cell["delta"],
                "delta_pct": cell["delta_pct"], "verdict": cell["verdict"],
            })
    return rows
