from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from runs.models import Run, Sweep, SweepExecution
from teams.models import AuditEvent, Role
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, RunFactory, SweepFactory
from tests.teams.people import person

pytestmark = pytest.mark.django_db

WEBHOOK = "https://hooks.example.org/T000/very-secret-token"
EN = "\u2013"

def _old(figure):
    """The keys every spread has had: median, min, max, n (newer ones add intervals and percentiles)."""
    return {k: figure[k] for k in ("median", "min", "max", "n")}



def speed(tps: float) -> dict:
    return {"decode_tps_client": {"median": tps, "min": tps - 1, "max": tps + 1, "n": 6}}


def agent(score: int) -> dict:
    """An agent run that answered 47 rows, `score` of them right."""
    return {"score": score, "rows": 47, "answer_rows": 47, "f1": score / 47, "outcome": "completed",
            "steps": 9, "task_s": 60.0}


@pytest.fixture
def finished_run():
    """A finished sweep run: fast (A), base (B, the baseline) and flaky (C) x speed, agent-table x 3.

    A's speed is apart from B's (better); their agent scores overlap (noise). C has one speed
    repetition succeeded, one failed, one still running, and no agent runs succeeded.
    """
    box = MachineFactory(name="box")
    engine = EngineFactory(machine=box, name="llama", simulator=True)
    fast, base, flaky = (EngineConfigFactory(engine=engine, name=n) for n in ("fast", "base", "flaky"))
    sweep = SweepFactory(configs=[fast, base, flaky], baseline=base, repetitions=3, webhook_url=WEBHOOK,
                         jobs=[{"job": "speed"}, {"job": "agent-table"}])
    sweep_run = SweepExecution.objects.create(sweep=sweep)
    figures = {
        (fast, "speed"): [speed(40), speed(44), speed(42)],
        (base, "speed"): [speed(31), speed(30), speed(32)],
        (flaky, "speed"): [speed(38), "failed", "running"],
        (fast, "agent-table"): [agent(44), agent(46), agent(47)],
        (base, "agent-table"): [agent(47), agent(46), agent(47)],
        (flaky, "agent-table"): ["failed", "failed", "queued"],
    }
    for (config, job), outcomes in figures.items():
        for rep, outcome in enumerate(outcomes, start=1):
            status, summary = (outcome, {}) if isinstance(outcome, str) else ("succeeded", outcome)
            RunFactory(config=config, job=job, execution=sweep_run, repetition=rep, status=status,
                       summary=summary)
    SweepExecution.objects.filter(pk=sweep_run.pk).update(finished="2025-01-01T00:00:00Z")
    return sweep_run


def grid_of(alice_client, sweep_run) -> dict:
    response = alice_client.get(reverse("runs:api-sweep-run", args=[sweep_run.pk]))
    assert response.status_code == 200
    return response.json()


def cells(data: dict) -> dict:
    return {(row["config"]["name"], c["job"]): c for row in data["grid"]["rows"] for c in row["cells"]}


def test_it_answers_the_grid_with_medians_spreads_and_progress(alice_client, finished_run):
    data = grid_of(alice_client, finished_run)
    grid = data["grid"]
    assert data["finished"].startswith("2025-01-01")
    assert [c["job"] for c in grid["columns"]] == ["speed", "agent-table"]
    assert [r["config"]["name"] for r in grid["rows"]] == ["base", "fast", "flaky"]
    assert [r["baseline"] for r in grid["rows"]] == [True, False, False]
    got = cells(data)
    assert _old(got[("fast", "speed")]["spread"]) == {"median": 42.0, "min": 40.0, "max": 44.0, "n": 3}
    assert got[("fast", "speed")]["text"] == f"42.0 [40.0{EN}44.0] tok/s (n=3)"
    assert _old(got[("base", "speed")]["spread"]) == {"median": 31.0, "min": 30.0, "max": 32.0, "n": 3}
    assert got[("base", "agent-table")]["text"] == f"100.0 [97.9{EN}100.0] % (n=3)"
    assert grid["columns"][1]["metric"] == "table F1"
    assert _old(got[("flaky", "speed")]["spread"]) == {"median": 38.0, "min": 38.0, "max": 38.0, "n": 1}
    flaky = got[("flaky", "speed")]
    assert flaky["interval"].startswith("no CI from 1 run;")
    fast = got[("fast", "speed")]["interval"]
    assert fast.startswith(f"95 % CI 40.0{EN}44.0 tok/s; p90 of 3 runs = max 44.0")
    assert (flaky["total"], flaky["done"], flaky["running"], flaky["failed"]) == (3, 2, 1, 1)
    flaky_agent = got[("flaky", "agent-table")]
    assert flaky_agent["spread"] is None and flaky_agent["text"] == "\u2014"
    assert grid["progress"] == {"total": 18, "done": 16, "running": 1, "failed": 3, "queued": 1}


