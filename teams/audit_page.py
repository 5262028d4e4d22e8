"""The team's audit log page (team admins): newest first, filtered by action, object type and
person, and downloadable as CSV (?format=csv) with every cell through teams.csvsafe.

The log is kept: nothing deletes events automatically (an operator may prune the table by hand).
"""

from __future__ import annotations

import csv
import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from teams.csvsafe import safe_row
from teams.models import AuditEvent, Role, Team
from teams.roles import require_role, team_or_404

PAGE_SIZE = 50
# The most events one CSV download holds (the newest first).
EXPORT_LIMIT = 50_000
FILTERS = {"action": "action", "object_type": "object_type", "person": "actor_name"}
CSV_COLUMNS = ["at", "person", "address", "action", "object_type", "object_id", "object", "team", "detail"]


def _filtered(request: HttpRequest, team: Team) -> tuple[QuerySet[AuditEvent], dict[str, str]]:
    events = AuditEvent.objects.filter(team=team).order_by("-at", "-id")
    chosen: dict[str, str] = {}
    for param, field in FILTERS.items():
        value = request.GET.get(param, "").strip()
        if value:
            events = events.filter(**{field: value})
            chosen[param] = value
    return events, chosen


def _choices(team: Team, field: str) -> list[str]:
    values = AuditEvent.objects.filter(team=team).order_by(field).values_list(field, flat=True)
    return list(values.distinct())


@login_required
@require_GET
def audit_page(request: HttpRequest, pk: int) -> HttpResponse:
    """GET /teams/<id>/audit/: the team's events (admins; a stranger gets 404)."""
    team = team_or_404(request.user, pk)
    require_role(request.user, team, Role.ADMIN)
    events, chosen = _filtered(request, team)
    if request.GET.get("format") == "csv":
        return _csv(events[:EXPORT_LIMIT], team)
    ctx: dict[str, Any] = {
        "team": team, "chosen": chosen,
        "page": Paginator(events, PAGE_SIZE).get_page(request.GET.get("page")),
        "actions": _choices(team, "action"), "object_types": _choices(team, "object_type"),
        "people": _choices(team, "actor_name"),
    }
    return render(request, "teams/audit.html", ctx)


def _csv(events: QuerySet[AuditEvent], team: Team) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="audit-team-{team.pk}.csv"'
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for event in events:
        writer.writerow(safe_row([
            event.at.isoformat(), event.actor_name, event.address, event.action, event.object_type,
            event.object_id, event.object_name, event.team_name,
            json.dumps(event.detail, sort_keys=True) if event.detail else "",
        ]))
    return response
