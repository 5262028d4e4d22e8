from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from engines.forms import REPLAY_MAX_BYTES
from engines.models import Engine, EngineConfig
from runs.models import Run
from tests.factories import EngineConfigFactory, EngineFactory, RunFactory, UserFactory
from tests.real_engine import GEMMA_270M, requires_engine

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


def _start(client: Client, config: EngineConfig, data: dict[str, object]):
    return client.post(reverse("engines:config-start-run", args=[config.pk]), data)


def _jsonl(*bodies: dict[str, object]) -> bytes:
    return "".join(json.dumps(b) + "\n" for b in bodies).encode()


RECORDED = {"messages": [{"role": "user", "content": "Read routes.py lines 1-40."}], "max_tokens": 24}


def test_it_offers_every_job_on_the_config_page(alice_client, config):
    html = alice_client.get(config.get_absolute_url()).content.decode()
    assert 'enctype="multipart/form-data"' in html
    for job in Run.Job.values:
        assert f'<option value="{job}"' in html
    # The speed job's fields show; the others wait for their job to be chosen.
    assert 'data-jobs="speed lookahead replay concurrency" data-help=' in html
    assert re.search(r'<label for="id_steps" data-jobs="prefix-cache" data-help="[^"]*" hidden>', html)
    assert "1\u201350, default 3" in html


def test_it_starts_a_concurrency_sweep_with_only_its_parameters(alice_client, config, no_dispatch):
    data = {"job": "concurrency", "levels": "1, 2,4", "answer_tokens": "32", "max_tokens": "99", "steps": "7"}
    response = _start(alice_client, config, data)
    run = Run.objects.get()
    assert response.status_code == 302
    assert run.job == "concurrency"
    assert run.params == {"levels": [1, 2, 4], "answer_tokens": 32, "reps": 1, "warmup": 1}


def test_it_starts_a_prefix_cache_probe_with_defaults_for_blank_fields(alice_client, config, no_dispatch):
    response = _start(alice_client, config, {"job": "prefix-cache", "steps": "4", "bytes_per_step": ""})
    assert response.status_code == 302
    assert Run.objects.get().params == {"steps": 4, "bytes_per_step": 6000, "answer_tokens": 16}


def test_it_starts_a_lookahead_sweep_on_a_managed_engine(alice_client, no_dispatch):
    config = EngineConfigFactory(engine__launch=Engine.Launch.MANAGED, engine__simulator=True)
    response = _start(alice_client, config, {"job": "lookahead", "lengths": "0,4,8", "reps": "1"})
    run = Run.objects.get()
    assert response.status_code == 302
    assert run.params["lengths"] == [0, 4, 8]


def test_it_starts_a_replay_from_an_uploaded_jsonl_file(alice_client, config, no_dispatch):
    upload = SimpleUploadedFile("session.jsonl", _jsonl(RECORDED, RECORDED), "application/jsonl")
    response = _start(alice_client, config, {"job": "replay", "reps": "2", "requests": upload})
    run = Run.objects.get()
    assert response.status_code == 302
    assert run.job == "replay"
    assert run.params["reps"] == 2
    assert run.params["requests"] == [RECORDED, RECORDED]


def test_it_rejects_a_replay_file_over_5_mb(alice_client, config, no_dispatch):
    big = SimpleUploadedFile("big.jsonl", b" " * (REPLAY_MAX_BYTES + 1))
    response = _start(alice_client, config, {"job": "replay", "requests": big})
    assert response.status_code == 400
    error = "Recorded requests (.jsonl): the file is 5,000,001 bytes; the limit is 5 MB"
    assert error in response.content.decode()
    assert not Run.objects.exists()


def test_it_shows_a_bad_replay_line_on_the_file_field(alice_client, config, no_dispatch):
    upload = SimpleUploadedFile("bad.jsonl", _jsonl(RECORDED) + b"{not json\n")
    response = _start(alice_client, config, {"job": "replay", "requests": upload})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Recorded requests (.jsonl): requests: line 2: not JSON" in html
    # The form comes back on the replay job, with its fields shown.
    assert '<option value="replay" selected>' in html
    assert re.search(r'<label for="id_requests" data-jobs="replay" data-help="[^"]*">', html)


def test_it_asks_for_a_replay_file(alice_client, config, no_dispatch):
    response = _start(alice_client, config, {"job": "replay"})
    assert response.status_code == 400
    assert "a replay needs recorded requests" in response.content.decode()


def test_it_puts_out_of_range_lengths_on_their_field(alice_client, config, no_dispatch):
    response = _start(alice_client, config, {"job": "lookahead", "lengths": "0,99"})
    assert response.status_code == 400
    assert "Lookahead lengths: lengths item must be between 0 and 64, not 99" in response.content.decode()


def test_it_refuses_a_lookahead_sweep_on_an_external_engine(alice_client, config, no_dispatch):
    response = _start(alice_client, config, {"job": "lookahead", "lengths": "0,4"})
    html = response.content.decode()
    assert response.status_code == 400
    assert '<p class="error" role="alert">a lookahead sweep sets the length by relaunching' in html
    assert not Run.objects.exists()


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


@requires_engine
def test_it_shows_what_the_configs_gguf_holds(alice_client):
    config = EngineConfigFactory(model=str(GEMMA_270M))
    page = alice_client.get(f"/configs/{config.pk}/").content.decode()
    assert "gemma3" in page
    assert 'data-mtp="no"' in page
    assert "Q8_0" in page
    assert "tok/s at 273.0 GB/s" in page
