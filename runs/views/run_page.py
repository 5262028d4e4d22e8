"""Pages of the runs app: the filtered run list and the live run page."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST

from engines.access import get_visible_or_404, visible
from engines.ids import parse_key
from engines.models import EngineConfig, Machine
from measure import catalog
from measure.catalog import ACCEPTANCE_BY_POSITION, ACCEPTANCE_RATE
from runs.actions.runs import cancel_run, start_run
from runs.actions.workers import queued_warning
from runs.core import registry
from runs.core.typed_reads import figure, recorded, stored, summary_of
from runs.models import Run
from runs.results import llmd
from runs.results.comparison import SelectionError, parse_selection
from runs.results.export import position_columns, position_values, table_response, wants_export
from runs.results.flat import warning_codes
from runs.templatetags.run_format import (
    REASONING_KEYS,
    REASONING_METRICS,
    SUMMARY_METRICS,
    catalog_columns,
    has_reasoning,
)
from teams.roles import Role, require_role

PAGE_SIZE = 50
# GET parameter -> lookup; ids must be digits, anything else is ignored rather than a 500, and a
# number no row can have (too big for the database) matches nothing, as an unknown id does.
FILTERS = {"config": "config_id", "machine": "machine_id", "job": "job", "status": "status"}
ID_FILTERS = ("config", "machine")


def filtered_runs(request: HttpRequest) -> tuple[QuerySet[Run], dict[str, str]]:
    """The runs the user may see, narrowed by the page's filters; and the filters that applied."""
    runs = visible(request.user, Run.objects.select_related("config__engine", "machine", "revision"))
    chosen: dict[str, str] = {}
    for param, lookup in FILTERS.items():
        value = request.GET.get(param, "")
        if not value or (param in ID_FILTERS and not value.isdigit()):
            continue
        if param in ID_FILTERS and parse_key(value) is None:
            runs = runs.none()
        else:
            runs = runs.filter(**{lookup: value})
        chosen[param] = value
    return runs, chosen


# The most runs one CSV/JSON download of the list holds (the newest first).
EXPORT_LIMIT = 5000
# What the run ran with; then a column for each catalogue metric gathered over a run's requests
# (measure.catalog: a median or pooled, as the run page shows it); then its request counts and URL;
# then acceptance_pos_1 .. _k (%), for the most draft positions among the runs exported.
RUN_COLUMNS = [
    "id", "created", "finished", "config", "revision", "engine", "machine", "model", "quantization",
    "draft_method", "lookahead", "job", "status", "done", "total",
]
OUTCOME_COLUMNS = [
    "acceptance_source", "requests_attempted", "requests_succeeded", "requests_failed", "failed_share",
    "warnings", "url",
]


def export_columns() -> list[str]:
    """The runs list's download columns, its figures those the catalogue declares over requests."""
    return RUN_COLUMNS + _figure_columns() + OUTCOME_COLUMNS


def _figure_columns() -> list[str]:
    return [key for key, declared in catalog.CATALOG.items() if declared.over_requests != "value"]


def _export_row(run: Run) -> dict[str, object]:
    summary, ran_with = summary_of(run), run.ran_with()
    return {
        "id": run.pk, "created": run.created.isoformat(), "url": run.get_absolute_url(),
        "revision": run.revision.number if run.revision is not None else None,
        "model": ran_with.get("model"), "quantization": ran_with.get("quantization") or None,
        "draft_method": ran_with.get("speculative_method") or None, "lookahead": ran_with.get("lookahead"),
        "finished": run.finished.isoformat() if run.finished else None,
        "config": run.config.name, "engine": run.config.engine.name, "machine": run.machine.name,
        "job": run.job, "status": run.status, "done": run.progress_done, "total": run.progress_total,
        **{key: figure(summary, key) for key in _figure_columns()}, "warnings": warning_codes(run),
        "acceptance_source": _acceptance_source(stored(summary, ACCEPTANCE_RATE)),
        **_outcome_values(recorded(summary, "outcomes")),
        **position_values(recorded(summary, ACCEPTANCE_BY_POSITION)),
    }


def _acceptance_source(rate: object) -> object:
    """Where the run's pooled acceptance counts came from (docs/metrics.md, Acceptance)."""
    return rate.get("source") if isinstance(rate, dict) else None


def _outcome_values(outcomes: object) -> dict[str, object]:
    """The run's request counts (runs/core/outcomes.py); None for a job that counts none."""
    got = outcomes if isinstance(outcomes, dict) else {}
    keys = ("attempted", "succeeded", "failed")
    return {f"requests_{key}": got.get(key) for key in keys} | {"failed_share": got.get("failed_share")}


# The runs list's "Compare selected" button sends ?compare=selected with a `runs` value per ticked run.
COMPARE_SELECTED = "selected"
COMPARE_AT_LEAST = 2


