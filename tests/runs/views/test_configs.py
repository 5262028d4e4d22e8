"""The home page's first steps (runs/views/configs.py: home)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from runs.actions.tour import TOUR_CONFIGS
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, RunFactory

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
