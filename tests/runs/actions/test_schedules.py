from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from engines.simulator import SimProfile
from runs.actions import schedules
from runs.actions.schedules import FIRE_TASK, schedule_status, validate_cron, validate_time_zone
from runs.models import Run, Schedule, SweepExecution
from runs.tasks import fire_schedule
from teams.models import AuditEvent
from tests.factories import EngineConfigFactory, RunFactory, ScheduleFactory, SweepFactory
from tests.processes import stop_process
from tests.runs.celery_helpers import celery_worker, requires_celery, worker_env

CREATED = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 1, day, hour, minute, second, tzinfo=UTC)


@pytest.fixture
def no_dispatch(monkeypatch):
    # The worker side is not under test here: keep queued runs queued.
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)


@pytest.fixture
def sweep():
    return SweepFactory(configs=[EngineConfigFactory(name="cfg-a")], repetitions=2)


# --- Validation ------------------------------------------------------------------------------


def test_it_accepts_a_nightly_cron_line():
    assert validate_cron("0 2 * * *") == {
        "minute": "0", "hour": "2", "day_of_month": "*", "month_of_year": "*", "day_of_week": "*",
    }
    assert validate_cron(" 30  3 1-15 */2 mon-fri ")["day_of_week"] == "mon-fri"


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("61 2 * * *", "the minute field '61'"),
        ("0 25 * * *", "the hour field '25'"),
        ("0 2 32 * *", "the day of month field '32'"),
        ("0 2 * 13 *", "the month field '13'"),
        ("0 2 * * funday", "the day of week field 'funday'"),
        ("0 2 * x *", "the month field 'x'"),
    ],
)
def test_it_names_the_bad_cron_field(line, field):
    with pytest.raises(ValueError, match=field):
        validate_cron(line)


def test_it_wants_five_cron_fields():
    with pytest.raises(ValueError, match=r"expected 5 fields .* got 4"):
        validate_cron("0 2 * *")


def test_it_rejects_a_date_that_never_comes():
    with pytest.raises(ValueError, match=r"cron: .*30"):
        validate_cron("0 2 30 2 *")


def test_it_rejects_an_unknown_time_zone():
    assert str(validate_time_zone("Europe/Berlin")) == "Europe/Berlin"
    with pytest.raises(ValueError, match="time zone: unknown time zone 'Mars/Olympus'"):
        validate_time_zone("Mars/Olympus")


# --- The PeriodicTask --------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_creates_a_crontab_task_in_the_schedules_time_zone(sweep):
    schedule = ScheduleFactory(sweep=sweep, cron="30 3 * * 1-5", time_zone="Europe/Berlin")
    task = PeriodicTask.objects.get(pk=Schedule.objects.get(pk=schedule.pk).periodic_task_id)
    assert task.task == FIRE_TASK
    assert json.loads(task.args) == [schedule.pk]
    assert task.enabled
    assert task.interval is None
    cron = task.crontab
    assert (cron.minute, cron.hour, cron.day_of_month, cron.month_of_year, cron.day_of_week) == (
        "30", "3", "*", "*", "1-5",
    )
    assert str(cron.timezone) == "Europe/Berlin"
    assert task.queue == sweep.configs.get().engine.machine.queue_name


@pytest.mark.django_db
def test_it_keeps_the_task_in_step_when_the_schedule_changes(sweep):
    schedule = ScheduleFactory(sweep=sweep)
    first = schedule.periodic_task_id
    schedule.every_seconds = 2
    schedule.enabled = False
    schedule.save()
    task = PeriodicTask.objects.get(pk=first)
    assert PeriodicTask.objects.count() == 1
    assert task.crontab is None
    assert (task.interval.every, task.interval.period) == (2, IntervalSchedule.SECONDS)
    assert not task.enabled
    schedule.every_seconds, schedule.cron, schedule.enabled = None, "15 4 * * *", True
    schedule.save()
    task.refresh_from_db()
    assert task.interval is None
    assert (task.crontab.minute, task.crontab.hour) == ("15", "4")
    assert task.enabled


