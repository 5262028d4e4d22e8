"""The flat results table (runs.results.flat): a page with the runs list's filters, and its rows as
CSV, Markdown or JSON downloads."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext

from runs.core import registry
from runs.models import Run
from runs.results.export import table_response, wants_export
from runs.results.flat import cell_text, columns, flat_rows, heading, markdown
from runs.views.run_page import filtered_runs

# The most runs one page or download of the table holds (the newest first).
TABLE_LIMIT = 5000


@login_required
def results_table(request: HttpRequest) -> HttpResponse:
    """GET /results/: one row per run and load level; ?format=csv|md|json downloads the same rows."""
    runs, chosen = filtered_runs(request)
    picked = runs.select_related("config__engine__machine", "revision").defer("engine_log")
    rows, shown = flat_rows(picked.order_by("-created")[:TABLE_LIMIT]), columns()
    if fmt := wants_export(request):
        return table_response(rows, shown, fmt, "sparkdash-results")
    if request.GET.get("format") == "md":
        response = HttpResponse(markdown(rows, shown), content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="sparkdash-results.md"'
        return response
    context = {"rows": [[_shown(row, c) for c in shown] for row in rows],
               "columns": [{"key": c, "text": heading(c)} for c in shown],
               "chosen": chosen, "jobs": registry.job_choices(), "statuses": Run.Status.choices}
    return render(request, "runs/results.html", context)


def _shown(row: dict[str, Any], column: str) -> str:
    """A cell on the page: the download's text, but minutes for a time and the simulator's label."""
    value = row.get(column)
    if column == "finished" and value:
        return str(value)[:16].replace("T", " ")
    if column == "simulator":
        return gettext("simulator") if value else ""
    return cell_text(value)
