"""The run's state changes (runs.models.RunQuerySet): each a conditional update, one winner."""
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from runs.actions.runs import cancel_run
from runs.models import Run
from tests.factories import RunFactory

pytestmark = pytest.mark.django_db


def test_it_marks_a_cancelled_queued_run_finished():
    run = RunFactory(status=Run.Status.QUEUED)
    assert cancel_run(run)
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    assert run.finished is not None


def test_it_claims_a_queued_run_once():
    run = RunFactory(status=Run.Status.QUEUED)
    assert [Run.objects.claim(run.pk), Run.objects.claim(run.pk)] == [True, False]
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING
    assert run.started is not None and run.heartbeat is not None


def test_it_never_claims_a_cancelled_run():
    run = RunFactory(status=Run.Status.QUEUED)
    Run.objects.cancel(run.pk)
    assert not Run.objects.claim(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED


def test_it_keeps_a_cancel_over_a_later_outcome():
    run = RunFactory(status=Run.Status.RUNNING)
    assert Run.objects.cancel(run.pk)
    stored = Run.objects.end(run.pk, Run.Status.SUCCEEDED, only=(Run.Status.RUNNING,), summary={"x": 1})
    run.refresh_from_db()
    assert not stored
    assert (run.status, run.summary) == (Run.Status.CANCELLED, {})


def test_it_fails_a_lost_run_only_while_its_heartbeat_is_old():
    old = timezone.now() - timedelta(minutes=5)
    run = RunFactory(status=Run.Status.RUNNING, heartbeat=timezone.now())
    assert not Run.objects.fail_running(run.pk, "lost", since=old)
    Run.objects.filter(pk=run.pk).update(heartbeat=old - timedelta(seconds=1))
    assert Run.objects.fail_running(run.pk, "lost", since=old)
    run.refresh_from_db()
    assert (run.status, run.error) == (Run.Status.FAILED, "lost")
    assert run.finished is not None


def test_it_beats_only_a_running_run_unless_asked():
    run = RunFactory(status=Run.Status.QUEUED)
    assert async_to_sync(Run.objects.abeat)(run.pk) == 0
    assert async_to_sync(Run.objects.abeat)(run.pk, running_only=False, progress_done=3) == 1
    run.refresh_from_db()
    assert run.progress_done == 3 and run.heartbeat is not None
