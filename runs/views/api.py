"""JSON API for scripts and the browser's polling fallback; session login required."""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from engines.access import get_visible_or_404
from runs.models import Run, Sample
from runs.results.chart_samples import chart_samples
from teams.decorators import api_login_required

SAMPLES_PAGE = 5000
MAX_POINTS_DIGITS = 9


def _get_run(request: HttpRequest, pk: int) -> Run:
    runs = Run.objects.select_related("config__engine", "machine", "revision")
    return get_visible_or_404(request.user, runs, pk=pk)


@require_GET
@api_login_required
def run_detail(request: HttpRequest, pk: int) -> JsonResponse:
    """GET /api/runs/<id>: the run as the CLI prints it."""
    return JsonResponse(_get_run(request, pk).to_dict())


@require_GET
@api_login_required
def run_samples(request: HttpRequest, pk: int) -> JsonResponse:
    """GET /api/runs/<id>/samples?after=SEQ: samples after SEQ, in order, one page at a time."""
    run = _get_run(request, pk)
    try:
        after = int(request.GET.get("after", "-1"))
    except ValueError:
        return JsonResponse({"error": "after must be an integer"}, status=400)
    # &max_points=N (the run page): a long run's charted series thinned to about N points.
    points = request.GET.get("max_points", "")
    # More digits than any chart's width is a whole run: read as no thinning, not as an int.
    thinned = points.isdigit() and len(points) <= MAX_POINTS_DIGITS
    samples = chart_samples(run, after, int(points)) if thinned else None
    if samples is None:
        rows = Sample.objects.filter(run=run, seq__gt=after).order_by("seq")[:SAMPLES_PAGE]
        samples = [s.to_dict() for s in rows]
    return JsonResponse({"run": run.to_dict(), "samples": samples})
