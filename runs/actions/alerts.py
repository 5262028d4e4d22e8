"""Regression alerts: a scheduled sweep run worse than the sweep's recent scheduled runs.

When a scheduled sweep run (SweepExecution, trigger "schedule") has finished, every
config x job cell of it is checked, metric by metric (each job kind's metrics in runs.core.registry,
less those marked `alert=False`, such as the agent table's raw score that its F1 covers):

- baseline: the cell's values in the previous BASELINE_EXECUTIONS finished scheduled runs of the
  same sweep (succeeded runs only; a run's value is e.g. its median decode tok/s). Values of a
  cell and metric that an open alert was raised on stay out: an unresolved regression does not
  become the norm. Resolving the alert accepts it;
- current: the cell's values in this sweep run (succeeded runs only);
- a regression: the current median is worse than the baseline median (in the metric's
  direction) by more than the noise band, band = the largest of the baseline's reach (its
  median to the worse end of its 95 % interval), the current reach (its median to the better
  end of its interval, the side facing the baseline) and sweep.noise_floor_pct % of the
  baseline median. A side without an interval (one value; a spread stored before intervals)
  reaches to its [min, max] range instead (measure.stats.interval; docs/metrics.md, How
  figures are reported).

Count metrics (e.g. "completed" runs) count each run as 1 or 0. A baseline needs values from at
least MIN_BASELINE_EXECUTIONS earlier sweep runs, so that its spread holds night-to-night noise
and not only the spread within one night.

A throttled run (summary.telemetry.throttle, docs/metrics.md) counts like any other: the rule
does not drop or discount it, since a box that throttles every night is a finding too. The alert
says so instead: the longest throttle of the cell's current runs (and of its baseline runs) is kept
as "throttled_s" in the alert's value (baseline) JSON, and throttle_note() words it for the alert
list and the webhook. A run where more than 10 % of the requests failed (runs/core/outcomes.py)
counts the same way and is said the same way: the highest such share is "failed_share" in the
value (baseline) JSON, and failed_note() words it.

Each regression becomes an Alert row; a sweep run's new alerts are posted once, as JSON, to
the sweep's webhook URL, which is never shown (not in the payload, not in the recorded outcome).
"""
from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any
from urllib.parse import urlsplit

from django.dispatch import receiver
from django.utils import timezone

from measure import catalog
from measure.stats import Spread, interval, summarize
from measure.words import Words, gettext_noop
from runs.actions.webhooks import post_json
from runs.core.hardware import throttled_s
from runs.core.outcomes import over_failed_share
from runs.core.readings import ScoredMetric
from runs.core.registry import METRICS
from runs.core.scoring.figures import benchmark_of, compare, interval_text, spread_text
from runs.core.typed_reads import recorded
from runs.models import Alert, Run, SweepExecution
from runs.signals import execution_finished

__all__ = [
    "BASELINE_EXECUTIONS",
    "MIN_BASELINE_EXECUTIONS",
    "WEBHOOK_TIMEOUT_S",
    "check_execution",
    "failed_note",
    "figure_text",
    "interval_of",
    "noise_band",
    "post_alerts",
    "resolve",
    "throttle_note",
    "webhook_payload",
    "worse_by",
]

log = logging.getLogger(__name__)

BASELINE_EXECUTIONS = 5
MIN_BASELINE_EXECUTIONS = 2
WEBHOOK_TIMEOUT_S = 5.0
SENDING = "sending"
EN_DASH, EM_DASH = "\u2013", "\u2014"
_METRICS = {(m.benchmark, m.key): m for m in METRICS}
# The agent table alerts on its F1, not its raw score (docs/metrics.md, "table F1").
ALERTED = [m for m in METRICS if m.alert]
# (config id, job, parameters as JSON): one cell of a sweep
SweepCell = tuple[int, str, str]
# Per cell: the longest throttle of its baseline runs and of its current runs (None: none throttled)
Throttles = dict[SweepCell, tuple[float | None, float | None]]


# --- The rule (no database) -------------------------------------------------------------------


def worse_by(base: Spread, current: Spread, higher_is_better: bool) -> float:
    """How much worse the current median is than the baseline's (negative: better)."""
    delta = current["median"] - base["median"]
    return -delta if higher_is_better else delta


