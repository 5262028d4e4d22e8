"""Setting up engines from the dashboard (team admins): add and edit one, test its connection
before saving, and its page with its status. Adding a machine is engines.machine_views'.

The test runs on the engine's machine's worker, which is runs' (runs.actions.setup): the pages
reach it through engines.connection_checks, which runs fills when its app is ready."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from engines import connection_checks
from engines.access import get_visible_or_404
from engines.engine_form import EngineForm
from engines.models import Engine
from teams import audit
from teams.changes import changed_fields, snapshot
from teams.decorators import api_login_required
from teams.roles import Role, require_role, require_role_in_each


def _engine(request: HttpRequest, pk: int, role: Role) -> Engine:
    engine = get_visible_or_404(request.user, Engine.objects.select_related("machine__team"), pk=pk)
    require_role(request.user, engine.machine.team, role)
    return engine


@login_required
def engine_create(request: HttpRequest) -> HttpResponse:
    """A new engine on a machine of a team where the user is admin (403 when there is none)."""
    require_role_in_each(request.user, [], Role.ADMIN)
    return _edit(request, None)


@login_required
def engine_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _edit(request, _engine(request, pk, Role.ADMIN))


def _edit(request: HttpRequest, engine: Engine | None) -> HttpResponse:
    """Save (action=save), or test the connection of what the form says (action=check)."""
    form = EngineForm(request.POST if request.method == "POST" else None, instance=engine, user=request.user)
    before = snapshot(engine, form.fields)
    check = None
    if form.is_valid() and request.POST.get("action") == "check":
        data = form.cleaned_data
        check = connection_checks.current().start(data["machine"], data["kind"], data["base_url"],
                                                  data["api_key"], request.user, engine=engine)
    elif form.is_valid():
        saved = form.save()
        connection_checks.current().adopt(saved, request.user)
        if engine is None:
            audit.record(request.user, "created", saved, saved.machine.team, request=request)
        elif fields := changed_fields(before, saved):
            audit.record(request.user, "changed", saved, saved.machine.team, request=request, fields=fields)
        return redirect("engines:engine-detail", saved.pk)
    ctx = {"form": form, "engine": engine, "check": check}
    return render(request, "engines/engine_form.html", ctx, status=400 if form.errors else 200)


@login_required
def engine_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The engine's settings, configs and status: its latest connection checks."""
    engine = _engine(request, pk, Role.VIEWER)
    checks = engine.connection_checks.select_related("machine")[:5]
    ctx = {"engine": engine, "configs": engine.configs.order_by("name"), "checks": checks,
           "check": checks[0] if checks else None}
    return render(request, "engines/engine_detail.html", ctx)


@login_required
@require_POST
def engine_check(request: HttpRequest, pk: int) -> HttpResponse:
    """Check the saved engine's connection now (member role), on its machine's worker."""
    engine = _engine(request, pk, Role.MEMBER)
    connection_checks.current().start(engine.machine, engine.kind, engine.base_url, engine.api_key,
                                      request.user, engine=engine)
    return redirect("engines:engine-detail", engine.pk)


@api_login_required
@require_GET
def check_detail(request: HttpRequest, pk: int) -> JsonResponse:
    """A connection check as JSON, for the page that waits for it (finished: null while queued)."""
    return JsonResponse(connection_checks.current().find(request.user, pk))