def test_it_labels_deltas_against_the_baseline(alice_client, finished_run):
    got = cells(grid_of(alice_client, finished_run))
    fast_speed, fast_agent = got[("fast", "speed")], got[("fast", "agent-table")]
    assert (fast_speed["delta"], fast_speed["verdict"]) == (11.0, "better")
    assert (fast_speed["delta_text"], fast_speed["delta_pct_text"]) == ("+11.0 tok/s", "+35.5 %")
    assert fast_speed["delta_pct"] == pytest.approx(11 / 31 * 100)
    assert (fast_agent["delta"], fast_agent["delta_text"]) == (pytest.approx(-1 / 47), "-2.1 pp")
    assert fast_agent["verdict"] == "noise"
    assert got[("flaky", "speed")]["verdict"] == "no spread"
    assert got[("flaky", "agent-table")]["verdict"] == "n/a"
    assert got[("base", "speed")]["verdict"] == "baseline"


def test_it_shows_no_deltas_without_a_baseline(alice_client, finished_run):
    Sweep.objects.filter(pk=finished_run.sweep_id).update(baseline=None)
    got = cells(grid_of(alice_client, finished_run))
    assert {c["verdict"] for c in got.values()} == {"n/a"}


def test_it_renders_the_sweep_run_page(alice_client, finished_run):
    html = alice_client.get(reverse("runs:sweep-run", args=[finished_run.pk])).content.decode()
    assert f"42.0 [40.0{EN}44.0] tok/s (n=3)" in html
    assert "\u0394 +11.0 tok/s (+35.5 %)" in html and 'class="verdict verdict-better">better<' in html
    assert 'class="verdict verdict-noise">noise<' in html
    assert "table F1, % \u2191" in html and f"100.0 [97.9{EN}100.0] % (n=3)" in html
    assert "16 of 18 runs done · 1 running · 3 failed" in html
    assert f'href="/compare/?sweep_runs={finished_run.pk}"' in html
    assert 'data-finished="true"' in html and "js/sweep_grid" in html
    assert WEBHOOK not in html


def test_it_exports_the_grid_as_csv_and_json(alice_client, finished_run):
    url = reverse("runs:sweep-run", args=[finished_run.pk])
    response = alice_client.get(url, {"format": "csv"})
    assert response["Content-Disposition"] == f'attachment; filename="sweep-run-{finished_run.pk}.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 6
    fast = next(r for r in rows if (r["config"], r["job"]) == ("fast", "speed"))
    assert (fast["median"], fast["min"], fast["max"], fast["n"]) == ("42.0", "40.0", "44.0", "3")
    assert (fast["verdict"], fast["delta"], fast["baseline"]) == ("better", "11.0", "False")

    data = alice_client.get(url, {"format": "json"}).json()
    assert data["columns"][:3] == ["config", "engine", "machine"]
    base = next(r for r in data["rows"] if (r["config"], r["job"]) == ("base", "agent-table"))
    assert (base["median"], base["min"], base["max"], base["n"], base["baseline"]) == (
        1.0, pytest.approx(46 / 47), 1.0, 3, True)
    assert (base["metric"], base["unit"]) == ("table F1", "%")
    assert WEBHOOK not in response.content.decode() + json.dumps(data)


def test_it_bounds_the_queries_of_the_grid(alice_client, finished_run, django_assert_max_num_queries):
    run_page = reverse("runs:sweep-run", args=[finished_run.pk])
    limits = {  # session and user, then the page's own queries: none per run or per config
        # (the sweep's page and the list: one more, the teams where the user may start or create;
        # the sweep's page one more again: whether it has a schedule, to say when none fires)
        run_page: 4, run_page + "?format=csv": 4, reverse("runs:api-sweep-run", args=[finished_run.pk]): 4,
        reverse("runs:sweep-detail", args=[finished_run.sweep_id]): 7, reverse("runs:sweep-list"): 4,
    }
    more = [EngineConfigFactory() for _ in range(4)]
    for grown in (False, True):
        if grown:  # four more configs with 3 runs each: the same number of queries
            for config in more:
                for rep in (1, 2, 3):
                    RunFactory(config=config, execution=finished_run, repetition=rep, status="succeeded",
                               summary=speed(20 + rep))
        for url, limit in limits.items():
            with django_assert_max_num_queries(limit):
                assert alice_client.get(url).status_code == 200, url
    assert len(grid_of(alice_client, finished_run)["grid"]["rows"]) == 7


