from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from measure.stats import summarize
from runs.models import Alert, Run, Schedule, Sweep, SweepExecution
from teams.models import AuditEvent, Role
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, RunFactory, ScheduleFactory, SweepFactory
from tests.teams.people import person

pytestmark = pytest.mark.django_db

WEBHOOK = "https://hooks.example.org/services/T000/very-secret-path"


@pytest.fixture
def sweep() -> Sweep:
    config = EngineConfigFactory(name="cfg-a")
    return SweepFactory(name="nightly-speed", configs=[config], webhook_url=WEBHOOK)


def make_alert(sweep: Sweep, **fields) -> Alert:
    execution = SweepExecution.objects.create(sweep=sweep, trigger="schedule", finished=timezone.now())
    values = {
        "execution": execution, "config": sweep.configs.get(), "job": "speed", "benchmark": "Speed",
        "metric": "decode_tps_client", "label": "decode (client)",
        "baseline": {"median": 100.0, "min": 99.5, "max": 100.5, "n": 9},
        "value": {"median": 80.0, "min": 79.8, "max": 80.1, "n": 3}, "delta_pct": -20.0,
        "webhook_outcome": "failed: ConnectError: [Errno 111] Connection refused",
    }
    return Alert.objects.create(**values | fields)


def _pages(schedule: Schedule) -> list[str]:
    return [
        reverse("runs:schedule-list"),
        reverse("runs:schedule-create"),
        reverse("runs:schedule-edit", args=[schedule.pk]),
        reverse("runs:schedule-delete", args=[schedule.pk]),
        reverse("runs:alert-list"),
    ]


def test_it_renders_each_page(alice_client, sweep):
    schedule = ScheduleFactory(sweep=sweep)
    make_alert(sweep)
    for url in _pages(schedule):
        assert alice_client.get(url).status_code == 200, url


def test_it_redirects_anonymous_users_to_login(client, sweep):
    schedule = ScheduleFactory(sweep=sweep)
    alert = make_alert(sweep)
    for url in _pages(schedule):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith("/login/?next=")
    response = client.post(reverse("runs:alert-resolve", args=[alert.pk]))
    assert response.status_code == 302
    alert.refresh_from_db()
    assert alert.resolved is None


# --- The schedule list -------------------------------------------------------------------------


def test_it_shows_missed_and_failed_schedules_prominently(alice_client, sweep):
    long_ago = timezone.now() - timedelta(days=3)
    missed = ScheduleFactory(sweep=sweep, created=long_ago)
    failed = ScheduleFactory(sweep=sweep, every_seconds=3600, created=timezone.now())
    execution = SweepExecution.objects.create(sweep=sweep, schedule=failed, trigger="schedule",
                                              finished=timezone.now())
    RunFactory(config=sweep.configs.get(), execution=execution, status=Run.Status.FAILED)
    html = alice_client.get(reverse("runs:schedule-list")).content.decode()
    assert f'data-schedule="{missed.pk}" data-state="missed"' in html
    assert '<strong class="status status-failed" role="alert">missed</strong>' in html
    assert f'data-schedule="{failed.pk}" data-state="failed"' in html
    assert '<strong class="status status-failed" role="alert">failed</strong>' in html
    assert "1 failed run<" in html
    assert f'href="/sweep-runs/{execution.pk}/"' in html
    assert "every 3600 s" in html
    assert "<code>0 2 * * *</code> UTC" in html


def test_it_keeps_the_schedule_list_queries_bounded(alice_client, django_assert_max_num_queries):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert alice_client.get(reverse("runs:schedule-list")).status_code == 200
        return len(queries)

    ScheduleFactory(sweep=SweepFactory(configs=[EngineConfigFactory()]))
    one = count()
    for _ in range(4):
        schedule = ScheduleFactory(sweep=SweepFactory(configs=[EngineConfigFactory()]))
        SweepExecution.objects.create(sweep=schedule.sweep, schedule=schedule, trigger="schedule")
    assert count() == one
    with django_assert_max_num_queries(4):
        alice_client.get(reverse("runs:schedule-list"))


# --- Creating, editing, deleting ---------------------------------------------------------------


def _form(sweep: Sweep, **changes: object) -> dict[str, object]:
    data = {"sweep": sweep.pk, "cron": "0 2 * * *", "time_zone": "UTC", "every_seconds": "", "enabled": "on"}
    return data | changes


def test_it_offers_nightly_at_2_utc_by_default(alice_client, sweep):
    html = alice_client.get(reverse("runs:schedule-create")).content.decode()
    assert 'name="cron" value="0 2 * * *"' in html
    assert 'name="time_zone" value="UTC"' in html
    assert "Nightly at 02:00 UTC" in html


def test_it_creates_a_nightly_schedule_with_its_beat_task(alice_client, alice, sweep):
    response = alice_client.post(reverse("runs:schedule-create"), _form(sweep, time_zone="Asia/Tokyo"))
    assert response.status_code == 302
    assert response.url == reverse("runs:schedule-list")
    schedule = Schedule.objects.get()
    assert (schedule.cron, schedule.time_zone, schedule.every_seconds) == ("0 2 * * *", "Asia/Tokyo", None)
    assert schedule.created_by == alice
    task = schedule.periodic_task
    assert (task.crontab.hour, task.crontab.minute, str(task.crontab.timezone)) == ("2", "0", "Asia/Tokyo")


