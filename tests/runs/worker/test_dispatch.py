"""Handing a run to its machine's queue (runs/worker/dispatch.py) when two teams have a machine
of one name."""
from __future__ import annotations

import pytest
from django.urls import reverse

from runs.models import Run
from teams.models import Role
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, TeamFactory
from tests.teams.people import person

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(settings, monkeypatch) -> list[tuple[str, tuple, str]]:
    """The tasks sent to the broker (none is: no broker here)."""
    settings.SPARKDASH_WORKER = "celery"
    tasks: list[tuple[str, tuple, str]] = []
    monkeypatch.setattr("runs.worker.dispatch.current_app.send_task",
                        lambda name, args, queue: tasks.append((name, args, queue)))
    return tasks


def test_it_sends_a_run_to_its_own_teams_machine_queue(sent, django_capture_on_commit_callbacks):
    configs = {}
    for team in (TeamFactory(name="alpha"), TeamFactory(name="bravo")):
        engine = EngineFactory(machine=MachineFactory(name="spark-1", team=team), name="sim")
        configs[team.name] = EngineConfigFactory(engine=engine, name="qwen")
    bravo = configs["bravo"]
    client = logged_in(person(bravo.machine.team, Role.MEMBER))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("runs:config-start-run", args=[bravo.pk]),
                               {"job": "speed", "reps": "1", "max_tokens": "64"})
    run = Run.objects.get()
    assert response.status_code == 302 and run.config == bravo
    assert sent == [("runs.tasks.execute_run", (run.pk,), bravo.machine.queue_name)]
    assert bravo.machine.queue_name != configs["alpha"].machine.queue_name
