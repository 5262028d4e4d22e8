"""`GET /metrics`: the latest figures per config in Prometheus's text format, for a team's Grafana.

Each config's latest succeeded run of each job (and EvalPlus dataset) gives its figures, the
medians of that run; every series is labelled with the config, machine, engine and job. The
counts of runs by status come with them, and each latest run's energy (joules per output token
and per request, absent where no power was read) and seconds throttled (absent without
telemetry). Two queries, however many runs there are.

Access: a logged-in session, or `Authorization: Bearer <SPARKDASH_METRICS_TOKEN>` (empty: off).
Labels hold names only: no engine URL, API key or webhook URL is ever written.
"""
from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from runs.core import registry
from runs.core.hardware import energy_of, throttled_s
from runs.models import Run
from runs.results.scorecard import latest_succeeded

__all__ = ["LatestFiguresCollector", "metrics", "render_metrics"]

LABELS = ("config", "machine", "engine", "engine_kind", "simulator", "job")


def latest_runs() -> list[Run]:
    """Each config's latest succeeded run per job (EvalPlus: per dataset), in one query."""
    runs = latest_succeeded(1).select_related("config__engine", "machine").only(
        "pk", "job", "summary", "warnings", "finished", "created", "config__name", "config__engine__name",
        "config__engine__kind", "config__engine__simulator", "machine__name",
    )
    return list(runs.order_by("config__name", "job", "pk"))


def _labels(run: Run) -> list[str]:
    engine = run.config.engine
    simulator = "true" if engine.simulator else "false"
    return [run.config.name, run.machine.name, engine.name, engine.kind, simulator, run.job]


class LatestFiguresCollector(Collector):
    """Yields the figure families of the latest runs, their finish times and the run counts."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        runs = latest_runs()
        for job, figure in ((spec.name, f) for spec in registry.JOBS.values() for f in spec.exported):
            labels = [*LABELS, *figure.extra_labels]
            family = GaugeMetricFamily(figure.name, figure.documentation, labels=labels)
            for run in runs:
                if run.job != job:
                    continue
                for extra, value in figure.read(run.summary or {}):
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        family.add_metric([*_labels(run), *extra], float(value))
            yield family
        yield from _hardware(runs)
        yield self._finished(runs)
        yield self._by_status()

    def _finished(self, runs: list[Run]) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "sparkdash_run_finished_timestamp_seconds",
            "When the latest succeeded run of each config and job finished (Unix time)", labels=LABELS,
        )
        # EvalPlus has a latest run per suite: one series per job holds the later of them.
        latest: dict[tuple[str, ...], float] = {}
        for run in runs:
            if run.finished:
                key = tuple(_labels(run))
                latest[key] = max(latest.get(key, 0.0), run.finished.timestamp())
        for key, timestamp in latest.items():
            family.add_metric(list(key), timestamp)
        return family

    def _by_status(self) -> GaugeMetricFamily:
        counts = dict(Run.objects.order_by().values_list("status").annotate(n=Count("pk")))
        family = GaugeMetricFamily("sparkdash_runs", "Runs in the database by status", labels=["status"])
        for status in Run.Status.values:
            family.add_metric([status], counts.get(status, 0))
        return family


# (name, documentation, the key in summary.telemetry.energy)
ENERGY_FAMILIES = [
    ("sparkdash_joules_per_output_token", "Energy per output token above idle (J)", "j_per_token"),
    ("sparkdash_joules_per_request", "Energy per request above idle (J)", "j_per_request"),
]


def _hardware(runs: list[Run]) -> Iterator[GaugeMetricFamily]:
    """The latest runs' energy (where measured), seconds throttled (where telemetry ran) and the
    share of their requests that failed (where the job counts outcomes)."""
    for name, documentation, key in ENERGY_FAMILIES:
        family = GaugeMetricFamily(name, documentation, labels=LABELS)
        for run in runs:
            value = (energy_of(run.summary) or {}).get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                family.add_metric(_labels(run), float(value))
        yield family
    throttled = GaugeMetricFamily(
        "sparkdash_throttled_seconds", "Seconds the box was throttled during the run (0: not throttled)",
        labels=LABELS,
    )
    for run in runs:
        seconds = throttled_s(run.summary, run.warnings)
        if seconds is not None or (run.summary or {}).get("telemetry"):
            throttled.add_metric(_labels(run), seconds or 0.0)
    yield throttled
    failed = GaugeMetricFamily(
        "sparkdash_failed_request_share", "Share (0-1) of the latest run's requests that failed "
        "(absent for jobs that count no request outcomes)", labels=LABELS,
    )
    for run in runs:
        outcomes = (run.summary or {}).get("outcomes")
        if isinstance(outcomes, dict) and isinstance(outcomes.get("failed_share"), int | float):
            failed.add_metric(_labels(run), float(outcomes["failed_share"]))
    yield failed


def render_metrics() -> bytes:
    """The text exposition, from a private registry (nothing of the process's default one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LatestFiguresCollector())
    return generate_latest(registry)


def _authorized(request: HttpRequest) -> bool:
    if request.user.is_authenticated:
        return True
    token = getattr(settings, "SPARKDASH_METRICS_TOKEN", "")
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # compare_digest: the time taken does not tell how much of a guess was right.
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus scrape target; 401 without a session or the bearer token."""
    if not _authorized(request):
        response = HttpResponse(
            "401 Unauthorized: log in, or send Authorization: Bearer <SPARKDASH_METRICS_TOKEN>\n",
            status=401, content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = 'Bearer realm="sparkdash"'
        return response
    return HttpResponse(render_metrics(), content_type=CONTENT_TYPE_LATEST)