def test_it_requires_login_everywhere(client, finished_run):
    sweep_id = finished_run.sweep_id
    pages = [
        reverse("runs:sweep-list"), reverse("runs:sweep-new"), reverse("runs:sweep-detail", args=[sweep_id]),
        reverse("runs:sweep-edit", args=[sweep_id]), reverse("runs:sweep-run", args=[finished_run.pk]),
        reverse("runs:sweep-run", args=[finished_run.pk]) + "?format=csv",
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/login/"), url
    response = client.post(reverse("runs:sweep-start", args=[sweep_id]))
    assert response.status_code == 302 and response.url.startswith("/login/")
    assert SweepExecution.objects.count() == 1
    api = client.get(reverse("runs:api-sweep-run", args=[finished_run.pk]))
    assert (api.status_code, api.json()) == (401, {"error": "login required"})


def form_data(configs, **fields) -> dict:
    data = {"name": "nightly", "configs": [c.pk for c in configs], "repetitions": 3,
            "baseline": configs[0].pk, "noise_floor_pct": 3.0,
            "job_speed": "on", "speed__reps": 2, "speed__warmup": 0}
    return data | fields


def test_it_creates_a_sweep_from_the_form(alice_client):
    configs = [EngineConfigFactory(), EngineConfigFactory()]
    data = form_data(configs, job_needle="on", needle__lengths="", replay__requests="ignored",
                     webhook_url=WEBHOOK)
    response = alice_client.post(reverse("runs:sweep-new"), data)
    sweep = Sweep.objects.get(name="nightly")
    assert response.status_code == 302 and response.url == reverse("runs:sweep-detail", args=[sweep.pk])
    assert sweep.jobs == [
        {"job": "speed", "params": {"reps": 2, "warmup": 0}},
        {"job": "needle",
         "params": {"lengths": [32768, 65536], "depths": [0.1, 0.5, 0.9], "answer_tokens": 32}},
    ]
    assert set(sweep.configs.all()) == set(configs) and sweep.baseline == configs[0]
    assert sweep.webhook_url == WEBHOOK


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"speed__reps": 99}, "speed__reps", "speed: reps must be between 1 and 50, not 99"),
        ({"speed__reps": "2x"}, "speed__reps", "Enter a whole number."),
        ({"job_concurrency": "on", "concurrency__levels": "1,x"}, "concurrency__levels",
         "concurrency: levels item must be a whole number"),
        ({"job_lookahead": "on", "lookahead__lengths": "0,65"}, "lookahead__lengths",
         "lookahead: lengths item must be between 0 and 64, not 65"),
        ({"job_speed": ""}, None, "jobs: choose at least one job"),
    ],
)
def test_it_names_the_job_and_field_of_a_bad_form(alice_client, fields, field, message):
    configs = [EngineConfigFactory()]
    response = alice_client.post(reverse("runs:sweep-new"), form_data(configs, **fields))
    assert response.status_code == 400
    assert message in response.content.decode()
    form = response.context["form"]
    assert [error for error in form.errors[field or "__all__"] if message in error]
    assert not Sweep.objects.exists()


def test_it_offers_a_field_per_job_parameter_with_its_range_and_default(alice_client):
    html = alice_client.get(reverse("runs:sweep-new")).content.decode()
    assert "parameters (JSON)" not in html and "<textarea" not in html
    assert 'name="lookahead__lengths"' in html and 'placeholder="0,2,4,8,12"' in html
    assert f"comma-separated, each 0{EN}64, default 0,2,4,8,12" in html
    assert 'name="speed__reps"' in html and 'min="1"' in html and 'max="50"' in html
    assert f"1{EN}50, default 3" in html
    assert 'name="agent_table__fixture"' in html


