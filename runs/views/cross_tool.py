"""The cross-tool page: one config's figures from SparkDash and each imported tool, level by level."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from engines.access import get_visible_or_404
from engines.models import EngineConfig
from runs.models import Run
from runs.results.cross_tool import OURS, cross_tool

RUNS_READ = 200  # the config's newest succeeded runs: enough for each tool's latest at each level


@login_required
def cross_tool_page(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_visible_or_404(request.user, EngineConfig.objects.select_related("engine__machine"), pk=pk)
    runs = (Run.objects.filter(config=config, status=Run.Status.SUCCEEDED)
            .select_related("revision")
            .only("pk", "job", "summary", "provenance", "created", "revision__number", "config_id")
            .order_by("-created", "-pk")[:RUNS_READ])
    ctx = {"config": config, "levels": cross_tool(runs), "ours": OURS}
    return render(request, "runs/cross_tool.html", ctx)