def noise_band(base: Spread, current: Spread, higher_is_better: bool, floor_pct: float) -> float:
    """The largest difference that still counts as noise (see the module docstring)."""
    (base_low, base_high), (current_low, current_high) = interval(base), interval(current)
    if higher_is_better:
        base_reach, current_reach = base["median"] - base_low, current_high - current["median"]
    else:
        base_reach, current_reach = base_high - base["median"], current["median"] - current_low
    return max(base_reach, current_reach, abs(base["median"]) * floor_pct / 100)


def is_regression(base: Spread, current: Spread, higher_is_better: bool, floor_pct: float) -> bool:
    return worse_by(base, current, higher_is_better) > noise_band(base, current, higher_is_better, floor_pct)


# --- Checking a finished sweep run ---------------------------------------------------------------


@receiver(execution_finished, dispatch_uid="runs.actions.alerts.execution_finished")
def _on_execution_finished(sender: Any, execution: SweepExecution, **kwargs: Any) -> None:
    if execution.trigger != SweepExecution.Trigger.SCHEDULE:
        return
    try:
        alerts = check_execution(execution)
        if alerts and execution.sweep.webhook_url:
            post_alerts(execution)
    except Exception:
        # The sweep run itself is done and stored; a failed check must not undo that.
        log.exception("regression check of sweep run %s failed", execution.pk)


def check_execution(execution: SweepExecution) -> list[Alert]:
    """Create the Alert rows of a finished scheduled sweep run (none when it was checked before)."""
    if Alert.objects.filter(execution=execution).exists():
        return []
    previous = list(
        SweepExecution.objects.filter(
            sweep_id=execution.sweep_id, trigger=SweepExecution.Trigger.SCHEDULE,
            finished__isnull=False, created__lt=execution.created,
        ).order_by("-created", "-pk").values_list("pk", flat=True)[:BASELINE_EXECUTIONS]
    )
    if len(previous) < MIN_BASELINE_EXECUTIONS:
        return []
    held_out = set(
        Alert.objects.filter(execution_id__in=previous, resolved__isnull=True)
        .values_list("execution_id", "config_id", "job", "benchmark", "metric")
    )
    floor = execution.sweep.noise_floor_pct
    found = []
    cells, throttles, failures = _cells(execution.pk, previous)
    for cell, (base, current) in cells.items():
        for metric in ALERTED:
            if alert := _check(execution, cell, metric, _kept(base, cell, metric, held_out), current, floor):
                alert = _with_side_figure(alert, "throttled_s", *throttles.get(cell, (None, None)))
                found.append(_with_side_figure(alert, "failed_share", *failures.get(cell, (None, None))))
    return Alert.objects.bulk_create(found)