@pytest.mark.django_db
def test_it_gives_every_schedule_its_own_task(sweep):
    a, b = ScheduleFactory(sweep=sweep), ScheduleFactory(sweep=sweep, cron="0 3 * * *")
    names = set(PeriodicTask.objects.values_list("name", flat=True))
    assert len(names) == 2
    args = PeriodicTask.objects.values_list("args", flat=True)
    assert {json.loads(arg)[0] for arg in args} == {a.pk, b.pk}


@pytest.mark.django_db
def test_it_deletes_the_task_with_the_schedule(sweep):
    schedule = ScheduleFactory(sweep=sweep)
    ScheduleFactory(sweep=sweep, every_seconds=60)
    schedule.delete()
    assert PeriodicTask.objects.count() == 1
    sweep.delete()  # its schedules go with it, and so do their tasks
    assert not PeriodicTask.objects.exists()


@pytest.mark.django_db
def test_it_recreates_a_task_deleted_behind_its_back(sweep):
    schedule = ScheduleFactory(sweep=sweep)
    schedule.periodic_task.delete()
    schedule.refresh_from_db()
    schedule.save()
    assert Schedule.objects.get(pk=schedule.pk).periodic_task.task == FIRE_TASK


@pytest.mark.django_db
def test_it_leaves_beat_a_readable_schedule_on_the_task(sweep):
    # celery beat's DatabaseScheduler reads PeriodicTask.schedule: the reverse accessor of
    # Schedule.periodic_task must not take that name (it needs a related_name).
    task = PeriodicTask.objects.get(pk=ScheduleFactory(sweep=sweep, every_seconds=2).periodic_task_id)
    assert task.schedule.run_every == timedelta(seconds=2)
    assert hasattr(task.schedule, "is_due")


@pytest.mark.django_db
def test_it_refuses_to_save_a_bad_cron_line_naming_the_field(sweep):
    with pytest.raises(ValueError, match="the hour field '24'"):
        ScheduleFactory(sweep=sweep, cron="0 24 * * *")


# --- Firing ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_fires_the_sweep_of_a_schedule(sweep, no_dispatch):
    schedule = ScheduleFactory(sweep=sweep)
    execution_id = fire_schedule(schedule.pk)
    execution = SweepExecution.objects.get(pk=execution_id)
    assert (execution.trigger, execution.schedule_id) == ("schedule", schedule.pk)
    assert execution.sweep_id == sweep.pk
    assert execution.runs.filter(status=Run.Status.QUEUED).count() == 2


@pytest.mark.django_db
def test_it_records_a_scheduled_start_as_the_systems(sweep, no_dispatch):
    execution = SweepExecution.objects.get(pk=fire_schedule(ScheduleFactory(sweep=sweep).pk))
    events = AuditEvent.objects.order_by("id")
    assert [(e.action, e.object_type) for e in events] == [("started", "sweepexecution")] + [
        ("started", "run")] * 2
    assert events[0].object_id == str(execution.pk) and events[0].detail == {"trigger": "schedule"}
    assert {(e.actor, e.actor_name, e.address) for e in events} == {(None, "system", None)}


@pytest.mark.django_db
def test_it_does_nothing_for_a_disabled_or_deleted_schedule(sweep, no_dispatch):
    disabled = ScheduleFactory(sweep=sweep, enabled=False)
    gone = ScheduleFactory(sweep=sweep)
    gone_id = gone.pk
    gone.delete()
    assert fire_schedule(disabled.pk) is None
    assert fire_schedule(gone_id) is None
    assert not SweepExecution.objects.exists()
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_it_records_a_sweep_that_cannot_start_as_failed(no_dispatch):
    schedule = ScheduleFactory(sweep=SweepFactory())  # no configs
    execution = schedules.fire(schedule.pk)
    assert execution.error == "could not start: configs: choose at least one config"
    assert execution.finished is not None
    assert schedule_status(schedule)["state"] == "failed"


# --- Status ------------------------------------------------------------------------------------


def _fired(schedule: Schedule, when: datetime, finished: bool = True, **kwargs) -> SweepExecution:
    return SweepExecution.objects.create(
        sweep=schedule.sweep, schedule=schedule, trigger="schedule", created=when,
        finished=when + timedelta(minutes=20) if finished else None, **kwargs,
    )