def test_it_stores_a_lookahead_sweep_from_its_fields(alice_client):
    configs = [EngineConfigFactory()]
    data = form_data(configs, job_speed="", job_lookahead="on", lookahead__lengths="0, 4,8",
                     lookahead__reps="2")
    assert alice_client.post(reverse("runs:sweep-new"), data).status_code == 302
    assert Sweep.objects.get().jobs == [
        {"job": "lookahead", "params": {"lengths": [0, 4, 8], "reps": 2, "warmup": 1}},
    ]


def test_it_edits_a_sweeps_stored_parameters_in_their_fields(alice_client):
    config = EngineConfigFactory()
    stored = [{"job": "speed", "params": {"reps": 2, "warmup": 0}},
              {"job": "lookahead", "params": {"lengths": [0, 8], "reps": 1, "warmup": 1}}]
    sweep = SweepFactory(configs=[config], jobs=stored)
    url = reverse("runs:sweep-edit", args=[sweep.pk])
    form = alice_client.get(url).context["form"]
    assert form["lookahead__lengths"].value() == "0,8" and form["speed__reps"].value() == 2
    assert form["job_lookahead"].value() is True and form["job_needle"].value() is False
    values = {name: form[name].value() for name in form.fields}
    data = {name: value for name, value in values.items() if value is not None and value is not False}
    data["configs"] = [config.pk]
    data["baseline"] = ""
    assert alice_client.post(url, data).status_code == 302
    sweep.refresh_from_db()
    assert sweep.jobs == stored


def test_it_keeps_a_stored_replay_unless_a_new_file_is_given(alice_client):
    config = EngineConfigFactory()
    recorded = [{"messages": [{"role": "user", "content": "hi"}]}]
    sweep = SweepFactory(configs=[config], jobs=[{"job": "replay", "params": {"requests": recorded}}])
    url = reverse("runs:sweep-edit", args=[sweep.pk])
    assert "1 recorded requests are stored" in alice_client.get(url).content.decode()
    data = form_data([config], name=sweep.name, job_speed="", job_replay="on")
    assert alice_client.post(url, data).status_code == 302
    sweep.refresh_from_db()
    assert sweep.jobs[0]["params"]["requests"] == recorded
    upload = SimpleUploadedFile("new.jsonl", b'{"messages": [{"role": "user", "content": "new"}]}\n')
    assert alice_client.post(url, data | {"replay__requests": upload}).status_code == 302
    sweep.refresh_from_db()
    assert sweep.jobs[0]["params"]["requests"][0]["messages"][0]["content"] == "new"


def test_it_ticks_the_configs_named_in_the_query(alice_client):
    chosen, other = EngineConfigFactory(), EngineConfigFactory()
    form = alice_client.get(reverse("runs:sweep-new"), {"configs": [chosen.pk, "x"]}).context["form"]
    assert [str(pk) for pk in form["configs"].value()] == [str(chosen.pk)]
    assert str(other.pk) not in [str(pk) for pk in form["configs"].value()]


def test_it_refuses_a_baseline_outside_the_sweep(alice_client):
    inside, outside = EngineConfigFactory(), EngineConfigFactory(name="elsewhere")
    response = alice_client.post(reverse("runs:sweep-new"), form_data([inside], baseline=outside.pk))
    assert response.status_code == 400
    assert "elsewhere is not one of the sweep&#x27;s configs" in response.content.decode()


def test_it_never_renders_the_webhook_and_keeps_it_unless_replaced(alice_client):
    config = EngineConfigFactory()
    jobs = [{"job": "speed", "params": {"reps": 2}}]
    sweep = SweepFactory(configs=[config], webhook_url=WEBHOOK, jobs=jobs)
    url = reverse("runs:sweep-edit", args=[sweep.pk])
    html = alice_client.get(url).content.decode()
    assert WEBHOOK not in html and "hooks.example.org" not in html
    assert "A webhook URL is set" in html and 'name="speed__reps" value="2"' in html

    alice_client.post(url, form_data([config], name=sweep.name, webhook_url=""))
    sweep.refresh_from_db()
    assert sweep.webhook_url == WEBHOOK
    alice_client.post(url, form_data([config], name=sweep.name, webhook_url="https://new.example.org/hook"))
    sweep.refresh_from_db()
    assert sweep.webhook_url == "https://new.example.org/hook"
    alice_client.post(url, form_data([config], name=sweep.name, clear_webhook="on"))
    sweep.refresh_from_db()
    assert sweep.webhook_url == ""