def test_it_creates_an_every_n_seconds_schedule_without_a_cron_line(alice_client, sweep):
    response = alice_client.post(reverse("runs:schedule-create"), _form(sweep, cron="", every_seconds="30"))
    assert response.status_code == 302
    schedule = Schedule.objects.get()
    assert (schedule.every_seconds, schedule.cron) == (30, "0 2 * * *")
    assert schedule.periodic_task.interval.every == 30


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"cron": "0 25 * * *"}, "Cron line: cron: the hour field &#x27;25&#x27; is invalid"),
        ({"cron": "0 2 * *"}, "Cron line: cron: expected 5 fields"),
        ({"time_zone": "Mars/Olympus"}, "Time zone: time zone: unknown time zone &#x27;Mars/Olympus&#x27;"),
        ({"cron": ""}, "Cron line: give a cron line, or a number of seconds below"),
        ({"every_seconds": "0"}, "Or every N seconds: Ensure this value is greater than or equal to 1."),
    ],
)
def test_it_puts_bad_input_on_its_field(alice_client, sweep, changes, error):
    response = alice_client.post(reverse("runs:schedule-create"), _form(sweep, **changes))
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.exists()


def test_it_edits_a_schedule_and_its_beat_task(alice_client, sweep):
    schedule = ScheduleFactory(sweep=sweep)
    url = reverse("runs:schedule-edit", args=[schedule.pk])
    response = alice_client.post(url, _form(sweep, cron="45 23 * * 0", enabled=""))
    assert response.status_code == 302
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == ("45", "23", "0")
    assert not task.enabled


def test_it_deletes_a_schedule_after_asking(alice_client, sweep):
    schedule = ScheduleFactory(sweep=sweep)
    url = reverse("runs:schedule-delete", args=[schedule.pk])
    assert "Delete the schedule of nightly-speed?" in alice_client.get(url).content.decode()
    assert Schedule.objects.exists()
    response = alice_client.post(url)
    assert response.status_code == 302
    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.exists()
    assert Sweep.objects.filter(pk=sweep.pk).exists()


