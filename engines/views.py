"""Pages of the engines app: creating and editing a config (its page, with its runs, is runs')."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from engines.access import get_visible_or_404
from engines.forms import EngineConfigForm
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
