"""Schedules: their django-celery-beat PeriodicTask kept in step, cron checks, and their status.

Each Schedule owns one PeriodicTask that makes celery beat send `runs.tasks.fire_schedule`
(args [schedule.pk]) to the queue of the sweep's first machine. Saving or deleting a
schedule (in the UI, the admin or code) updates or removes that task through the model
signals connected here.

A schedule's status says when it last fired, when it is next due, and whether a firing was
missed (the expected time passed more than a grace ago with no sweep run) or the last sweep
run had failed runs.
"""
from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict, cast

from celery.schedules import ParseException, crontab
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from measure.words import Words, gettext_noop
from runs.models import Run, Schedule, SweepExecution

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

__all__ = [
    "CRON_FIELDS",
    "CRON_GRACE",
    "FIRE_TASK",
    "INTERVAL_GRACE_PERIODS",
    "ScheduleStatus",
    "fire",
    "next_fire",
    "schedule_status",
    "schedule_statuses",
    "sync_periodic_task",
    "validate_cron",
    "validate_time_zone",
]

FIRE_TASK = "runs.tasks.fire_schedule"
# (name, the crontab() argument it is, in cron line order)
CRON_FIELDS = (
    ("minute", "minute"),
    ("hour", "hour"),
    ("day of month", "day_of_month"),
    ("month", "month_of_year"),
    ("day of week", "day_of_week"),
)
# How late a firing may be before it counts as missed: beat ticks, a busy worker queue.
CRON_GRACE = timedelta(minutes=10)
INTERVAL_GRACE_PERIODS = 3


# --- Validation -------------------------------------------------------------------------------


def validate_cron(line: str) -> dict[str, str]:
    """The cron line's five fields as crontab() arguments; ValueError names the bad field.

    :param line: "minute hour day-of-month month day-of-week", e.g. "0 2 * * *"
    """
    parts = line.split()
    if len(parts) != len(CRON_FIELDS):
        raise ValueError(Words(
            gettext_noop("cron: expected 5 fields (minute hour day-of-month month day-of-week), got %(n)s"),
            n=len(parts)))
    fields = {}
    for (name, arg), value in zip(CRON_FIELDS, parts, strict=True):
        try:
            crontab(**{arg: value})
        except (ValueError, ParseException) as exc:
            raise ValueError(Words(gettext_noop("cron: the %(name)s field %(value)r is invalid (%(why)s)"),
                                   name=name, value=value, why=exc)) from None
        fields[arg] = value
    try:
        crontab(**fields)  # e.g. the 30th of February never comes
    except ValueError as exc:
        raise ValueError(f"cron: {exc}") from None
    return fields


def validate_time_zone(name: str) -> zoneinfo.ZoneInfo:
    """The IANA time zone called `name`; ValueError when there is none."""
    try:
        return zoneinfo.ZoneInfo(name)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        unknown = gettext_noop("time zone: unknown time zone %(name)r (e.g. UTC, Europe/Berlin)")
        raise ValueError(Words(unknown, name=name)) from None


# --- The PeriodicTask ------------------------------------------------------------------------


def _queue(schedule: Schedule) -> str | None:
    # fire_schedule only queues runs: any machine's worker can take it; pick the first one's.
    config = schedule.sweep.configs.select_related("engine__machine").order_by("name").first()
    return config.engine.machine.queue_name if config else None


def _when(schedule: Schedule) -> dict[str, Any]:
    if schedule.every_seconds:
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=schedule.every_seconds, period=IntervalSchedule.SECONDS
        )
        return {"interval": interval, "crontab": None}
    tz = validate_time_zone(schedule.time_zone)
    cron, _ = CrontabSchedule.objects.get_or_create(**validate_cron(schedule.cron), timezone=tz)
    return {"interval": None, "crontab": cron}


def sync_periodic_task(schedule: Schedule) -> PeriodicTask:
    """Create or update the schedule's PeriodicTask from its cron line or interval.

    Raises ValueError (naming the field) for a bad cron line or time zone.
    """
    task = schedule.periodic_task or PeriodicTask(task=FIRE_TASK)
    for key, value in _when(schedule).items():
        setattr(task, key, value)
    task.name = f"sparkdash schedule {schedule.pk} ({schedule.sweep.name})"[:200]
    task.task = FIRE_TASK
    task.args = f"[{schedule.pk}]"
    task.enabled = schedule.enabled
    task.queue = _queue(schedule)
    task.description = "Starts the sweep (managed by SparkDash: edit the schedule, not this task)."
    task.save()  # also tells beat's DatabaseScheduler to reload
    if schedule.periodic_task_id != task.pk:
        Schedule.objects.filter(pk=schedule.pk).update(periodic_task=task)
        schedule.periodic_task = task
    return task


@receiver(post_save, sender=Schedule, dispatch_uid="runs.actions.schedules.saved")
def _schedule_saved(sender: type[Schedule], instance: Schedule, raw: bool = False, **kwargs: Any) -> None:
    if not raw:  # loaddata: the fixture brings its own rows
        sync_periodic_task(instance)