def _compare_selected(request: HttpRequest) -> tuple[str, str]:
    """(the compare page's URL for the ticked runs, "") or ("", why they cannot be compared)."""
    try:
        ids = parse_selection({"runs": request.GET.getlist("runs")}).runs
    except SelectionError as error:
        return "", gettext("Compare selected: %(error)s") % {"error": error.message}
    if len(ids) < COMPARE_AT_LEAST:
        why = ngettext(
            "Compare selected: tick at least %(least)s runs to compare (%(ticked)s is ticked).",
            "Compare selected: tick at least %(least)s runs to compare (%(ticked)s are ticked).", len(ids))
        return "", why % {"least": COMPARE_AT_LEAST, "ticked": len(ids)}
    # Oldest first: compare takes the first run's config as the baseline.
    return f"{reverse('runs:compare')}?runs={','.join(str(pk) for pk in sorted(ids))}", ""


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    """The runs, filtered; ?format=csv|json downloads the filtered list (newest EXPORT_LIMIT);
    ?compare=selected&runs=<id>&runs=<id> opens the compare page with the ticked runs."""
    runs, chosen = filtered_runs(request)
    if fmt := wants_export(request):
        picked = runs.select_related("revision").defer("engine_log", "params", "provenance")
        exported = list(picked[:EXPORT_LIMIT])
        rows = [_export_row(run) for run in exported]
        return table_response(rows, export_columns() + position_columns(rows), fmt, "sparkdash-runs")
    compare_error = ""
    if request.GET.get("compare") == COMPARE_SELECTED:
        url, compare_error = _compare_selected(request)
        if url:
            return redirect(url)
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
    ctx = {
        "page": page,
        "chosen": chosen,
        "configs": visible(request.user, EngineConfig.objects.only("pk", "name")),
        "machines": visible(request.user, Machine.objects.only("pk", "name")),
        "jobs": [(name, gettext(label)) for name, label in registry.job_choices()],
        "statuses": Run.Status.choices,
        "compare_error": compare_error,
        "ticked": set(request.GET.getlist("runs")),
    }
    return render(request, "runs/list.html", ctx, status=400 if compare_error else 200)


def _get_run(request: HttpRequest, pk: int) -> Run:
    runs = Run.objects.select_related("config__engine__machine", "machine__team", "revision")
    return get_visible_or_404(request.user, runs, pk=pk)


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The live page: run_detail.js takes over from the embedded run."""
    return _render_detail(request, _get_run(request, pk))


def _render_detail(request: HttpRequest, run: Run, again_error: str = "") -> HttpResponse:
    job = registry.get(run.job)
    ctx = {"run": run, "run_data": run.to_dict(), "metrics": SUMMARY_METRICS + REASONING_METRICS, "job": job,
           "progress_unit": gettext(job.progress_unit), "params_text": job.params_text(run.params),
           "worker_warning": queued_warning(run), "reasoning_keys": REASONING_KEYS,
           "catalog": catalog_columns(), "since": changed_since(run), "again_error": again_error,
           "has_reasoning": has_reasoning(summary_of(run))}
    return render(request, "runs/detail.html", ctx, status=400 if again_error else 200)


def changed_since(run: Run) -> dict[str, Any] | None:
    """How the config's settings differ now from those the run ran with (None: they do not)."""
    latest = run.config.revisions.order_by("-number").first()
    if run.revision is None or latest is None or latest.pk == run.revision_id:
        return None
    return {"revision": latest, "changes": latest.changes_from(run.revision)}


@login_required
@require_POST
def run_again(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue the same job with the same job settings and config revision (member role needed)."""
    run = _get_run(request, pk)
    require_role(request.user, run.machine.team, Role.MEMBER)
    try:
        again = start_run(run.config, run.job, run.params, request.user, request=request,
                          revision=run.revision)
    except ValueError as exc:
        return _render_detail(request, run, again_error=str(exc))
    return redirect(again)


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a queued or running run (member role needed)."""
    run = _get_run(request, pk)
    require_role(request.user, run.machine.team, Role.MEMBER)
    cancel_run(run, request.user, request)
    return redirect(run)


@login_required
def run_llmd(request: HttpRequest, pk: int) -> HttpResponse:
    """The run as llm-d-benchmark's Benchmark Report v0.2.1, a JSON download (succeeded runs)."""
    run = _get_run(request, pk)
    if run.status != Run.Status.SUCCEEDED:
        refused = gettext("only a succeeded run has a report")
        return HttpResponse(refused, status=409, content_type="text/plain")
    response = JsonResponse(llmd.report(run), json_dumps_params={"indent": 2, "ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="sparkdash-run-{run.pk}-llm-d.json"'
    return response


LOG_LINES_SHOWN = 2000


@login_required
def run_log(request: HttpRequest, pk: int) -> HttpResponse:
    """The engine's output during the run, filtered by ?q= (case-insensitive substring)."""
    run = _get_run(request, pk)
    query = request.GET.get("q", "").strip()
    lines = run.engine_log.splitlines()
    if query:
        lines = [line for line in lines if query.lower() in line.lower()]
    ctx = {"run": run, "query": query, "total": len(lines), "lines": lines[-LOG_LINES_SHOWN:]}
    return render(request, "runs/log.html", ctx)
