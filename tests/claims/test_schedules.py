"""Nightly re-checks of a claim, and the alert when a reproduced figure stops being so."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from claims import schedules
from claims.alerts import check_alerts
from claims.models import Check, ClaimSchedule
from runs.models import Alert
from tests.claims.pages_helpers import finished_check, make_claim

pytestmark = pytest.mark.django_db


def test_it_is_due_once_a_night_at_its_hour(alpha):
    schedule = ClaimSchedule.objects.create(claim=make_claim(alpha.team), engine=alpha.engine, hour=2)
    made = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
    schedule.created = made
    assert schedules.next_due(schedule, made) == dt.datetime(2026, 12, 2, 2, 0, tzinfo=dt.UTC)
    assert not schedules.due(schedule, made + dt.timedelta(hours=13))
    assert schedules.due(schedule, made + dt.timedelta(hours=14))
    schedule.enabled = False
    assert not schedules.due(schedule, made + dt.timedelta(days=3))


def test_it_fires_a_due_schedule_through_start_check(alpha, monkeypatch):
    claim = make_claim(alpha.team)
    schedule = ClaimSchedule.objects.create(
        claim=claim, engine=alpha.engine, config=alpha.config, repetitions=4
    )
    ClaimSchedule.objects.filter(pk=schedule.pk).update(created=timezone.now() - dt.timedelta(days=2))
    calls = []
    monkeypatch.setattr(schedules, "start_check", lambda *a, **k: calls.append(k) or finished_check(claim))
    started = schedules.tick()
    assert len(started) == 1 and calls[0]["repetitions"] == 4
    assert schedules.tick() == []  # fired tonight already
    schedule.refresh_from_db()
    assert schedule.last_check == started[0] and schedule.last_error == ""


def test_it_keeps_the_reason_a_scheduled_check_cannot_start(alpha, monkeypatch):
    schedule = ClaimSchedule.objects.create(claim=make_claim(alpha.team), engine=alpha.engine)
    monkeypatch.setattr(
        schedules, "start_check", lambda *a, **k: (_ for _ in ()).throw(ValueError("no config"))
    )
    assert schedules.fire(schedule) is None
    schedule.refresh_from_db()
    assert schedule.last_error == "no config" and schedule.last_fired is not None


def test_it_raises_an_alert_when_a_reproduced_figure_stops_being_so(alpha):
    claim = make_claim(alpha.team)
    finished_check(claim, config=alpha.config)
    later = finished_check(
        claim, config=alpha.config, verdicts={"decode_tps@1": "lower"}, medians={"decode_tps@1": 40.0}
    )
    Check.objects.filter(pk=later.pk).update(created=timezone.now() + dt.timedelta(seconds=1))
    later.refresh_from_db()
    alerts = check_alerts(later)
    assert [(a.metric, a.benchmark) for a in alerts] == [("decode_tps_client", f"claim #{claim.pk} (lower)")]
    assert alerts[0].baseline["median"] == 56.0 and alerts[0].value["median"] == 40.0
    assert round(alerts[0].delta_pct, 1) == -28.6
    assert check_alerts(later) == []  # once


def test_it_raises_the_alert_when_the_check_is_saved_done(alpha):
    claim = make_claim(alpha.team)
    finished_check(claim, config=alpha.config)
    later = finished_check(claim, config=alpha.config, verdicts={"ttft_ms@1": "higher"})
    Check.objects.filter(pk=later.pk).update(
        created=timezone.now() + dt.timedelta(seconds=1), status="running"
    )
    later.refresh_from_db()
    later.status = Check.Status.DONE
    later.save(update_fields=["status"])
    assert Alert.objects.filter(metric="ttft_s", run__in=later.runs.all()).count() == 1


def test_it_raises_no_alert_for_a_figure_that_was_never_reproduced(alpha):
    claim = make_claim(alpha.team)
    finished_check(claim, config=alpha.config, verdicts={"decode_tps@1": "inconclusive"})
    later = finished_check(claim, config=alpha.config, verdicts={"decode_tps@1": "lower"})
    Check.objects.filter(pk=later.pk).update(created=timezone.now() + dt.timedelta(seconds=1))
    later.refresh_from_db()
    assert check_alerts(later) == []