def test_it_starts_a_sweep_from_its_page(alice_client, alice):
    sweep = SweepFactory(configs=[EngineConfigFactory()], repetitions=2)
    html = alice_client.get(reverse("runs:sweep-detail", args=[sweep.pk])).content.decode()
    assert 'name="csrfmiddlewaretoken"' in html and reverse("runs:sweep-start", args=[sweep.pk]) in html
    response = alice_client.post(reverse("runs:sweep-start", args=[sweep.pk]))
    started = SweepExecution.objects.get(sweep=sweep)
    assert response.status_code == 302 and response.url == reverse("runs:sweep-run", args=[started.pk])
    assert started.created_by == alice and started.trigger == "manual"
    assert list(started.runs.order_by("repetition").values_list("repetition", "status")) == [
        (1, Run.Status.QUEUED), (2, Run.Status.QUEUED)
    ]
    page = alice_client.get(response.url).content.decode()
    assert 'data-finished="false"' in page and "0 of 2 runs done" in page


def test_it_says_why_a_sweep_did_not_start(alice_client):
    sweep = SweepFactory(configs=[], jobs=[{"job": "speed"}])
    response = alice_client.post(reverse("runs:sweep-start", args=[sweep.pk]))
    assert response.status_code == 400
    assert "Not started: configs: choose at least one config" in response.content.decode()
    assert not SweepExecution.objects.exists()


def test_it_keeps_sweep_names_unique_per_team_only(alpha, bravo):
    for world in (alpha, bravo):
        client = Client()
        client.force_login(world.teammate)
        assert client.post(reverse("runs:sweep-new"), form_data([world.config])).status_code == 302
    again = client.post(reverse("runs:sweep-new"), form_data([bravo.config]))  # bravo's own name now
    html = again.content.decode()
    assert again.status_code == 400 and "a sweep named nightly already exists in this team" in html
    assert "alpha" not in html
    assert Sweep.objects.filter(name="nightly").count() == 2


# --- Roles: a viewer cannot create or start a sweep; a member's are in the audit log ---------------

SWEEP_FORM = {"repetitions": 1, "noise_floor_pct": 3, "job_speed": "on"}


@pytest.fixture
def handed(monkeypatch) -> list:
    runs: list = []
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", runs.append)
    return runs


def test_it_refuses_a_sweep_start_or_a_new_sweep_to_a_viewer(alpha, handed):
    viewer = person(alpha.team, Role.VIEWER, "alpha_viewer")
    client = logged_in(viewer)
    start = reverse("runs:sweep-start", args=[alpha.sweep.pk])
    before = (Run.objects.count(), SweepExecution.objects.count(), Sweep.objects.count())
    assert client.post(start).status_code == 403
    new = reverse("runs:sweep-new")
    assert client.post(new, SWEEP_FORM | {"name": "mine", "configs": [alpha.config.pk]}).status_code == 403
    assert client.post(reverse("runs:sweep-edit", args=[alpha.sweep.pk]),
                       SWEEP_FORM | {"name": "renamed", "configs": [alpha.config.pk]}).status_code == 403
    assert (Run.objects.count(), SweepExecution.objects.count(), Sweep.objects.count()) == before
    assert handed == [] and not AuditEvent.objects.exists()
    html = client.get(reverse("runs:sweep-detail", args=[alpha.sweep.pk])).content.decode()
    assert f'action="{start}"' not in html and reverse("runs:sweep-edit", args=[alpha.sweep.pk]) not in html


def test_it_records_who_created_and_started_a_sweep(alpha, handed):
    client = logged_in(alpha.teammate)
    data = SWEEP_FORM | {"name": "alpha-new", "configs": [alpha.config.pk]}
    response = client.post(reverse("runs:sweep-new"), data, REMOTE_ADDR="10.6.6.6")
    sweep = Sweep.objects.get(name="alpha-new")
    assert response.status_code == 302
    client.post(reverse("runs:sweep-start", args=[sweep.pk]), REMOTE_ADDR="10.6.6.6")
    execution = sweep.executions.get()
    [run] = execution.runs.all()
    events = AuditEvent.objects.order_by("id")
    assert [(e.action, e.object_type, e.object_id) for e in events] == [
        ("created", "sweep", str(sweep.pk)), ("started", "sweepexecution", str(execution.pk)),
        ("started", "run", str(run.pk))]
    assert {(e.actor, e.address, e.team) for e in events} == {(alpha.teammate, "10.6.6.6", alpha.team)}
    assert handed == [run]
