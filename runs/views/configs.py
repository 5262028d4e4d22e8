"""Pages that show a config with its runs: the home overview, the config list and a config's page.

A config's page is also where a run of it starts (StartJobForm). Editing a config is engines' own page.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery, Window
from django.db.models.functions import RowNumber
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from engines import revisions
from engines.access import get_visible_or_404, visible
from engines.models import EngineConfig, Machine
from engines.recipes import render_config
from engines.roofline import model_findings
from runs.actions.runs import start_run
from runs.actions.tour import has_tour
from runs.actions.workers import presence_for, presence_of
from runs.models import Alert, Run, Schedule, Sweep, SweepExecution
from runs.results.export import table_response, wants_export
from runs.results.scorecard import SCORECARD_COLUMNS, revision_scorecards, scorecard, scorecard_export
from runs.views.schedules import alert_rows
from runs.views.start_form import StartJobForm
from teams.roles import Role, require_role

RECENT_RUNS = 5
HOME_ALERTS = 20


def _recent_runs(machine_ids: list[int]) -> dict[int, list[Run]]:
    """The latest RECENT_RUNS runs of each of these machines, in two queries.

    Where the database allows a LIMIT in each part of a UNION (Postgres), each machine's ids
    come from its own LIMIT on the (machine, -created) index: ranking every run of the machines
    sorted the whole table (355 ms at 10,000 runs). SQLite, the small embedded default, ranks.
    """
    recent: dict[int, list[Run]] = defaultdict(list)
    runs = Run.objects.filter(pk__in=_recent_ids(machine_ids)).select_related("config__engine", "machine")
    for run in runs.order_by("-created", "-pk"):
        recent[run.machine_id].append(run)
    return recent


def _recent_ids(machine_ids: list[int]) -> QuerySet | list[int]:
    """A subquery of the ids of each machine's latest RECENT_RUNS runs."""
    if not machine_ids:
        return []
    if not connection.features.supports_slicing_ordering_in_compound:
        order = [F("created").desc(), F("pk").desc()]
        ranked = Run.objects.filter(machine_id__in=machine_ids).annotate(
            rank=Window(RowNumber(), partition_by=[F("machine_id")], order_by=order)
        )
        return ranked.filter(rank__lte=RECENT_RUNS).values_list("pk", flat=True)
    newest = Run.objects.order_by("-created", "-pk").values_list("pk", flat=True)
    latest = [newest.filter(machine_id=m)[:RECENT_RUNS] for m in machine_ids]
    return latest[0].union(*latest[1:], all=True)


def _machine_overview(machines: list[Machine]) -> list[dict[str, Any]]:
    """Each machine with its running run, its worker's presence, how many runs wait, its latest runs."""
    ids = [m.pk for m in machines]
    runs = Run.objects.filter(machine_id__in=ids)
    running: dict[int, Run] = {}
    now = runs.filter(status=Run.Status.RUNNING).select_related("config__engine", "execution__sweep")
    for run in now.order_by("created"):  # one job per box; were there two, the newest shows
        running[run.machine_id] = run
    presence = presence_for(machines)
    recent = _recent_runs(ids)
    return [
        {"machine": m, "running": running.get(m.pk), "queued": presence[m.pk].queued,
         "presence": presence[m.pk], "recent": recent[m.pk]}
        for m in machines
    ]


