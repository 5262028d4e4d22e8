"""Setting up from the dashboard: a team admin adds a machine and an engine, and the connection
test (run by the machine's worker) says plainly what answered."""
from __future__ import annotations

import time

import pytest
from django.test import Client
from django.urls import reverse

from engines.models import Engine, Machine
from engines.simulator import SimProfile, serve_in_thread
from runs.models import ConnectionCheck
from runs.worker.connection import run_check
from teams.models import Role
from teams.roles import set_role

pytestmark = pytest.mark.django_db

DEAD = "http://127.0.0.1:9"


@pytest.fixture
def admin(alpha) -> Client:
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    client = Client()
    client.force_login(alpha.owner)
    return client


def engine_data(machine: Machine, url: str, **more) -> dict:
    return {"machine": machine.pk, "name": "llama-1", "kind": "llama-server", "base_url": url,
            "launch": "external"} | more


def checked(admin: Client, machine: Machine, url: str) -> dict:
    """Test the connection from the new-engine form and run the check as the machine's worker does."""
    data = engine_data(machine, url, action="check", api_key="s3cret")
    page = admin.post(reverse("engines:engine-create"), data)
    assert page.status_code == 200 and 'id="connection-check"' in page.content.decode()
    check = ConnectionCheck.objects.latest("pk")
    run_check(check.pk)
    answer = admin.get(reverse("engines:api-connection-check", args=[check.pk])).json()
    assert answer["finished"] is not None
    assert ConnectionCheck.objects.get(pk=check.pk).api_key == ""  # not kept once used
    return answer["result"]


def test_it_adds_and_edits_a_machine_as_a_team_admin(admin, alpha):
    figures = {"bandwidth_gbps": "273", "memory_gb": "121"}
    added = admin.post(reverse("engines:machine-add", args=[alpha.team.pk]),
                       {"name": "spark-2", "host": "spark-2.lan"} | figures)
    assert added.status_code == 302
    machine = Machine.objects.get(name="spark-2", team=alpha.team)
    edit = reverse("engines:machine-edit", args=[alpha.team.pk, machine.pk])
    changed = admin.post(edit, {"name": "spark-2", "host": "10.0.0.12"} | figures)
    assert changed.status_code == 302
    machine.refresh_from_db()
    assert machine.host == "10.0.0.12"


def test_it_reports_an_unreachable_url_plainly(admin, alpha):
    result = checked(admin, alpha.machine, DEAD)
    assert result["reachable"] is False and result["error"].startswith(f"cannot reach {DEAD}")
    assert not Engine.objects.filter(name="llama-1").exists()  # a test saves nothing


def test_it_reports_a_reachable_simulators_api_and_models_then_saves_it(admin, alpha):
    with serve_in_thread(SimProfile(lookahead=4)) as sim:
        result = checked(admin, alpha.machine, sim.url)
        assert result == {"reachable": True, "api": "openai", "models": ["sparkdash-sim:8b"],
                          "version": "sparkdash-simulator", "spec_counters": True}
        saved = admin.post(reverse("engines:engine-create"),
                           engine_data(alpha.machine, sim.url, action="save"))
    engine = Engine.objects.get(name="llama-1")
    assert saved.status_code == 302 and saved.url == reverse("engines:engine-detail", args=[engine.pk])
    page = admin.get(saved.url).content.decode()
    assert "sparkdash-sim:8b" in page and "s3cret" not in page


def test_it_refuses_a_url_on_another_host_and_checks_nothing(admin, alpha):
    page = admin.post(reverse("engines:engine-create"),
                      engine_data(alpha.machine, "http://169.254.169.254/latest", action="check"))
    assert page.status_code == 400 and "the host must be the machine" in page.content.decode()
    assert list(ConnectionCheck.objects.all()) == [alpha.check]  # the world's own, no new one


def test_it_leaves_adding_engines_to_admins(alpha, bravo):
    member = Client()
    member.force_login(alpha.teammate)
    assert member.get(reverse("engines:engine-create")).status_code == 403
    assert member.get(reverse("engines:engine-edit", args=[alpha.engine.pk])).status_code == 403
    stranger = Client()
    stranger.force_login(bravo.owner)
    assert stranger.get(reverse("engines:engine-detail", args=[alpha.engine.pk])).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_it_runs_the_check_on_the_machines_worker(alpha, settings):
    if settings.SPARKDASH_WORKER == "celery":
        pytest.skip("the in-process worker; with a broker the machine's Celery worker runs it")
    set_role(alpha.owner, alpha.team, Role.ADMIN)
    client = Client()
    client.force_login(alpha.owner)
    client.post(reverse("engines:engine-check", args=[alpha.engine.pk]))
    check = ConnectionCheck.objects.latest("pk")
    deadline = time.monotonic() + 20
    while ConnectionCheck.objects.get(pk=check.pk).finished is None and time.monotonic() < deadline:
        time.sleep(0.2)
    check.refresh_from_db()
    assert check.finished is not None and check.engine_id == alpha.engine.pk
    page = client.get(reverse("engines:engine-detail", args=[alpha.engine.pk])).content.decode()
    assert "Not reachable" in page or "answered" in page