@receiver(post_delete, sender=Schedule, dispatch_uid="runs.actions.schedules.deleted")
def _schedule_deleted(sender: type[Schedule], instance: Schedule, **kwargs: Any) -> None:
    if instance.periodic_task_id:
        # PeriodicTask.delete (not a queryset delete) tells beat to reload.
        for task in PeriodicTask.objects.filter(pk=instance.periodic_task_id):
            task.delete()


# --- Firing ----------------------------------------------------------------------------------


def fire(schedule_id: int) -> SweepExecution | None:
    """Start the schedule's sweep; nothing when the schedule is gone or disabled.

    A sweep that can't start gives a finished sweep run holding the error.
    """
    from runs.actions.sweeps import start_sweep

    schedule = Schedule.objects.select_related("sweep").filter(pk=schedule_id, enabled=True).first()
    if schedule is None:
        return None
    trigger = SweepExecution.Trigger.SCHEDULE
    try:
        return start_sweep(schedule.sweep, trigger=trigger, schedule=schedule)
    except ValueError as exc:
        # Nothing was queued (e.g. a job a config can't run): record the failed start, so the
        # schedule shows "failed" with the reason instead of "missed" later on.
        return SweepExecution.objects.create(
            sweep=schedule.sweep, schedule=schedule, trigger=trigger, finished=timezone.now(),
            error=f"could not start: {exc}",
        )


# --- Status ----------------------------------------------------------------------------------


class LastFiring(TypedDict):
    """What schedule_statuses() annotates each schedule with: its latest sweep run."""

    last_execution_id: int | None
    last_fired: datetime | None
    last_finished: datetime | None
    last_error: str | None
    failed_runs: int | None


class ScheduleStatus(TypedDict):
    state: str  # "disabled", "missed", "failed", "running", "ok" or "waiting" (never fired)
    last_fired: datetime | None
    last_execution_id: int | None
    next_due: datetime | None
    expected: datetime | None
    missed: bool
    failed: bool
    failed_runs: int
    running: bool


def next_fire(schedule: Schedule, after: datetime) -> datetime:
    """When the schedule is due next after `after` (aware; in the schedule's time zone for cron)."""
    if schedule.every_seconds:
        return after + timedelta(seconds=schedule.every_seconds)
    tz = validate_time_zone(schedule.time_zone)
    last, delta, _ = crontab(**validate_cron(schedule.cron)).remaining_delta(after, tz=tz)
    return last + delta


def grace(schedule: Schedule) -> timedelta:
    """How late a firing may be before it counts as missed."""
    if schedule.every_seconds:
        return timedelta(seconds=schedule.every_seconds * INTERVAL_GRACE_PERIODS)
    return CRON_GRACE


def schedule_statuses(schedules: QuerySet[Schedule]) -> QuerySet[WithAnnotations[Schedule, LastFiring]]:
    """The schedules with what schedule_status() needs, in one query (no query per schedule)."""
    latest = SweepExecution.objects.filter(schedule=OuterRef("pk")).order_by("-created", "-pk")
    failed = (
        Run.objects.filter(execution=OuterRef("last_execution_id"), status=Run.Status.FAILED)
        .values("execution").annotate(n=Count("pk")).values("n")
    )
    return schedules.select_related("sweep").annotate(
        last_execution_id=Subquery(latest.values("pk")[:1]),
        last_fired=Subquery(latest.values("created")[:1]),
        last_finished=Subquery(latest.values("finished")[:1]),
        last_error=Subquery(latest.values("error")[:1]),
        failed_runs=Subquery(failed),
    )


def schedule_status(schedule: Schedule, now: datetime | None = None) -> ScheduleStatus:
    """Last fired, next due, missed, failed; `schedule` from schedule_statuses() or any Schedule.

    :param now: the moment to judge at (tests choose it); default: now
    """
    if hasattr(schedule, "last_execution_id"):
        schedule = cast("WithAnnotations[Schedule, LastFiring]", schedule)
    else:
        schedule = schedule_statuses(Schedule.objects.filter(pk=schedule.pk)).get()
    now = now or timezone.now()
    expected = next_fire(schedule, schedule.last_fired or schedule.created)
    missed = schedule.enabled and now > expected + grace(schedule)
    failed_runs = schedule.failed_runs or 0
    failed = bool(failed_runs or schedule.last_error)
    running = schedule.last_execution_id is not None and schedule.last_finished is None
    status: ScheduleStatus = {
        "state": _state(schedule, missed, failed, running), "last_fired": schedule.last_fired,
        "last_execution_id": schedule.last_execution_id, "expected": expected,
        "next_due": _next_due(schedule, expected, now), "missed": missed, "failed": failed,
        "failed_runs": failed_runs, "running": running,
    }
    return status


def _next_due(schedule: Schedule, expected: datetime, now: datetime) -> datetime | None:
    if not schedule.enabled:
        return None
    if schedule.every_seconds:
        # Beat sends an overdue interval task at its next tick.
        return max(expected, now)
    return next_fire(schedule, now)


def _state(schedule: WithAnnotations[Schedule, LastFiring], missed: bool, failed: bool, running: bool) -> str:
    if not schedule.enabled:
        return "disabled"
    if missed:
        return "missed"
    if failed:
        return "failed"
    if running:
        return "running"
    return "ok" if schedule.last_execution_id else "waiting"