def _cells(
    current_id: int, previous: list[int]
) -> tuple[dict[SweepCell, tuple[list, list]], Throttles, Throttles]:
    """Per cell: the baseline's (execution id, summary) and this run's summaries; its throttles;
    and the highest failed share of its runs over FAILED_SHARE_LIMIT, per side."""
    runs = Run.objects.filter(execution_id__in=[current_id, *previous], status=Run.Status.SUCCEEDED)
    cells: dict[SweepCell, tuple[list, list]] = defaultdict(lambda: ([], []))
    throttles: dict[SweepCell, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    failures: dict[SweepCell, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    revisions: dict[SweepCell, tuple[list[int | None], list[int | None]]] = defaultdict(lambda: ([], []))
    for run in runs.only("execution_id", "config_id", "revision_id", "job", "params", "summary", "warnings"):
        cell = (run.config_id, run.job, json.dumps(run.params, sort_keys=True))
        base, current = cells[cell]
        side = 1 if run.execution_id == current_id else 0
        revisions[cell][side].append(run.revision_id)
        if side:
            current.append(run.summary)
        else:
            base.append((run.execution_id, run.summary))
        if (seconds := throttled_s(run.summary, run.warnings)) is not None:
            throttles[cell][side].append(seconds)
        if over_failed_share(run.summary):
            failures[cell][side].append(recorded(run, "outcomes")["failed_share"])
    for cell, (base, _) in cells.items():
        base[:] = _same_settings(base, *revisions[cell])
    both = {cell: sides for cell, sides in cells.items() if sides[0] and sides[1]}
    return both, _most(throttles), _most(failures)


def _same_settings(base: list, base_revisions: list[int | None], now: list[int | None]) -> list:
    """The baseline runs that ran with a revision this run's runs ran with: a run is never called a
    regression of one with other settings (a config edited between two sweep runs starts afresh)."""
    return [entry for entry, revision in zip(base, base_revisions, strict=True) if revision in now]


def _most(per_cell: dict[SweepCell, tuple[list[float], list[float]]]) -> Throttles:
    return {cell: (max(b, default=None), max(c, default=None)) for cell, (b, c) in per_cell.items()}


def _with_side_figure(alert: Alert, key: str, base: float | None, current: float | None) -> Alert:
    """The alert with `key` added to its baseline's and its value's figures, where known."""
    if base is not None:
        alert.baseline = {**alert.baseline, key: base}
    if current is not None:
        alert.value = {**alert.value, key: current}
    return alert


def failed_note(alert: Alert) -> str:
    """What the alert says of failed requests, "" when no run on either side had over 10 % fail.

    `Words` (measure.words): English in the webhook, the reader's language on the alert list."""
    current, base = alert.value.get("failed_share"), alert.baseline.get("failed_share")
    parts = []
    if current is not None:
        parts.append(Words(gettext_noop("%(share).0f %% of this run's requests failed"), share=100 * current))
    if base is not None:
        parts.append(Words(gettext_noop("%(share).0f %% of a baseline run's requests failed"),
                           share=100 * base))
    if not parts:
        return ""
    return Words(gettext_noop("failed requests: %(parts)s; its figures are over the survivors"),
                 parts=Words.joined("; ", parts))


def throttle_note(alert: Alert) -> str:
    """What the alert says of throttling, "" when neither side's runs throttled (`Words`, as above)."""
    current, base = alert.value.get("throttled_s"), alert.baseline.get("throttled_s")
    parts = []
    if current is not None:
        parts.append(Words(gettext_noop("the box was throttled for %(s).1f s during this run"), s=current))
    if base is not None:
        parts.append(Words(gettext_noop("the box was throttled for %(s).1f s during a baseline run"), s=base))
    if not parts:
        return ""
    return Words(gettext_noop("throttled: %(parts)s; the regression may be heat, not the config"),
                 parts=Words.joined("; ", parts))


def _kept(
    base: list[tuple[int, dict]], cell: SweepCell, metric: ScoredMetric, held_out: set
) -> list[tuple[int, dict]]:
    """The metric's baseline runs, less the sweep runs that hold an open alert on this cell and metric."""
    config_id, job, _ = cell
    return [(eid, s) for eid, s in base if (eid, config_id, job, metric.benchmark, metric.key) not in held_out
            and benchmark_of(job, s) == metric.benchmark]


def _values(metric: ScoredMetric, job: str, summaries: list[dict]) -> list[float | None]:
    # A run counts for the metric's benchmark only (EvalPlus: HumanEval+ or MBPP+); a count
    # metric's True/False counts 1 or 0.
    mine = (metric.value(s) for s in summaries if benchmark_of(job, s) == metric.benchmark)
    return [float(v) if v is not None else None for v in mine]


def _check(
    execution: SweepExecution, cell: SweepCell, metric: ScoredMetric, base: list[tuple[int, dict]],
    current: list[dict], floor: float,
) -> Alert | None:
    config_id, job, _ = cell
    base_values = _values(metric, job, [s for _, s in base])
    nights = {eid for eid, s in base if metric.value(s) is not None}
    base_spread, value = summarize(base_values), summarize(_values(metric, job, current))
    if base_spread is None or value is None or len(nights) < MIN_BASELINE_EXECUTIONS:
        return None
    if not is_regression(base_spread, value, metric.higher_is_better, floor):
        return None
    return Alert(
        execution=execution, config_id=config_id, job=job, benchmark=metric.benchmark,
        metric=metric.key, label=metric.label, baseline=base_spread, value=value,
        delta_pct=compare(base_spread, value, metric.higher_is_better)["delta_pct"],
    )


# --- The webhook ---------------------------------------------------------------------------------


def webhook_payload(execution: SweepExecution, alerts: list[Alert]) -> dict[str, Any]:
    """What the webhook receives: the sweep run and each alert's figures (never the URL itself)."""
    return {
        "event": "sparkdash.regression",
        "sweep": execution.sweep.name,
        "sweep_run": execution.pk,
        "sweep_run_path": f"/sweep-runs/{execution.pk}/",
        "started": execution.created.isoformat(),
        "finished": execution.finished.isoformat() if execution.finished else None,
        "alerts": [_alert_dict(alert) for alert in alerts],
    }


def _alert_dict(alert: Alert) -> dict[str, Any]:
    metric = _METRICS.get((alert.benchmark, alert.metric))
    return {
        "id": alert.pk, "config": alert.config.name, "job": alert.job, "benchmark": alert.benchmark,
        "metric": alert.metric, "label": alert.label, "unit": metric.unit if metric else "",
        "higher_is_better": metric.higher_is_better if metric else None,
        "baseline": alert.baseline, "value": alert.value, "delta_pct": alert.delta_pct,
        "throttled_s": alert.value.get("throttled_s"),
        "baseline_throttled_s": alert.baseline.get("throttled_s"), "note": throttle_note(alert),
        "failed_share": alert.value.get("failed_share"),
        "baseline_failed_share": alert.baseline.get("failed_share"), "failed_note": failed_note(alert),
    }


def post_alerts(execution: SweepExecution) -> str | None:
    """Post the sweep run's not yet posted alerts to its webhook once; never raises.

    Returns the outcome recorded on them ("delivered (HTTP 200)", "delivery failed ..."), or None
    when there was nothing to post (no webhook, no alerts, or another caller posted them).
    """
    url = execution.sweep.webhook_url
    unsent = Alert.objects.filter(execution=execution, webhook_outcome="")
    ids = list(unsent.values_list("pk", flat=True))
    # Claim them first: a second caller (a redelivered signal) finds nothing left to send.
    if not url or not ids:
        return None
    if Alert.objects.filter(pk__in=ids, webhook_outcome="").update(webhook_outcome=SENDING) != len(ids):
        return None
    alerts = list(Alert.objects.filter(pk__in=ids).select_related("config").order_by("pk"))
    outcome = _post(url, webhook_payload(execution, alerts))
    Alert.objects.filter(pk__in=ids).update(webhook_outcome=outcome)
    return outcome


def _post(url: str, payload: dict[str, Any]) -> str:
    """Post through the webhook policy (runs.actions.webhooks): checked again now, since a host
    name may resolve elsewhere than when the sweep was saved; the outcome names no port or error."""
    return _redact(post_json(url, payload, WEBHOOK_TIMEOUT_S), url)[:300]


def _redact(text: str, url: str) -> str:
    """The text without the webhook URL or its parts (a path or query often holds a token)."""
    parts = urlsplit(url)
    secrets = [url, parts.netloc, parts.path, parts.query, url.rstrip("/")]
    for secret in sorted((s for s in secrets if s and s != "/"), key=len, reverse=True):
        text = text.replace(secret, "[webhook]")
    return text


def _format(alert: Alert) -> tuple[float, int, str]:
    # An imported run's alert names its tool and load as its row, not a benchmark: its metric's own.
    metric = _METRICS.get((alert.benchmark, alert.metric)) or catalog.CATALOG.get(alert.metric)
    return (metric.scale, max(metric.digits, 1), metric.unit) if metric else (1.0, 1, "")


def figure_text(alert: Alert, which: str) -> str:
    """An alert's baseline or value ("baseline"/"value") as "median [min-max] unit (n=N)"."""
    scale, digits, unit = _format(alert)
    return spread_text(getattr(alert, which), unit, digits, scale)


def interval_of(alert: Alert, which: str) -> str:
    """The median's interval and the percentiles over the runs of an alert's baseline or value;
    "" for an alert stored before intervals were."""
    scale, digits, unit = _format(alert)
    return interval_text(getattr(alert, which), unit, digits, scale, counted="runs")


# --- Resolving ------------------------------------------------------------------------------------


def resolve(alert: Alert) -> bool:
    """Mark an open alert resolved (its values then count as the norm again)."""
    return Alert.objects.filter(pk=alert.pk, resolved__isnull=True).update(resolved=timezone.now()) == 1
