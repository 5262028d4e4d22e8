from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from engines.models import Engine, EngineConfig, Machine
from runs.core import registry
from runs.core.jobs.params import ChoiceParam, FractionListParam, IntListParam, IntParam
from runs.models import Alert, Run, Sweep, SweepExecution
from runs.views.start_form import REPLAY_MAX_BYTES
from tests.factories import EngineConfigFactory, EngineFactory, RunFactory, SweepFactory, UserFactory
from tests.real_engine import GEMMA_270M, requires_engine

SECRET = "sk-very-secret-key-123"
# session, user, machines, engines, running, queued, recent runs, nightly, alerts, alert count,
# the machines where the user may resolve an alert (teams.templatetags.team_roles), enabled schedules
HOME_QUERIES = 12

pytestmark = pytest.mark.django_db


@pytest.fixture
def config() -> EngineConfig:
    engine = EngineFactory(api_key=SECRET, simulator=True)
    return EngineConfigFactory(engine=engine, lookahead=4, speculative_method="draft-mtp")


@pytest.fixture
def no_dispatch(monkeypatch):
    # The worker side is not under test here: keep queued runs queued.
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)


def _pages(config: EngineConfig) -> list[str]:
    return [
        reverse("runs:home"),
        reverse("runs:config-list"),
        reverse("engines:config-create"),
        reverse("runs:config-detail", args=[config.pk]),
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
    pages = ["runs:home", "runs:config-list"]
    urls = [reverse(name) for name in pages] + [config.get_absolute_url()]
    for url in urls:
        assert ">simulator</mark>" in alice_client.get(url).content.decode(), url


def test_it_shows_the_machine_on_home(alice_client, config):
    RunFactory(config=config, status=Run.Status.QUEUED)
    RunFactory(config=config, status=Run.Status.QUEUED)
    running = RunFactory(config=config, status=Run.Status.RUNNING)
    html = alice_client.get(reverse("runs:home")).content.decode()
    assert "273 GB/s" in html
    assert "121 GB memory" in html
    assert config.machine.queue_name in html
    assert "2 runs waiting</a>" in html
    assert f"Running <a href=\"{running.get_absolute_url()}\">" in html


def test_it_shows_what_runs_on_each_machine_now(alice_client):
    busy, idle = EngineConfigFactory(name="cfg-busy"), EngineConfigFactory(name="cfg-idle")
    sweep = SweepFactory(name="nightly", configs=[busy])
    execution = SweepExecution.objects.create(sweep=sweep, trigger="schedule")
    running = RunFactory(config=busy, status=Run.Status.RUNNING, progress_done=3, progress_total=12,
                         execution=execution)
    RunFactory.create_batch(3, config=busy, status=Run.Status.QUEUED)
    RunFactory(config=idle, status=Run.Status.SUCCEEDED)
    html = alice_client.get(reverse("runs:home")).content.decode()
    busy_part, idle_part = _machine_section(html, busy), _machine_section(html, idle)
    assert f'Running <a href="{running.get_absolute_url()}">#{running.pk}</a>' in busy_part
    assert "3 / 12 requests" in busy_part
    assert '<progress value="3" max="12">' in busy_part
    assert f'in sweep run <a href="/sweep-runs/{execution.pk}/">#{execution.pk}</a> of nightly' in busy_part
    assert "3 runs waiting</a>" in busy_part
    assert "Idle." in idle_part
    assert "0 runs waiting</a>" in idle_part


def _machine_section(html: str, config: EngineConfig) -> str:
    return html.split(f"<h2>{config.machine.name}</h2>")[1].split('<article class="machine">')[0]


def _night(sweep: Sweep, statuses: list[str], *, trigger: str = "schedule", finished: bool = True,
           ago_h: float = 0) -> SweepExecution:
    when = timezone.now() - timedelta(hours=ago_h)
    end = when + timedelta(minutes=30) if finished else None
    execution = SweepExecution.objects.create(sweep=sweep, trigger=trigger, created=when, finished=end)
    for status in statuses:
        RunFactory(config=sweep.configs.first(), execution=execution, status=status)
    return execution


def test_it_shows_the_last_nightly_results(alice_client, config):
    sweep = SweepFactory(name="nightly-speed", configs=[config])
    older = _night(sweep, ["succeeded"] * 3, ago_h=24)
    last = _night(sweep, ["succeeded", "succeeded", "failed"], ago_h=2)
    _night(sweep, ["succeeded"], trigger="manual", ago_h=1)
    _night(sweep, ["running"], finished=False)
    html = alice_client.get(reverse("runs:home")).content.decode()
    row = html.split(f'<tr data-execution="{last.pk}">')[1].split("</tr>")[0]
    assert "nightly-speed" in row
    assert f'<a href="/sweep-runs/{last.pk}/">#{last.pk}</a>' in row
    assert "2 of 3 succeeded" in row
    assert '<strong class="error">1 failed</strong>' in row
    assert f"/sweep-runs/{older.pk}/" not in html
    assert html.count("<tr data-execution=") == 1


def test_it_marks_open_alerts_on_home(alice_client, config):
    sweep = SweepFactory(name="nightly-speed", configs=[config], webhook_url="https://hooks.example.org/s3cret")
    execution = _night(sweep, ["succeeded"])
    fields = {
        "execution": execution, "config": config, "job": "speed", "benchmark": "Speed",
        "label": "decode (client)",
        "baseline": {"median": 100.0, "min": 99.0, "max": 101.0, "n": 9},
        "value": {"median": 80.0, "min": 79.0, "max": 81.0, "n": 3}, "delta_pct": -20.0,
    }
    open_alert = Alert.objects.create(metric="decode_tps_client", **fields)
    Alert.objects.create(metric="decode_tps_engine", resolved=timezone.now(), **fields)
    html = alice_client.get(reverse("runs:home")).content.decode()
    assert '<article class="alerts-open" role="alert">' in html
    assert "1 open regression alert<" in html
    assert f'data-alert="{open_alert.pk}" class="open"' in html
    assert html.count("data-alert=") == 1
    assert f'action="{reverse("runs:alert-resolve", args=[open_alert.pk])}"' in html
    assert '<strong class="error">1 open</strong>' in html
    assert "s3cret" not in html
    alice_client.post(reverse("runs:alert-resolve", args=[open_alert.pk]), {"next": "/"})
    assert "regression alert" not in alice_client.get(reverse("runs:home")).content.decode()


def _busy_box(n_runs: int) -> None:
    config = EngineConfigFactory()
    sweep = SweepFactory(configs=[config])
    execution = _night(sweep, ["succeeded", "failed"])
    RunFactory(config=config, status=Run.Status.RUNNING, execution=execution)
    RunFactory.create_batch(n_runs, config=config, status=Run.Status.QUEUED)
    RunFactory.create_batch(n_runs, config=config, status=Run.Status.SUCCEEDED)
    Alert.objects.create(execution=execution, config=config, job="speed", benchmark="Speed",
                         metric="ttft_s", label="TTFT", delta_pct=12.0)


def test_it_keeps_the_home_page_queries_bounded(alice_client, django_assert_max_num_queries):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert alice_client.get(reverse("runs:home")).status_code == 200
        return len(queries)

    _busy_box(1)
    one_box = count()
    for _ in range(4):
        _busy_box(8)
    assert count() == one_box
    with django_assert_max_num_queries(HOME_QUERIES):
        alice_client.get(reverse("runs:home"))
    print(f"\nhome page: {one_box} queries with 1 machine, {count()} with 5 machines and 4x more runs")


def test_it_shows_the_last_run_in_the_config_list(alice_client, config):
    RunFactory(config=config)
    last = RunFactory(config=config)
    html = alice_client.get(reverse("runs:config-list")).content.decode()
    assert f'href="{last.get_absolute_url()}"' in html
    assert "4 tokens" in html


def test_it_starts_a_speed_run(alice_client, alice, config, no_dispatch):
    url = reverse("runs:config-start-run", args=[config.pk])
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
    url = reverse("runs:config-start-run", args=[config.pk])
    response = alice_client.post(url, {"reps": "51", "max_tokens": "128"})
    assert response.status_code == 400
    assert "Repetitions:" in response.content.decode()
    assert not Run.objects.exists()


def test_it_shows_start_run_value_errors_as_form_errors(alice_client, config, monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("max_tokens must be between 1 and 32768, not 100000")

    monkeypatch.setattr("runs.views.configs.start_run", refuse)
    url = reverse("runs:config-start-run", args=[config.pk])
    response = alice_client.post(url, {"reps": "3", "max_tokens": "100000"})
    assert response.status_code == 400
    assert "max_tokens must be between 1 and 32768" in response.content.decode()


def test_it_shows_why_a_machine_with_an_active_relay_refuses_a_run(alice_client, config, no_dispatch):
    Machine.objects.filter(pk=config.engine.machine_id).update(relay_heartbeat=timezone.now())
    response = _start(alice_client, config, {"reps": "3", "max_tokens": "64"})
    assert response.status_code == 400
    assert f"machine {config.engine.machine.name} is busy: its relay is passing real traffic" in (
        response.content.decode()
    )
    assert not Run.objects.exists()


def test_it_rejects_get_on_start_run(alice_client, config):
    response = alice_client.get(reverse("runs:config-start-run", args=[config.pk]))
    assert response.status_code == 405


def _start(client: Client, config: EngineConfig, data: dict[str, object]):
    return client.post(reverse("runs:config-start-run", args=[config.pk]), data)


def _jsonl(*bodies: dict[str, object]) -> bytes:
    return "".join(json.dumps(b) + "\n" for b in bodies).encode()


RECORDED = {"messages": [{"role": "user", "content": "Read routes.py lines 1-40."}], "max_tokens": 24}


def test_it_offers_every_job_on_the_config_page(alice_client, config):
    html = alice_client.get(config.get_absolute_url()).content.decode()
    assert 'enctype="multipart/form-data"' in html
    for job, _label in registry.startable_choices():
        assert f'<option value="{job}"' in html
    assert '<option value="imported"' not in html  # read from a file, never started
    # The speed job's fields show; the others wait for their job to be chosen.
    assert 'data-jobs="speed lookahead replay concurrency" data-help=' in html
    steps = r'<label for="id_steps" data-jobs="prefix-cache" data-help="[^"]*" data-labels="[^"]*" hidden>'
    assert re.search(steps, html)
    assert "1\u201350, default 3" in html


def test_it_starts_a_concurrency_sweep_with_only_its_parameters(alice_client, config, no_dispatch):
    data = {"job": "concurrency", "levels": "1, 2,4", "answer_tokens": "32", "max_tokens": "99", "steps": "7"}
    response = _start(alice_client, config, data)
    run = Run.objects.get()
    assert response.status_code == 302
    assert run.job == "concurrency"
    assert run.params == {"levels": [1, 2, 4], "answer_tokens": 32, "reps": 1, "warmup": 1, "split_from": 32,
                          "prompt_tokens": 0, "processes": 0}


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
    shown = r'<label for="id_requests" data-jobs="replay" data-help="[^"]*" data-labels="[^"]*">'
    assert re.search(shown, html)


def test_it_replays_the_shipped_agent_session_when_no_file_is_given(alice_client, config, no_dispatch):
    response = _start(alice_client, config, {"job": "replay"})
    run = Run.objects.get()
    assert response.status_code == 302 and run.job == "replay"
    sent = run.params["requests"]
    assert len(sent) == 5 and sent[0]["messages"][0]["role"] == "system"
    assert [len(body["messages"]) for body in sent] == [2, 4, 6, 8, 10]  # one session, growing


def test_it_puts_out_of_range_lengths_on_their_field(alice_client, config, no_dispatch):
    response = _start(alice_client, config, {"job": "lookahead", "lengths": "0,99"})
    assert response.status_code == 400
    assert "Lookahead lengths: lengths item must be between 0 and 64, not 99" in response.content.decode()


def test_it_labels_a_shared_field_for_the_chosen_job(alice_client, config, no_dispatch):
    response = _start(alice_client, config, {"job": "needle", "lengths": "0"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Prompt lengths (tokens): lengths item must be between 256 and 1048576, not 0" in html
    assert '<span class="param-label">Prompt lengths (tokens)</span>' in html
    assert "Lookahead lengths:" not in html
    shown = alice_client.get(config.get_absolute_url()).content.decode()
    assert "&quot;needle&quot;: &quot;Prompt lengths (tokens)&quot;" in shown
    assert "&quot;lookahead&quot;: &quot;Lookahead lengths&quot;" in shown


def test_it_says_in_each_jobs_help_what_a_parameter_does(alice_client, config):
    plain = IntParam | IntListParam | FractionListParam | ChoiceParam  # whose range alone says nothing
    unsaid = [f"{job.name}.{name}" for job in registry.JOBS.values() for name, param in job.params.items()
              if isinstance(param, plain) and not param.what]
    assert unsaid == []
    page = alice_client.get(config.get_absolute_url()).content.decode()
    said = "the prompt&#x27;s own tokens (its prefill) do not count"
    assert said in page  # speed's max tokens: the help no longer reads as prompt and answer together
    japanese = alice_client.get(config.get_absolute_url(), HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert "プリフィル" in japanese and said not in japanese


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


def test_it_shows_the_machines_measured_bandwidth_and_the_run_that_measured_it(alice_client, config):
    measured = RunFactory(config=config, job="bandwidth", status=Run.Status.SUCCEEDED)
    html = alice_client.get(reverse("runs:home")).content.decode()
    assert "not measured" in html
    Machine.objects.filter(pk=config.machine.pk).update(
        measured_bandwidth_gbps=231.04, bandwidth_method="gpu device-to-device copy",
        bandwidth_measured_at=timezone.now(), bandwidth_run_id=measured.pk)
    for url in (reverse("runs:home"), config.get_absolute_url()):
        html = alice_client.get(url).content.decode()
        assert "273 GB/s nominal" in html and "231.0 GB/s measured</span>" in html, url
        link = f'<a href="{measured.get_absolute_url()}">run #{measured.pk}</a>'
        assert f"(gpu device-to-device copy, {link})" in html


@requires_engine
def test_it_shows_the_gguf_ceiling_at_the_measured_bandwidth(alice_client):
    config = EngineConfigFactory(model=str(GEMMA_270M), engine__machine__measured_bandwidth_gbps=231.0)
    page = alice_client.get(f"/configs/{config.pk}/").content.decode()
    assert "tok/s at 273.0 GB/s nominal" in page and "tok/s at 231.0 GB/s measured" in page


@requires_engine
def test_it_shows_what_the_configs_gguf_holds(alice_client):
    config = EngineConfigFactory(model=str(GEMMA_270M))
    page = alice_client.get(f"/configs/{config.pk}/").content.decode()
    assert "gemma3" in page
    assert 'data-mtp="no"' in page
    assert "Q8_0" in page
    assert "tok/s at 273.0 GB/s" in page


def _matrix_data(base, ollama, action):
    return {"lookaheads": "4, 8", "engines": [base.engine.pk, ollama.pk], "action": action,
            "model_files": "Q4_K_M /models/qwen3-Q4_K_M.gguf\nQ8_0 /models/qwen3-Q8_0.gguf"}


def test_it_links_a_config_page_to_its_config_matrix(alice_client, config):
    html = alice_client.get(config.get_absolute_url()).content.decode()
    assert f'href="{reverse("engines:config-matrix", args=[config.pk])}"' in html
    assert "Make a config matrix" in html


def test_it_previews_a_config_matrix_and_then_creates_it_and_offers_a_sweep(alice_client, config):
    ollama = EngineFactory(name="ollama", kind="ollama", machine=config.engine.machine)
    url = reverse("engines:config-matrix", args=[config.pk])
    preview = alice_client.post(url, _matrix_data(config, ollama, "preview"))
    html = preview.content.decode()
    assert preview.status_code == 200 and html.count('data-state="new"') == 8
    assert f"<code>{config.name}-la8-q4_k_m-ollama</code>" in html and "Create 8 configs" in html
    assert EngineConfig.objects.count() == 1
    created = alice_client.post(url, _matrix_data(config, ollama, "create"))
    made = EngineConfig.objects.exclude(pk=config.pk).order_by("pk")
    assert created.status_code == 200 and made.count() == 8
    sweep_url = created.context["sweep_url"]
    assert sweep_url == reverse("runs:sweep-new") + "?" + "&".join(f"configs={c.pk}" for c in made)
    assert "Put these 8 configs in a new sweep" in created.content.decode()
    form = alice_client.get(sweep_url).context["form"]
    assert sorted(int(pk) for pk in form["configs"].value()) == [c.pk for c in made]
    again = alice_client.post(url, _matrix_data(config, ollama, "preview")).content.decode()
    assert again.count('data-state="exists"') == 8 and "Create " not in again


def test_it_says_what_is_wrong_with_a_config_matrixs_axes(alice_client, config):
    url = reverse("engines:config-matrix", args=[config.pk])
    cases = [({"lookaheads": "4,x"}, "each lookahead must be a whole number 0\u201364, not &#x27;x&#x27;"),
             ({"model_files": "Q4_K_M"}, "give a quantization label, a space, then the model"),
             ({}, "axes: choose at least one lookahead")]
    for data, message in cases:
        response = alice_client.post(url, data | {"action": "preview"})
        assert response.status_code == 400 and message in response.content.decode(), data
    assert EngineConfig.objects.count() == 1


def test_it_shows_each_recent_runs_headline_on_home(alice_client, config):
    RunFactory(config=config, job="speed", status=Run.Status.SUCCEEDED, finished=timezone.now(),
               summary={"decode_tps_client": {"median": 41.25, "min": 40, "max": 43, "n": 6}})
    lengths = {"8": {"all": {"decode_tps_client": {"median": 161.6, "min": 160, "max": 162, "n": 6}}}}
    RunFactory(config=config, job="lookahead", status=Run.Status.SUCCEEDED, finished=timezone.now(),
               summary={"lengths": lengths})
    html = alice_client.get(reverse("runs:home")).content.decode()
    assert "decode (client) <span>41.2 [40.0\u201343.0] tok/s (n=6)</span>" in html
    assert "decode at the best length <span>161.6 tok/s</span>" in html


@pytest.mark.parametrize(
    ("thinking", "shown"),
    [({}, "<tr><th>thinking</th><td>engine default</td></tr>"),
     ({"thinking": "off"}, "<tr><th>thinking</th><td>off</td></tr>"),
     ({"thinking": "budget", "thinking_budget": 4096, "reasoning_effort": "high"},
      "<tr><th>thinking</th><td>on, at most 4096 reasoning tokens · reasoning effort high</td></tr>")],
)
def test_it_shows_the_configs_thinking(alice_client, thinking, shown):
    config = EngineConfigFactory(engine=EngineFactory(simulator=True), **thinking)
    html = alice_client.get(reverse("runs:config-detail", args=[config.pk])).content.decode()
    assert shown in html


def test_it_renders_the_thinking_flags_in_the_configs_recipe(alice_client):
    config = EngineConfigFactory(thinking="budget", thinking_budget=2048, model="/m/q.gguf")
    html = alice_client.get(reverse("runs:config-detail", args=[config.pk])).content.decode()
    assert "--reasoning-budget 2048 --reasoning-format deepseek" in html


def test_it_refuses_notes_longer_than_the_limit(alice_client, config):
    url = reverse("engines:config-edit", args=[config.pk])
    response = alice_client.post(url, _form_data(config, notes="x" * 4001))
    assert response.status_code == 400
    assert "Notes: Ensure this value has at most 4000 characters (it has 4001)." in response.content.decode()
    assert alice_client.post(url, _form_data(config, notes="x" * 4000)).status_code == 302


def test_it_offers_the_speculative_methods_of_the_engines_kind(alice_client, config):
    page = alice_client.get(reverse("engines:config-edit", args=[config.pk])).content.decode()
    assert 'list="methods-llama-server"' in page
    offered = page[page.index('<datalist id="methods-llama-server">'):]
    offered = offered[:offered.index("</datalist>")]
    assert '<option value="draft-mtp">' in offered and '<option value="NEXTN">' not in offered


def test_it_archives_a_config_out_of_the_lists_and_restores_it(alice_client, config, no_dispatch):
    run = RunFactory(config=config)
    archive = reverse("engines:config-archive", args=[config.pk])
    assert alice_client.post(archive, {"archived": "1"}).status_code == 302
    config.refresh_from_db()
    assert config.archived and Run.objects.filter(pk=run.pk).exists()
    listed = alice_client.get(reverse("runs:config-list")).content.decode()
    assert config.get_absolute_url() not in listed and "1 archived config" in listed
    archived = alice_client.get(reverse("runs:config-list"), {"archived": "1"}).content.decode()
    assert config.get_absolute_url() in archived
    page = alice_client.get(config.get_absolute_url()).content.decode()
    assert 'id="archived-badge"' in page and "Archived: restore it to start a run." in page
    refused = _start(alice_client, config, {"job": "speed"})
    assert refused.status_code == 400 and "is archived: restore it to run it" in refused.content.decode()
    assert config.revisions.count() == 1  # archiving is not a settings change
    alice_client.post(archive, {"archived": "0"})
    config.refresh_from_db()
    assert not config.archived and _start(alice_client, config, {"job": "speed"}).status_code == 302
