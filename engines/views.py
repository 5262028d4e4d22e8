"""Pages of the engines app: creating and editing a config, and a config matrix made from one (a
config's page, with its runs, is runs')."""
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


def _get_config(request: HttpRequest, pk: int) -> EngineConfig:
    return get_visible_or_404(request.user, EngineConfig.objects.select_related("engine__machine"), pk=pk)


def _edit(request: HttpRequest, config: EngineConfig | None) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    form = EngineConfigForm(data, instance=config, user=request.user)
    if form.is_valid():
        return redirect(form.save())
    ctx = {"form": form, "config": config}
    return render(request, "engines/config_form.html", ctx, status=400 if form.errors else 200)


@login_required
def config_create(request: HttpRequest) -> HttpResponse:
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
        query = urlencode([("configs", config.pk) for config in created])
        ctx |= {"created": created, "sweep_url": f"{reverse('runs:sweep-new')}?{query}"}
    return render(request, "engines/config_matrix.html", ctx)