def _last_nightly(sweeps: QuerySet[Sweep]) -> list[SweepExecution]:
    """The latest finished scheduled run of each of these sweeps, with its run counts, in one query."""
    scheduled = SweepExecution.objects.filter(trigger=SweepExecution.Trigger.SCHEDULE, finished__isnull=False)
    latest = scheduled.filter(sweep=OuterRef("pk")).order_by("-finished", "-pk").values("pk")[:1]
    ids = sweeps.annotate(last=Subquery(latest)).filter(last__isnull=False).values("last")

    def runs(status: str) -> Count:
        return Count("runs", filter=Q(runs__status=status), distinct=True)

    found = SweepExecution.objects.filter(pk__in=ids).select_related("sweep").annotate(
        total=Count("runs", distinct=True),
        succeeded=runs(Run.Status.SUCCEEDED),
        failed=runs(Run.Status.FAILED),
        open_alerts=Count("alerts", filter=Q(alerts__resolved__isnull=True), distinct=True),
    )
    return list(found.order_by("sweep__name"))


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The machines with their runs, the nightly results and open alerts; first steps while no run exists."""
    machines = list(visible(request.user, Machine.objects.select_related("team").prefetch_related("engines")))
    open_alerts = visible(request.user, Alert.objects.filter(resolved__isnull=True))
    shown = open_alerts.select_related("config__engine", "execution__sweep")[:HOME_ALERTS]
    overview = _machine_overview(machines)
    ctx = {
        "overview": overview,
        "nightly": _last_nightly(visible(request.user, Sweep)),
        "alert_rows": alert_rows(list(shown)),
        "open_alerts": open_alerts.count(),
        "has_schedules": visible(request.user, Schedule).filter(enabled=True).exists(),
    }
    # Every run is on a visible machine, so no recent run on any of them means no run at all.
    if not any(row["recent"] for row in overview):
        configs = visible(request.user, EngineConfig.objects.order_by("name"))
        ctx["first_steps"] = {"config": configs.first(), "tour": has_tour(configs)}
    return render(request, "engines/home.html", ctx)


@login_required
def config_list(request: HttpRequest) -> HttpResponse:
    last_run = Run.objects.filter(config=OuterRef("pk")).order_by("-created").values("pk")[:1]
    visible_configs = visible(request.user, EngineConfig.objects.select_related("engine"))
    show_archived = request.GET.get("archived") == "1"
    configs = list(visible_configs.filter(archived=show_archived).annotate(last_run_id=Subquery(last_run)))
    last_runs = Run.objects.in_bulk([c.last_run_id for c in configs if c.last_run_id])
    rows = [(config, last_runs.get(config.last_run_id)) for config in configs]
    ctx = {"rows": rows, "show_archived": show_archived,
           "other_count": visible_configs.filter(archived=not show_archived).count()}
    return render(request, "engines/config_list.html", ctx)


def _get_config(request: HttpRequest, pk: int) -> EngineConfig:
    configs = EngineConfig.objects.select_related("engine__machine__team")
    return get_visible_or_404(request.user, configs, pk=pk)


def runs_by_revision(runs: list[Run], history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs under the revision each ran with, newest revision first (a run of an old revision
    queued again sits with its revision, not between newer ones); revisions with no run here are left out."""
    by_revision: dict[int | None, list[Run]] = defaultdict(list)
    for run in runs:
        by_revision[run.revision_id].append(run)
    groups = [entry | {"runs": by_revision.pop(entry["revision"].pk)}
              for entry in history if entry["revision"].pk in by_revision]
    # Older than the revisions shown (or from before revisions): one group at the end, unlabelled.
    rest = [run for group in by_revision.values() for run in group]
    return groups + ([{"revision": None, "changes": [], "runs": rest}] if rest else [])


def _render_detail(request: HttpRequest, config: EngineConfig, form: StartJobForm) -> HttpResponse:
    runs = config.runs.select_related("config__engine", "machine", "revision")[:RECENT_RUNS * 2]
    recipe, recipe_error = render_config(config)
    ctx = {"config": config, "runs": runs, "form": form, "recipe": recipe, "recipe_error": recipe_error}
    ctx["gguf"] = model_findings(config)
    ctx["scorecards"] = revision_scorecards(config)
    history = revisions.history(config)
    ctx["revisions"] = history
    ctx["run_groups"] = runs_by_revision(list(runs), history)
    ctx["presence"] = presence_of(config.machine)
    return render(request, "engines/config_detail.html", ctx, status=400 if form.errors else 200)


@login_required
def config_detail(request: HttpRequest, pk: int) -> HttpResponse:
    config = _get_config(request, pk)
    fmt = wants_export(request)
    if fmt:
        rows = scorecard_export(scorecard(config))
        return table_response(rows, SCORECARD_COLUMNS, fmt, f"scorecard-{config.pk}")
    return _render_detail(request, config, StartJobForm(initial={"max_tokens": config.max_tokens}))


@login_required
@require_POST
def config_start_run(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue a run of this config (any job) and go to its live page (member role needed)."""
    config = _get_config(request, pk)
    require_role(request.user, config.machine.team, Role.MEMBER)
    form = StartJobForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            run = start_run(config, form.cleaned_data["job"], form.params(), request.user, request=request)
        except ValueError as exc:
            form.add_start_error(exc)
        else:
            return redirect(run)
    return _render_detail(request, config, form)