@pytest.mark.django_db
def test_it_waits_for_the_first_firing_until_its_grace_has_passed(sweep):
    schedule = ScheduleFactory(sweep=sweep, created=CREATED)
    status = schedule_status(schedule, now=at(11, 1))
    assert status["state"] == "waiting"
    assert status["last_fired"] is None
    assert status["next_due"] == at(11, 2)
    assert not schedule_status(schedule, now=at(11, 2, 9))["missed"]
    late = schedule_status(schedule, now=at(11, 2, 11))
    assert (late["state"], late["missed"], late["expected"]) == ("missed", True, at(11, 2))


@pytest.mark.django_db
def test_it_is_ok_after_a_good_night_and_missed_after_a_skipped_one(sweep):
    schedule = ScheduleFactory(sweep=sweep, created=CREATED)
    execution = _fired(schedule, at(11, 2, 0, 5))
    RunFactory(config=sweep.configs.get(), execution=execution, status=Run.Status.SUCCEEDED)
    status = schedule_status(schedule, now=at(11, 12))
    assert (status["state"], status["last_execution_id"]) == ("ok", execution.pk)
    assert status["last_fired"] == at(11, 2, 0, 5)
    assert status["next_due"] == at(12, 2)
    assert schedule_status(schedule, now=at(12, 2, 30))["state"] == "missed"


@pytest.mark.django_db
def test_it_shows_a_night_with_failed_runs_as_failed(sweep):
    schedule = ScheduleFactory(sweep=sweep, created=CREATED)
    execution = _fired(schedule, at(11, 2))
    RunFactory(config=sweep.configs.get(), execution=execution, status=Run.Status.SUCCEEDED)
    RunFactory.create_batch(2, config=sweep.configs.get(), execution=execution, status=Run.Status.FAILED)
    status = schedule_status(schedule, now=at(11, 12))
    assert (status["state"], status["failed"], status["failed_runs"]) == ("failed", True, 2)
    both = schedule_status(schedule, now=at(12, 3))
    assert both["missed"] and both["failed"]


@pytest.mark.django_db
def test_it_shows_a_sweep_run_in_progress_as_running(sweep):
    schedule = ScheduleFactory(sweep=sweep, created=CREATED)
    _fired(schedule, at(11, 2), finished=False)
    assert schedule_status(schedule, now=at(11, 3))["state"] == "running"


@pytest.mark.django_db
def test_it_reads_the_cron_line_in_its_time_zone(sweep):
    schedule = ScheduleFactory(sweep=sweep, created=CREATED, time_zone="Europe/Berlin")
    # 02:00 in Berlin is 01:00 UTC in winter.
    assert schedule_status(schedule, now=at(10, 13))["next_due"] == at(11, 1)
    assert schedule_status(schedule, now=at(11, 1, 11))["missed"]


@pytest.mark.django_db
def test_it_gives_an_interval_three_periods_of_grace(sweep):
    schedule = ScheduleFactory(sweep=sweep, created=CREATED, every_seconds=60)
    _fired(schedule, CREATED + timedelta(seconds=100))
    # Due at +160 s; missed once 3 periods more have passed.
    assert schedule_status(schedule, now=CREATED + timedelta(seconds=130))["next_due"] == CREATED + timedelta(
        seconds=160
    )
    assert not schedule_status(schedule, now=CREATED + timedelta(seconds=330))["missed"]
    assert schedule_status(schedule, now=CREATED + timedelta(seconds=350))["missed"]


@pytest.mark.django_db
def test_it_never_calls_a_disabled_schedule_missed(sweep):
    schedule = ScheduleFactory(sweep=sweep, created=CREATED, enabled=False)
    status = schedule_status(schedule, now=at(20, 12))
    assert (status["state"], status["missed"], status["next_due"]) == ("disabled", False, None)