def test_it_requires_csrf_on_posts(alice, sweep):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    schedule = ScheduleFactory(sweep=sweep)
    alert = make_alert(sweep)
    posts = [
        (reverse("runs:schedule-create"), _form(sweep)),
        (reverse("runs:schedule-edit", args=[schedule.pk]), _form(sweep)),
        (reverse("runs:schedule-delete", args=[schedule.pk]), {}),
        (reverse("runs:alert-resolve", args=[alert.pk]), {}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403, url
    assert Schedule.objects.count() == 1
    assert Alert.objects.get().resolved is None


# --- Alerts ---------------------------------------------------------------------------------------


def test_it_says_on_the_alert_list_that_the_run_was_throttled(alice_client, sweep):
    value = {"median": 80.0, "min": 79.8, "max": 80.1, "n": 3, "throttled_s": 12.3}
    make_alert(sweep, value=value)
    html = alice_client.get(reverse("runs:alert-list")).content.decode()
    assert "throttled: the box was throttled for 12.3 s during this run;" in html
    rows = alice_client.get(reverse("runs:alert-list"), {"format": "json"}).json()
    assert "12.3 s" in str(rows)


def test_it_lists_open_alerts_with_their_figures(alice_client, sweep):
    alert = make_alert(sweep)
    make_alert(sweep, resolved=timezone.now(), config=EngineConfigFactory(name="cfg-old"))
    html = alice_client.get(reverse("runs:alert-list")).content.decode()
    assert f'data-alert="{alert.pk}" class="open"' in html
    assert "100.0 [99.5\u2013100.5] tok/s (n=9)" in html
    assert "80.0 [79.8\u201380.1] tok/s (n=3)" in html
    assert "-20.0 %" in html
    assert f'href="/sweep-runs/{alert.execution_id}/"' in html
    assert "cfg-old" not in html
    assert "cfg-old" in alice_client.get(reverse("runs:alert-list") + "?show=all").content.decode()
    assert "95 % CI" not in html  # alerts stored before intervals show their figures as they were


def test_it_gives_an_alerts_figures_their_interval_in_the_hover(alice_client, sweep):
    make_alert(sweep, baseline=summarize([99.5, 100.0, 100.5]), value=summarize([79.8, 80.0, 80.1]))
    html = alice_client.get(reverse("runs:alert-list")).content.decode()
    hover = "95 % CI 99.5\u2013100.5 tok/s; p90 of 3 runs = max 100.5; p99 of 3 runs = max 100.5"
    assert f'title="{hover}"' in html
    assert 'title="95 % CI 79.8\u201380.1 tok/s; p90 of 3 runs = max 80.1' in html


def test_it_resolves_an_alert_and_goes_back(alice_client, sweep):
    alert = make_alert(sweep)
    url = reverse("runs:alert-resolve", args=[alert.pk])
    response = alice_client.post(url, {"next": "/"})
    assert (response.status_code, response.url) == (302, "/")
    alert.refresh_from_db()
    resolved = alert.resolved
    assert resolved is not None
    alice_client.post(url)  # resolving twice keeps the first time
    alert.refresh_from_db()
    assert alert.resolved == resolved
    assert f'data-alert="{alert.pk}"' not in alice_client.get(reverse("runs:alert-list")).content.decode()


def test_it_ignores_an_offsite_next(alice_client, sweep):
    alert = make_alert(sweep)
    response = alice_client.post(reverse("runs:alert-resolve", args=[alert.pk]), {"next": "https://evil.example/"})
    assert response.url == reverse("runs:alert-list")


def test_it_rejects_get_on_resolve(alice_client, sweep):
    response = alice_client.get(reverse("runs:alert-resolve", args=[make_alert(sweep).pk]))
    assert response.status_code == 405


def test_it_never_shows_the_webhook_url(alice_client, sweep):
    schedule = ScheduleFactory(sweep=sweep)
    make_alert(sweep)
    for url in [*_pages(schedule), reverse("runs:home")]:
        html = alice_client.get(url).content.decode()
        assert "very-secret-path" not in html, url
        assert "hooks.example.org" not in html, url


def test_it_exports_the_open_alerts_as_csv_and_json_without_the_webhook_url(alice_client, sweep):
    alert = make_alert(sweep)
    make_alert(sweep, resolved=timezone.now())
    as_json = alice_client.get(reverse("runs:alert-list"), {"format": "json"}).json()
    assert [row["id"] for row in as_json["rows"]] == [alert.pk]
    row = as_json["rows"][0]
    figures = (row["config"], row["baseline_median"], row["value_median"], row["delta_pct"])
    assert figures == ("cfg-a", 100.0, 80.0, -20.0)
    as_csv = alice_client.get(reverse("runs:alert-list"), {"format": "csv", "show": "all"})
    lines = as_csv.content.decode().splitlines()
    assert lines[0].startswith("id,sweep_run,config,job,benchmark,metric,baseline_median")
    assert len(lines) == 3
    assert WEBHOOK not in as_csv.content.decode()


# --- Roles: a viewer cannot make, change or delete a schedule; a member's are in the audit log -----

SCHEDULE_FORM = {"cron": "0 3 * * *", "time_zone": "UTC", "enabled": "on"}


def test_it_refuses_schedules_to_a_viewer_and_shows_no_buttons(alpha):
    viewer = person(alpha.team, Role.VIEWER, "alpha_viewer")
    client = logged_in(viewer)
    before = Schedule.objects.count()
    create = reverse("runs:schedule-create")
    assert client.post(create, SCHEDULE_FORM | {"sweep": alpha.sweep.pk}).status_code == 403
    edit = reverse("runs:schedule-edit", args=[alpha.schedule.pk])
    changed = SCHEDULE_FORM | {"sweep": alpha.sweep.pk, "cron": "5 5 * * *"}
    assert client.post(edit, changed).status_code == 403
    delete = reverse("runs:schedule-delete", args=[alpha.schedule.pk])
    assert client.post(delete).status_code == 403
    alpha.schedule.refresh_from_db()
    assert Schedule.objects.count() == before and alpha.schedule.cron != "5 5 * * *"
    html = client.get(reverse("runs:schedule-list")).content.decode()
    assert alpha.sweep.name in html
    assert all(url not in html for url in (edit, delete, create))
    assert not AuditEvent.objects.exists()


def test_it_records_who_created_changed_and_deleted_a_schedule(alpha):
    client = logged_in(alpha.teammate)
    data = SCHEDULE_FORM | {"sweep": alpha.sweep.pk}
    client.post(reverse("runs:schedule-create"), data, REMOTE_ADDR="10.7.7.7")
    made = Schedule.objects.latest("pk")
    client.post(reverse("runs:schedule-edit", args=[made.pk]), data | {"cron": "0 4 * * *"})
    client.post(reverse("runs:schedule-delete", args=[made.pk]))
    assert not Schedule.objects.filter(pk=made.pk).exists()
    events = AuditEvent.objects.order_by("id")
    assert [(e.actor, e.action, e.object_type, e.object_id) for e in events] == [
        (alpha.teammate, action, "schedule", str(made.pk)) for action in ("created", "changed", "deleted")]
    assert events[1].detail == {"fields": ["cron"]} and events[0].address == "10.7.7.7"


def test_it_refuses_a_viewer_resolving_an_alert(alpha):
    viewer = person(alpha.team, Role.VIEWER, "alpha_viewer")
    url = reverse("runs:alert-resolve", args=[alpha.alert.pk])
    assert logged_in(viewer).post(url).status_code == 403
    alpha.alert.refresh_from_db()
    assert alpha.alert.resolved is None
    assert f'action="{url}"' not in logged_in(viewer).get(reverse("runs:alert-list")).content.decode()
