"""`GET /metrics`: the latest figures per config in Prometheus's text format, for a team's Grafana.

Each config's latest succeeded run of each job (and EvalPlus dataset) gives its figures, the
medians of that run; every series is labelled with the config, machine, engine and job. The
counts of runs by status come with them. Two queries, however many runs there are.

Access: a logged-in session, or `Authorization: Bearer <SPARKDASH_METRICS_TOKEN>` (empty: off).
Labels hold names only: no engine URL, API key or webhook URL is ever written.
"""
from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from runs.core.metric import field_of, median_of, share_of
from runs.models import Run
from runs.results.scorecard import latest_succeeded

__all__ = ["FIGURES", "LatestFiguresCollector", "metrics", "render_metrics"]

LABELS = ("config", "machine", "engine", "engine_kind", "simulator", "job")
Summary = Mapping[str, Any]
# (extra label values, value) for each series one run gives a figure.
Reader = Callable[[Summary], Iterable[tuple[tuple[str, ...], float | None]]]


@dataclass(frozen=True)
class Figure:
    """One metric family: its name and help, the job it comes from, how to read it."""

    name: str
    documentation: str
    job: str
    read: Reader
    extra_labels: tuple[str, ...] = ()


def _one(read: Callable[[Summary], float | None]) -> Reader:
    return lambda summary: [((), read(summary))]


def _decode(summary: Summary) -> Iterable[tuple[tuple[str, ...], float | None]]:
    return [((source,), median_of(f"decode_tps_{source}")(summary)) for source in ("client", "engine")]


def _levels(summary: Summary) -> Iterable[tuple[tuple[str, ...], float | None]]:
    levels = summary.get("levels") or {}
    return [((c,), median_of("total_tps")(levels[c])) for c in sorted(levels, key=int)]


def _pass_at_1(summary: Summary) -> Iterable[tuple[tuple[str, ...], float | None]]:
    suite = str(summary.get("dataset") or "")
    return [((suite, tests), summary.get(f"pass_at_1_{tests}")) for tests in ("plus", "base")]


def _completed_task_s(summary: Summary) -> float | None:
    return summary.get("task_s") if summary.get("outcome") == "completed" else None


FIGURES = [
    Figure("sparkdash_decode_tokens_per_second", "Median decode tok/s of the latest speed run "
           "(source: client clock or the engine's own figure)", "speed", _decode, ("source",)),
    Figure("sparkdash_ttft_seconds", "Median time to first token of the latest speed run", "speed",
           _one(median_of("ttft_s"))),
    Figure("sparkdash_acceptance_rate", "Median draft acceptance rate (0-1) of the latest speed run",
           "speed", _one(median_of("acceptance_rate"))),
    Figure("sparkdash_concurrency_total_tokens_per_second", "Total generated tok/s of the box at each "
           "concurrency level of the latest concurrency sweep", "concurrency", _levels, ("concurrency",)),
    Figure("sparkdash_mmlu_pro_accuracy", "MMLU-Pro accuracy (0-1) of the latest run", "mmlu-pro",
           _one(field_of("accuracy"))),
    Figure("sparkdash_evalplus_pass_at_1", "EvalPlus pass@1 (0-1) of the latest run per suite, on the "
           "plus (extended) or base tests", "evalplus", _pass_at_1, ("suite", "tests")),
    Figure("sparkdash_agent_table_score", "Rows of the API table right in the latest agent-table run",
           "agent-table", _one(field_of("score"))),
    Figure("sparkdash_agent_table_rows", "Rows of the API table's truth in the latest agent-table run",
           "agent-table", _one(field_of("rows"))),
    Figure("sparkdash_agent_table_task_seconds", "Wall time of the latest agent-table run, when it "
           "completed", "agent-table", _one(_completed_task_s)),
    Figure("sparkdash_needle_found_ratio", "Share of needles found (0-1) in the latest needle run", "needle",
           _one(share_of("score", "total"))),
]


def latest_runs() -> list[Run]:
    """Each config's latest succeeded run per job (EvalPlus: per dataset), in one query."""
    runs = latest_succeeded(1).select_related("config__engine", "machine").only(
        "pk", "job", "summary", "finished", "created", "config__name", "config__engine__name",
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
        for figure in FIGURES:
            labels = [*LABELS, *figure.extra_labels]
            family = GaugeMetricFamily(figure.name, figure.documentation, labels=labels)
            for run in runs:
                if run.job != figure.job:
                    continue
                for extra, value in figure.read(run.summary or {}):
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        family.add_metric([*_labels(run), *extra], float(value))
            yield family
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