@pytest.mark.django_db
def test_it_judges_from_the_schedules_own_latest_sweep_run(sweep):
    schedule = ScheduleFactory(sweep=sweep, created=CREATED)
    other = ScheduleFactory(sweep=sweep, created=CREATED, cron="0 3 * * *")
    _fired(other, at(11, 3))
    SweepExecution.objects.create(sweep=sweep, trigger="manual", created=at(11, 2))
    assert schedule_status(schedule, now=at(11, 12))["state"] == "missed"
    assert schedule_status(other, now=at(11, 12))["state"] == "ok"


# --- Acceptance: a schedule made in the UI fires through a real celery beat ----------------------

BEAT_TIMEOUT_S = 60.0


@contextmanager
def celery_beat(name: str) -> Iterator[Path]:
    """Run `celery beat` (DatabaseScheduler) on the test database until the block ends; yields its log."""
    with tempfile.TemporaryDirectory(prefix="sparkdash-beat-") as tmp:
        log_path = Path(tmp) / "beat.log"
        command = [
            sys.executable, "-m", "celery", "-A", "sparkdash", "beat", "-l", "info",
            "-S", "django_celery_beat.schedulers:DatabaseScheduler", "--max-interval", "1",
            "--pidfile", str(Path(tmp) / "beat.pid"), "-s", str(Path(tmp) / "beat-schedule"),
        ]  # fmt: skip
        with log_path.open("wb") as log_file:
            process = subprocess.Popen(
                command, cwd=settings.BASE_DIR, env=worker_env(f"beat-{name}"),
                stdout=log_file, stderr=subprocess.STDOUT,
            )
        try:
            yield log_path
        except BaseException:
            sys.stderr.write(f"--- log of celery beat ---\n{log_path.read_text(errors='replace')}\n")
            raise
        finally:
            stop_process(process)


def _first_scheduled_success(sweep_id: int) -> tuple[SweepExecution, list[Run]]:
    deadline = time.monotonic() + BEAT_TIMEOUT_S
    while time.monotonic() < deadline:
        for execution in SweepExecution.objects.filter(sweep_id=sweep_id, trigger="schedule").order_by("pk"):
            runs = list(execution.runs.all())
            if runs and execution.finished and all(r.status == Run.Status.SUCCEEDED for r in runs):
                return execution, runs
        time.sleep(0.1)
    runs = Run.objects.filter(execution__sweep_id=sweep_id)
    found = list(runs.values_list("execution_id", "status", "error"))
    raise AssertionError(f"no scheduled sweep run succeeded within {BEAT_TIMEOUT_S} s: {found}")


@requires_celery
@pytest.mark.django_db(transaction=True)
def test_it_fires_a_schedule_made_in_the_ui_through_celery_beat_and_produces_runs(sim_config, alice_client):
    config = sim_config(SimProfile(decode_tps=400, ttft_ms=5), prefix="beat")
    speed = {"job": "speed", "params": {"reps": 1, "warmup": 0, "max_tokens": 8}}
    sweep = SweepFactory(configs=[config], jobs=[speed], repetitions=1)
    data = {"sweep": sweep.pk, "cron": "0 2 * * *", "time_zone": "UTC", "every_seconds": "2", "enabled": "on"}
    response = alice_client.post(reverse("runs:schedule-create"), data)
    assert response.status_code == 302, response.content.decode()
    schedule = Schedule.objects.get(sweep=sweep)

    with celery_worker(config.engine.machine.queue_name, name="beat-runs"), celery_beat("fire") as beat_log:
        started = timezone.now()
        execution, runs = _first_scheduled_success(sweep.pk)
        beat_text = beat_log.read_text()
    run = runs[0]
    figures = {
        "beat started -> sweep run created": execution.created - started,
        "sweep run created -> run started": run.started - execution.created,
        "run started -> finished": run.finished - run.started,
        "beat started -> sweep run finished": execution.finished - started,
    }
    print("\nbeat timings: " + "; ".join(f"{k} {v.total_seconds():.2f} s" for k, v in figures.items()))
    print(f"sweep runs fired in all: {SweepExecution.objects.filter(sweep=sweep).count()}")
    assert execution.schedule_id == schedule.pk
    assert (run.job, run.repetition) == ("speed", 1)
    assert run.summary["decode_tps_client"]["n"] == 6
    assert f"Sending due task {schedule.periodic_task.name} ({FIRE_TASK})" in beat_text
