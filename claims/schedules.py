"""Claims re-checked every night: when a claim's schedule is due, and firing it.

A schedule fires once a night, at its hour in its time zone: it is due when that moment has come
since it last fired (or since it was made). Firing starts a check through claims.checking.start_check,
the path of ``manage.py checkclaim`` and of the claim page; a check that cannot start keeps its reason
on the schedule. :func:`tick` also refreshes running checks, so a check nobody watches still gets its
verdicts (and claims.alerts its alerts) once its runs have ended. The embedded default's scheduler
(runs.actions.scheduler) calls :func:`tick` every tick; with a broker, celery beat sends
``claims.tasks.tick_claim_schedules`` (sparkdash.settings.CELERY_BEAT_SCHEDULE).
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta

from django.utils import timezone

from claims.checking import refresh_check, start_check
from claims.models import Check, ClaimSchedule

__all__ = ["due", "fire", "next_due", "tick"]


def next_due(schedule: ClaimSchedule, after: datetime) -> datetime:
    """The first moment at the schedule's hour, in its time zone, later than ``after``."""
    zone = zoneinfo.ZoneInfo(schedule.time_zone)
    local = after.astimezone(zone)
    moment = local.replace(hour=schedule.hour, minute=0, second=0, microsecond=0)
    if moment <= local:
        moment = (local + timedelta(days=1)).replace(hour=schedule.hour, minute=0, second=0, microsecond=0)
    return moment


def due(schedule: ClaimSchedule, now: datetime) -> bool:
    """Whether the schedule's night has come since it last fired (or was made)."""
    return schedule.enabled and next_due(schedule, schedule.last_fired or schedule.created) <= now


def fire(schedule: ClaimSchedule, now: datetime | None = None) -> Check | None:
    """Start the schedule's check (None, with the reason kept on the schedule, when it cannot start)."""
    now = now or timezone.now()
    check, error = None, ""
    try:
        check = start_check(
            schedule.claim,
            schedule.engine,
            config=schedule.config,
            repetitions=schedule.repetitions,
            user=schedule.created_by,
        )
    except ValueError as exc:
        error = str(exc)[:500]
    ClaimSchedule.objects.filter(pk=schedule.pk).update(last_fired=now, last_check=check, last_error=error)
    return check


def tick(now: datetime | None = None) -> list[Check]:
    """Fire each due schedule, and refresh each running check; the checks started."""
    now = now or timezone.now()
    for running in Check.objects.filter(status=Check.Status.RUNNING).select_related("claim"):
        refresh_check(running)
    started = []
    for schedule in ClaimSchedule.objects.filter(enabled=True).select_related("claim", "engine", "config"):
        if due(schedule, now) and (check := fire(schedule, now)) is not None:
            started.append(check)
    return started
