"""The demo tour page: the button, a started tour's runs, and its refusals."""
from __future__ import annotations

from unittest import mock

import pytest

from runs.actions.tour import TOUR_CONFIGS
from runs.models import Run
from runs.worker import dispatch
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, EngineFactory, RunFactory, team_world

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def nothing_runs(settings):
    settings.SPARKDASH_WORKER = "inprocess"
    with mock.patch.object(dispatch, "submit_in_process"):
        yield


def load_demo_like() -> None:
    llama = EngineFactory(kind="llama-server", simulator=True, launch="managed")
    EngineConfigFactory(name=TOUR_CONFIGS[0], engine=llama)
    EngineConfigFactory(name=TOUR_CONFIGS[1], engine=EngineFactory(kind="ollama", simulator=True))


def test_it_explains_the_tour_with_its_button(admin_client):
    page = admin_client.get("/tour/").content.decode()
    assert "Start the demo tour" in page and TOUR_CONFIGS[0] in page and "SparkDash simulator" in page


def test_it_offers_the_seed_claims_on_the_simulator(admin_client):
    page = admin_client.get("/tour/").content.decode()
    assert 'href="/claims/#seed-claims" data-tour="claims"' in page
    assert "never a check of the real claims" in page


def test_it_starts_the_tour_and_shows_its_runs_until_they_finish(admin_client):
    load_demo_like()
    response = admin_client.post("/tour/")
    assert response.status_code == 302 and response["Location"].startswith("/tour/?runs=")
    page = admin_client.get(response["Location"])
    html = page.content.decode()
    speed = Run.objects.filter(job="speed").order_by("pk")
    assert Run.objects.filter(job="lookahead").count() == 2 and speed.count() == 2
    assert f"/compare/?runs={speed[0].pk}%2C{speed[1].pk}" in html
    assert html.count('data-tour="compared"') == 2 and html.count('data-tour="sweeps"') == 2
    assert html.count('data-tour="warning"') == 2
    assert 'http-equiv="refresh"' in html  # queued runs: the page keeps itself current


def test_it_says_what_is_missing_when_the_demo_is_not_loaded(admin_client):
    response = admin_client.post("/tour/")
    assert response.status_code == 400
    assert "run `manage.py demo`" in response.content.decode()
    assert Run.objects.count() == 0


def test_it_answers_404_for_runs_that_are_not_a_tour(admin_client):
    run = RunFactory(job="agent-table")
    assert admin_client.get(f"/tour/?runs={run.pk}").status_code == 404


def test_it_needs_a_login(client):
    assert client.post("/tour/").status_code == 302 and Run.objects.count() == 0


def test_it_keeps_a_teams_demo_configs_and_tour_runs_from_an_outsider():
    alpha, bravo = team_world("alpha"), team_world("bravo")
    llama = EngineFactory(machine=alpha.machine, kind="llama-server", simulator=True, launch="managed")
    EngineConfigFactory(name=TOUR_CONFIGS[0], engine=llama)
    ollama = EngineFactory(machine=alpha.machine, kind="ollama", simulator=True)
    EngineConfigFactory(name=TOUR_CONFIGS[1], engine=ollama)
    before = Run.objects.count()
    assert logged_in(bravo.owner).post("/tour/").status_code == 400  # alpha's demo is not bravo's to run
    assert Run.objects.count() == before
    started = logged_in(alpha.owner).post("/tour/")
    assert started.status_code == 302
    assert logged_in(bravo.owner).get(started["Location"]).status_code == 404
    assert logged_in(alpha.teammate).get(started["Location"]).status_code == 200
