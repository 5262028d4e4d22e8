"""The demo tour's page: GET explains it (or shows a started tour's runs), POST starts it."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext

from engines.access import visible
from engines.ids import parse_key
from engines.models import EngineConfig
from runs.actions.tour import TOUR_CONFIGS, TourUnavailable, demo_configs, start_tour, tour_runs
from runs.models import Run
from teams.roles import Role, require_role_in_each

REFRESH_S = 3  # the page reloads while a run of the tour is unfinished


@login_required
def tour_page(request: HttpRequest) -> HttpResponse:
    """?runs=<ids>: the tour those runs make up; without it, what the tour does and its button."""
    if request.method == "POST":
        return _start(request)
    named = _ids(request.GET.get("runs", ""))
    # An id no row can have (too big for the database) is an unknown run: not a tour either.
    ids = [pk for pk in named if pk is not None]
    tour = tour_runs(visible(request.user, Run), ids) if ids and len(ids) == len(named) else None
    if named and tour is None:
        error = gettext("these runs are not a demo tour")
        return render(request, "runs/tour.html", {"error": error}, status=404)
    unfinished = tour is not None and any(r.finished is None for r in tour.runs)
    ctx = {"tour": tour, "configs": TOUR_CONFIGS, "refresh_s": REFRESH_S if unfinished else None}
    return render(request, "runs/tour.html", ctx)


def _start(request: HttpRequest) -> HttpResponse:
    """Start the tour: its runs need the member role in the demo configs' teams."""
    configs = visible(request.user, EngineConfig)
    try:
        teams = {config.machine.team for config in demo_configs(configs)}
    except TourUnavailable:
        pass  # start_tour says what is missing
    else:
        require_role_in_each(request.user, teams, Role.MEMBER)
    try:
        tour = start_tour(configs, request.user, request)
    except (TourUnavailable, ValueError) as exc:
        return render(request, "runs/tour.html", {"error": str(exc), "configs": TOUR_CONFIGS}, status=400)
    return redirect(f"/tour/?runs={','.join(str(pk) for pk in tour.ids)}")


def _ids(text: str) -> list[int | None]:
    return [parse_key(part) for part in text.split(",") if part.strip().isdigit()]
