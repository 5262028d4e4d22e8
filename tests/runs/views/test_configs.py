"""The home page's first steps (runs/views/configs.py: home)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from runs.actions.tour import TOUR_CONFIGS
from runs.models import Run
from teams.models import AuditEvent, Role
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, RunFactory
from tests.teams.people import person

pytestmark = pytest.mark.django_db


def test_it_tells_a_new_user_what_to_do_first_while_no_run_exists(alice_client):
    config = EngineConfigFactory(name="sim-lookahead-4")
    html = alice_client.get(reverse("runs:home")).content.decode()
    assert "No runs yet: start here" in html
    steps = ["Open a config", "Start a speed run", "Try a lookahead sweep", "Compare runs"]
    assert [html.index(step) for step in steps] == sorted(html.index(step) for step in steps)
    assert f'<a href="{config.get_absolute_url()}">sim-lookahead-4</a>' in html
    assert f'href="{config.get_absolute_url()}#start-job"' in html
    assert f'href="{reverse("runs:list")}"' in html and "Compare selected" in html


def test_it_says_to_add_a_config_when_there_is_none(alice_client):
    MachineFactory()
    html = alice_client.get(reverse("runs:home")).content.decode()
    assert "Add a config" in html and f'href="{reverse("engines:config-create")}"' in html


def test_it_drops_the_first_steps_once_a_run_exists(alice_client):
    RunFactory()
    html = alice_client.get(reverse("runs:home")).content.decode()
    assert "No runs yet: start here" not in html and 'id="first-steps"' not in html


def test_it_offers_the_demo_tour_when_the_demo_configs_are_loaded(alice_client):
    machine = MachineFactory()
    engine = EngineFactory(machine=machine, simulator=True, launch="managed")
    EngineConfigFactory(name=TOUR_CONFIGS[0], engine=engine)
    assert "Start the demo tour" not in alice_client.get(reverse("runs:home")).content.decode()
    ollama = EngineFactory(machine=machine, kind="ollama", simulator=True)
    EngineConfigFactory(name=TOUR_CONFIGS[1], engine=ollama)
    html = alice_client.get(reverse("runs:home")).content.decode()
    assert "Start the demo tour" in html and f'action="{reverse("runs:tour")}"' in html


# --- Roles: a viewer reads a config and starts nothing; a member's start is in the audit log ------


@pytest.fixture
def handed(monkeypatch) -> list:
    """The runs handed to a worker (none runs here)."""
    runs: list = []
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", runs.append)
    return runs


def test_it_refuses_a_run_to_a_viewer_and_shows_no_start_button(alpha, handed):
    viewer = person(alpha.team, Role.VIEWER, "alpha_viewer")
    client = logged_in(viewer)
    url = reverse("runs:config-start-run", args=[alpha.config.pk])
    before = Run.objects.count()
    assert client.post(url, {"job": "speed", "reps": "1", "max_tokens": "64"}).status_code == 403
    assert Run.objects.count() == before and handed == [] and not AuditEvent.objects.exists()
    page = client.get(reverse("runs:config-detail", args=[alpha.config.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and alpha.config.name in html
    assert f'action="{url}"' not in html
    assert reverse("engines:config-edit", args=[alpha.config.pk]) not in html


def test_it_records_who_started_a_run_and_from_where(alpha, handed):
    client = logged_in(alpha.teammate)
    url = reverse("runs:config-start-run", args=[alpha.config.pk])
    page = client.get(reverse("runs:config-detail", args=[alpha.config.pk])).content.decode()
    assert f'action="{url}"' in page
    response = client.post(url, {"job": "speed", "reps": "1", "max_tokens": "64"}, REMOTE_ADDR="10.4.4.4")
    run = Run.objects.latest("pk")
    assert response.status_code == 302 and handed == [run]
    event = AuditEvent.objects.get()
    assert (event.actor, event.action, event.object_type, event.object_id, event.address, event.team) == (
        alpha.teammate, "started", "run", str(run.pk), "10.4.4.4", alpha.team)
