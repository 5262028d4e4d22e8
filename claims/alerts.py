"""A claim that was ``reproduced`` and stops being so raises an alert, like a regression.

When a check is done (its status saved as done by claims.checking.refresh_check), each of its figures
whose verdict is not ``reproduced`` is held against the claim's previous done check: where that one
had it ``reproduced``, an Alert row is made (runs.models.Alert, as an imported run's alert: it names
the check's first run of the figure and its config), with the previous check's values as the
baseline and this check's as the value, in the catalogue metric's unit, so the alerts page and the
home page show it beside the sweeps' regressions.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_save
from django.dispatch import receiver

from claims.core.metrics import CLAIM_METRICS
from claims.models import Check, FigureResult
from measure import catalog
from measure.stats import summarize
from runs.models import Alert

__all__ = ["check_alerts"]


@receiver(post_save, sender=Check, dispatch_uid="claims.alerts.check_saved")
def _check_saved(sender: type[Check], instance: Check, update_fields: Any = None, **kwargs: Any) -> None:
    if update_fields and "status" in update_fields and instance.status == Check.Status.DONE:
        check_alerts(instance)


def check_alerts(check: Check) -> list[Alert]:
    """The alerts of a done check whose figures were reproduced by the claim's previous done check."""
    previous = (
        Check.objects.filter(claim_id=check.claim_id, status=Check.Status.DONE, created__lt=check.created)
        .exclude(pk=check.pk)
        .order_by("-created")
        .first()
    )
    if previous is None or check.config is None:
        return []
    before = {r.figure_id: r for r in previous.results.all()}
    found = []
    for result in check.results.select_related("figure").exclude(verdict="reproduced"):
        earlier = before.get(result.figure_id)
        if earlier is None or earlier.verdict != "reproduced" or not result.run_ids:
            continue
        if Alert.objects.filter(run_id=result.run_ids[0], metric=_key(result)).exists():
            continue
        found.append(_alert(check, result, earlier))
    return Alert.objects.bulk_create(found)


def _key(result: FigureResult) -> str:
    return CLAIM_METRICS[result.figure.metric].catalog_key


def _alert(check: Check, result: FigureResult, earlier: FigureResult) -> Alert:
    known = CLAIM_METRICS[result.figure.metric]
    metric = catalog.CATALOG.get(known.catalog_key)
    base: dict[str, Any] = dict(summarize(v / known.scale for v in earlier.values) or {})
    now: dict[str, Any] = dict(summarize(v / known.scale for v in result.values) or {})
    delta = None
    if base.get("median") and now.get("median") is not None:
        delta = (now["median"] - base["median"]) / base["median"] * 100
    return Alert(
        run_id=result.run_ids[0],
        config=check.config,
        job=known.job,
        benchmark=f"claim #{check.claim_id} ({result.verdict})"[:50],
        metric=known.catalog_key,
        label=(metric.label if metric else known.key)[:100],
        baseline=base,
        value=now,
        delta_pct=delta,
    )
