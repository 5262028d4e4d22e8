from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from engines.models import EngineConfig
from runs.models import Run
from tests.factories import EngineConfigFactory, EngineFactory, RunFactory, UserFactory

SECRET = "sk-very-secret-key-123"

pytestmark = pytest.mark.django_db


@pytest.fixture
def config() -> EngineConfig:
    engine = EngineFactory(api_key=SECRET, simulator=True)
    return EngineConfigFactory(engine=engine, lookahead=4, speculative_method="draft-mtp")


@pytest.fixture
def no_dispatch(monkeypatch):
    # The worker side is not under test here: keep queued runs queued.
    monkeypatch.setattr("runs.dispatch.enqueue_on_commit", lambda run: None)


def _pages(config: EngineConfig) -> list[str]:
    return [
        reverse("engines:home"),
        reverse("engines:config-list"),
        reverse("engines:config-create"),
        reverse("engines:config-detail", args=[config.pk]),
        reverse("engines:config-edit", args=[config.pk]),
    ]


def test_it_renders_each_page(alice_client, config):
    RunFactory(config=config, status=Run.Status.RUNNING)
    for url in _pages(config):
        response = alice_client.get(url)
        assert response.status_code == 200, url


def test_it_redirects_anonymous_users_to_login(client, config):
    for url in _pages(config):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith("/login/?next=")


def test_it_never_shows_the_api_key(alice_client, config):
    RunFactory(config=config, provenance={"config": config.snapshot()})
    for url in _pages(config):
        assert SECRET not in alice_client.get(url).content.decode(), url


def test_it_labels_simulator_engines(alice_client, config):
    RunFactory(config=config)
    pages = ["engines:home", "engines:config-list"]
    urls = [reverse(name) for name in pages] + [config.get_absolute_url()]
    for url in urls:
        assert ">simulator</mark>" in alice_client.get(url).content.decode(), url


def test_it_shows_the_machine_on_home(alice_client, config):
    RunFactory(config=config, status=Run.Status.QUEUED)
    RunFactory(config=config, status=Run.Status.QUEUED)
    running = RunFactory(config=config, status=Run.Status.RUNNING)
    html = alice_client.get(reverse("engines:home")).content.decode()
    assert "273 GB/s" in html
    assert "121 GB memory" in html
    assert config.machine.queue_name in html
    assert "2 queued" in html
    assert f"Running <a href=\"{running.get_absolute_url()}\">" in html


def test_it_shows_the_last_run_in_the_config_list(alice_client, config):
    RunFactory(config=config)
    last = RunFactory(config=config)
    html = alice_client.get(reverse("engines:config-list")).content.decode()
    assert f'href="{last.get_absolute_url()}"' in html
    assert "4 tokens" in html


def test_it_starts_a_speed_run(alice_client, alice, config, no_dispatch):
    url = reverse("engines:config-start-run", args=[config.pk])
    response = alice_client.post(url, {"reps": "5", "max_tokens": "128"})
    run = Run.objects.get()
    assert response.status_code == 302
    assert response.url == run.get_absolute_url()
    assert run.status == Run.Status.QUEUED
    assert run.job == "speed"
    assert run.params["reps"] == 5
    assert run.params["max_tokens"] == 128
    assert run.created_by == alice


def test_it_rejects_out_of_range_reps(alice_client, config, no_dispatch):
    url = reverse("engines:config-start-run", args=[config.pk])
    response = alice_client.post(url, {"reps": "51", "max_tokens": "128"})
    assert response.status_code == 400
    assert "Repetitions:" in response.content.decode()
    assert not Run.objects.exists()


def test_it_shows_start_run_value_errors_as_form_errors(alice_client, config, monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("max_tokens must be between 1 and 32768, not 100000")

    monkeypatch.setattr("engines.views.start_run", refuse)
    url = reverse("engines:config-start-run", args=[config.pk])
    response = alice_client.post(url, {"reps": "3", "max_tokens": "100000"})
    assert response.status_code == 400
    assert "max_tokens must be between 1 and 32768" in response.content.decode()


def test_it_rejects_get_on_start_run(alice_client, config):
    response = alice_client.get(reverse("engines:config-start-run", args=[config.pk]))
    assert response.status_code == 405


def _form_data(config: EngineConfig, **changes: object) -> dict[str, object]:
    data = {
        "name": config.name, "engine": config.engine.pk, "model": config.model,
        "quantization": config.quantization, "lookahead": config.lookahead, "prefix_caching": "unknown",
        "temperature": "0", "seed": "0", "max_tokens": "256",
    }
    return data | changes


def test_it_edits_a_config(alice_client, config):
    url = reverse("engines:config-edit", args=[config.pk])
    response = alice_client.post(url, _form_data(config, lookahead=12))
    assert response.status_code == 302
    config.refresh_from_db()
    assert config.lookahead == 12


def test_it_rejects_out_of_range_lookahead(alice_client, config):
    url = reverse("engines:config-edit", args=[config.pk])
    response = alice_client.post(url, _form_data(config, lookahead=65))
    html = response.content.decode()
    assert response.status_code == 400
    assert "Lookahead: Ensure this value is less than or equal to 64." in html
    config.refresh_from_db()
    assert config.lookahead == 4


def test_it_creates_a_config(alice_client, config):
    response = alice_client.post(reverse("engines:config-create"), _form_data(config, name="new-one"))
    created = EngineConfig.objects.get(name="new-one")
    assert response.status_code == 302
    assert response.url == created.get_absolute_url()


def test_it_requires_csrf_on_edit(alice, config):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(reverse("engines:config-edit", args=[config.pk]), _form_data(config))
    assert response.status_code == 403


def test_it_never_shows_the_api_key_in_the_admin(client, config):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    response = client.get(reverse("admin:engines_engine_change", args=[config.engine.pk]))
    assert response.status_code == 200
    assert SECRET not in response.content.decode()


def test_it_keeps_the_api_key_when_the_admin_saves_without_one(client, config):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    engine = config.engine
    data = {
        "machine": engine.machine.pk, "name": engine.name, "kind": engine.kind,
        "base_url": engine.base_url, "api_key": "", "simulator": "on",
    }
    response = client.post(reverse("admin:engines_engine_change", args=[engine.pk]), data)
    assert response.status_code == 302
    engine.refresh_from_db()
    assert engine.api_key == SECRET
