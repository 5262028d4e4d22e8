"""`GET /metrics`: the latest figures per config in Prometheus's text format, for a team's Grafana.

Each config's latest succeeded run of each job (and EvalPlus dataset) gives its figures, the
medians of that run; every series is labelled with the config, machine, engine and job. The
counts of runs by status come with them, and each latest run's energy (joules per output token
and per request, absent where no power was read) and seconds throttled (absent without
telemetry). Two queries, however many runs there are.

Access, each seeing its own teams' series only (the runs on their machines, and their counts):
a logged-in session (the user's teams; a superuser all), or `Authorization: Bearer <token>`
with a team's metrics token (runs.models.MetricsToken: that team's). The deprecated
SPARKDASH_METRICS_TOKEN, when the operator sets it, sees every team. Any other token gets the
same 401 as none, whether it is unknown or revoked. Labels hold names only (the team's among
them, since names are unique per team): no engine URL, API key or webhook URL is ever written.
"""
from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from engines.access import visible
from runs.core import registry
from runs.core.hardware import energy_of, throttled_s
from runs.core.typed_reads import recorded
from runs.models import MetricsToken, Run
from runs.results.scorecard import latest_succeeded

__all__ = ["LatestFiguresCollector", "metrics", "render_metrics"]

LABELS = ("team", "config", "machine", "engine", "engine_kind", "simulator", "job")


def latest_runs(among: QuerySet[Run]) -> list[Run]:
    """Each config's latest succeeded run per job (EvalPlus: per dataset) among ``among``, in one query."""
    runs = latest_succeeded(1, among=among).select_related("config__engine", "machine__team").only(
        "pk", "job", "summary", "warnings", "finished", "created", "config__name", "config__engine__name",
        "config__engine__kind", "config__engine__simulator", "machine__name", "machine__team__name",
    )
    return list(runs.order_by("machine__team__name", "config__name", "job", "pk"))


def _labels(run: Run) -> list[str]:
    engine = run.config.engine
    simulator = "true" if engine.simulator else "false"
    return [run.machine.team.name, run.config.name, run.machine.name, engine.name, engine.kind, simulator,
            run.job]


class LatestFiguresCollector(Collector):
    """Yields the figure families of the latest runs, their finish times and the run counts.

    :param among: the runs the scraper may see (its team's, or its user's teams')
    """

    def __init__(self, among: QuerySet[Run]) -> None:
        self.among = among

    def collect(self) -> Iterator[GaugeMetricFamily]:
        runs = latest_runs(self.among)
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
        counts = dict(self.among.order_by().values_list("status").annotate(n=Count("pk")))
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
        if seconds is not None or recorded(run, "telemetry"):
            throttled.add_metric(_labels(run), seconds or 0.0)
    yield throttled
    failed = GaugeMetricFamily(
        "sparkdash_failed_request_share", "Share (0-1) of the latest run's requests that failed "
        "(absent for jobs that count no request outcomes)", labels=LABELS,
    )
    for run in runs:
        outcomes = recorded(run, "outcomes")
        if isinstance(outcomes, dict) and isinstance(outcomes.get("failed_share"), int | float):
            failed.add_metric(_labels(run), float(outcomes["failed_share"]))
    yield failed


def render_metrics(among: QuerySet[Run]) -> bytes:
    """The text exposition of ``among``'s runs, from a private registry (nothing of the process's
    default one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LatestFiguresCollector(among))
    return generate_latest(registry)


def scraped_runs(request: HttpRequest) -> QuerySet[Run] | None:
    """The runs this scrape may see, or None: a session's teams', a team token's team's, or (the
    deprecated SPARKDASH_METRICS_TOKEN) every team's."""
    if request.user.is_authenticated:
        return visible(request.user, Run)
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    given = given.strip()
    if scheme.lower() != "bearer" or not given:
        return None
    everyone = getattr(settings, "SPARKDASH_METRICS_TOKEN", "")
    # compare_digest: the time taken does not tell how much of a guess was right.
    if everyone and hmac.compare_digest(given.encode(), everyone.encode()):
        return Run.objects.all()
    token = MetricsToken.live(given)
    if token is None:
        return None
    MetricsToken.objects.filter(pk=token.pk).update(last_used=timezone.now())
    return Run.objects.filter(machine__team_id=token.team_id)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus scrape target; 401 without a session or a live bearer token."""
    among = scraped_runs(request)
    if among is None:
        response = HttpResponse(
            "401 Unauthorized: log in, or send Authorization: Bearer <your team's metrics token>\n",
            status=401, content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = 'Bearer realm="sparkdash"'
        return response
    return HttpResponse(render_metrics(among), content_type=CONTENT_TYPE_LATEST)
