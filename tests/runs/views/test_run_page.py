from __future__ import annotations

import json
import os
import time

import pytest
from django.urls import reverse

from measure.stats import summarize, summarize_rows
from runs.core import registry
from runs.core.scoring.figures import interval_text
from runs.models import Run
from teams.models import AuditEvent, Role
from tests.access_walk import logged_in
from tests.factories import EngineConfigFactory, EngineFactory, RunFactory, SampleFactory
from tests.runs import spec_helpers
from tests.teams.people import person

SECRET = "sk-very-secret-key-123"
SPREAD = {"median": 41.25, "min": 39.8, "max": 43.0, "n": 9}

pytestmark = pytest.mark.django_db


@pytest.fixture
def run() -> Run:
    engine = EngineFactory(api_key=SECRET, simulator=True)
    config = EngineConfigFactory(engine=engine)
    return RunFactory(
        config=config,
        status=Run.Status.SUCCEEDED,
        progress_done=9,
        progress_total=9,
        summary={"decode_tps_client": SPREAD, "acceptance_rate": None,
                 "ttft_s": {"median": 0.2134, "min": 0.2, "max": 0.25, "n": 9}},
        provenance={"engine_version": "b1234", "model": {"id": "qwen3", "digest": "sha256:abc"},
                    "config": config.snapshot(), "harness_commit": "deadbeef"},
    )


def test_it_renders_the_run_pages(alice_client, run):
    for url in (reverse("runs:list"), run.get_absolute_url()):
        assert alice_client.get(url).status_code == 200, url


def test_it_redirects_anonymous_users_to_login(client, run):
    for url in (reverse("runs:list"), run.get_absolute_url()):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith("/login/?next=")


def test_it_answers_401_json_to_anonymous_api_calls(client, run):
    for name in ("runs:api-run", "runs:api-samples"):
        response = client.get(reverse(name, args=[run.pk]))
        assert response.status_code == 401
        assert response.json() == {"error": "login required"}


def test_it_never_shows_the_api_key(alice_client, run):
    for url in (reverse("runs:list"), run.get_absolute_url()):
        assert SECRET not in alice_client.get(url).content.decode(), url


def test_it_embeds_the_run_for_the_live_page(alice_client, run):
    html = alice_client.get(run.get_absolute_url()).content.decode()
    start = html.index('<script id="run-data" type="application/json">') + len(
        '<script id="run-data" type="application/json">'
    )
    embedded = json.loads(html[start : html.index("</script>", start)])
    assert embedded == json.loads(json.dumps(run.to_dict()))
    assert f'data-run-id="{run.pk}"' in html
    assert 'data-status="succeeded" id="run-status"' in html
    assert 'data-points="0"' in html
    assert "/static/vendor/chart.umd.min.js" in html


@pytest.mark.parametrize("job", ["speed", "needle", "mmlu-pro"])
def test_it_loads_only_the_view_script_of_the_runs_job(alice_client, job):
    html = alice_client.get(RunFactory(job=job).get_absolute_url()).content.decode()
    views = [j for j in registry.JOBS if f"/static/js/jobs/{j}.js" in html]
    assert views == [job]
    # The shared scripts, then the job's view (it registers with run_charts.js), then the page's loop.
    order = ["vendor/chart.umd.min.js", "js/format.js", "js/run_charts.js", f"js/jobs/{job}.js",
             "js/run_detail.js"]
    at = [html.index(f'<script src="/static/{path}"') for path in order]
    assert at == sorted(at)


def test_it_shows_medians_with_their_spread(alice_client, run):
    html = alice_client.get(run.get_absolute_url()).content.decode()
    assert "41.2 [39.8\u201343.0] tok/s (n=9)" in html
    assert "0.213 [0.200\u20130.250] s (n=9)" in html
    assert 'title="not exposed by this engine">\u2014</span>' in html
    assert "95 % CI" not in html  # a summary stored before intervals were shows what it has
    assert "sha256:abc" in html
    assert ">simulator</mark>" in html


def three_request_run() -> Run:
    """A speed run of 3 requests, summarised as a run is today: intervals and percentiles."""
    summary = summarize_rows([{"decode_tps_client": v, "ttft_s": t} for v, t in ((40.0, 0.2), (41.0, 0.3),
                                                                                (42.0, 0.25))],
                             ["decode_tps_client", "ttft_s"])
    return RunFactory(config=EngineConfigFactory(), status=Run.Status.SUCCEEDED, summary=summary)


def test_it_says_a_3_request_runs_p99_is_its_max(alice_client):
    html = alice_client.get(three_request_run().get_absolute_url()).content.decode()
    assert "41.0 [40.0\u201342.0] tok/s (n=3)" in html
    assert "95 % CI 40.0\u201342.0 tok/s" in html
    assert "p90 of 3 requests = max 42.0; p99 of 3 requests = max 42.0" in html
    assert "p99 of 3 requests = max 0.300" in html


def test_it_puts_the_interval_of_a_run_list_figure_in_its_hover(alice_client):
    three_request_run()
    html = alice_client.get(reverse("runs:list")).content.decode()
    hover = "95 % CI 40.0\u201342.0 tok/s; p90 of 3 requests = max 42.0; p99 of 3 requests = max 42.0"
    assert f'<span title="{hover}">41.0 [40.0\u201342.0] tok/s (n=3)</span>' in html
    assert '<small class="interval">' not in html


def test_it_shows_the_interval_under_the_figure_in_the_browser(live_server, alice):
    from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium

    if not HAVE_CHROMIUM:
        pytest.skip(NEEDS_CHROMIUM)
    run = three_request_run()
    with logged_in_chromium(live_server.url, alice) as driver:
        driver.get(live_server.url + run.get_absolute_url())
        script = 'return document.querySelector(\'[data-metric="decode_tps_client"] .interval\').textContent'
        # The page's script redraws the summary from the run's JSON: the interval must survive it.
        time.sleep(1)
        assert driver.execute_script(script).endswith("p99 of 3 requests = max 42.0")
        # format.js writes every kind of spread as figures.interval_text does.
        many = summarize([40 + (i % 17) * 0.3 for i in range(200)])
        for figure in (run.summary["decode_tps_client"], many, summarize([5.0]), SPREAD):
            got = driver.execute_script('return SparkFormat.interval(arguments[0], "tok/s", 1, 1)', figure)
            assert got == interval_text(figure, "tok/s", 1, 1)
        if shots := os.environ.get("SPARKDASH_SHOTS"):
            driver.save_screenshot(os.path.join(shots, "run_page_intervals.png"))


def test_it_shows_the_error_of_a_failed_run(alice_client):
    failed = RunFactory(status=Run.Status.FAILED, error="request 3 of 24: HTTP 500 from engine")
    html = alice_client.get(failed.get_absolute_url()).content.decode()
    assert "request 3 of 24: HTTP 500 from engine" in html


def test_it_filters_the_run_list_by_status(alice_client, run):
    queued = RunFactory(status=Run.Status.QUEUED)
    response = alice_client.get(reverse("runs:list"), {"status": "queued"})
    runs = list(response.context["page"].object_list)
    assert runs == [queued]


def test_it_filters_the_run_list_by_config_and_machine(alice_client, run):
    RunFactory()
    by_config = alice_client.get(reverse("runs:list"), {"config": run.config_id})
    by_machine = alice_client.get(reverse("runs:list"), {"machine": run.machine_id})
    assert list(by_config.context["page"].object_list) == [run]
    assert list(by_machine.context["page"].object_list) == [run]


def test_it_ignores_malformed_filter_ids(alice_client, run):
    response = alice_client.get(reverse("runs:list"), {"config": "abc"})
    assert response.status_code == 200
    assert list(response.context["page"].object_list) == [run]


def test_it_paginates_the_run_list(alice_client, run):
    RunFactory.create_batch(50, config=run.config)
    first = alice_client.get(reverse("runs:list"))
    second = alice_client.get(reverse("runs:list"), {"page": 2})
    assert len(first.context["page"].object_list) == 50
    assert len(second.context["page"].object_list) == 1
    assert "page=2" in first.content.decode()


def test_it_cancels_a_queued_run(alice_client):
    queued = RunFactory(status=Run.Status.QUEUED)
    response = alice_client.post(reverse("runs:cancel", args=[queued.pk]))
    queued.refresh_from_db()
    assert response.status_code == 302
    assert queued.status == Run.Status.CANCELLED


def test_it_serves_samples_after_a_seq_for_polling(alice_client, run):
    for seq in range(3):
        SampleFactory(run=run, seq=seq)
    response = alice_client.get(reverse("runs:api-samples", args=[run.pk]), {"after": 0})
    assert [s["seq"] for s in response.json()["samples"]] == [1, 2]
    assert response.json()["run"]["status"] == "succeeded"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_draws_every_sample_of_a_finished_run_in_the_browser(live_server, alice, run):
    from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium

    if not HAVE_CHROMIUM:
        pytest.skip(NEEDS_CHROMIUM)
    for seq in range(5):
        SampleFactory(run=run, seq=seq)
    SampleFactory(run=run, seq=5, kind="note", values={})
    # The plain live server has no websocket route, so this also exercises the polling fallback.
    with logged_in_chromium(live_server.url, alice) as driver:
        driver.get(live_server.url + run.get_absolute_url())
        canvas = 'document.getElementById("speed-chart").dataset.points'
        for _ in range(50):
            if driver.execute_script(f"return {canvas}") == "5":
                break
            time.sleep(0.1)
        assert driver.execute_script(f"return {canvas}") == "5"
        badge = driver.execute_script('return document.querySelector("h1 [data-status]").dataset.status')
        assert badge == "succeeded"


def test_it_shows_the_engine_log_filtered_by_a_search(alice_client):
    log = "load model\nslot print_timing: draft acceptance = 1.00000 (56 accepted / 56 generated)\nbye"
    run = RunFactory(engine_log=log)
    page = alice_client.get(f"/runs/{run.pk}/log/?q=ACCEPTANCE").content.decode()
    assert "56 accepted" in page
    assert "load model" not in page
    assert "1 line matching" in page


def test_it_shows_run_warnings_on_the_run_page(alice_client):
    run = RunFactory(warnings=[{"kind": "cache-discard", "message": "prompt dropped from the RAM cache"}])
    page = alice_client.get(f"/runs/{run.pk}/").content.decode()
    assert "prompt dropped from the RAM cache" in page


POSITIONS_TEXT = "position 1: 90.0 %, 2: 75.0 %, 3: 60.0 %, 4: 45.0 %"


def test_it_shows_acceptance_by_draft_position_in_the_summary_and_the_counters(alice_client):
    html = alice_client.get(spec_helpers.speed_run().get_absolute_url()).content.decode()
    assert f'<td id="positions-text"><span>{POSITIONS_TEXT}</span></td>' in html
    # The counters' figure with its sum: accepted per draft = tokens per verification (3.70) - 1.
    assert (f"{POSITIONS_TEXT} (sum 2.70 accepted per draft = tokens per verification \u2212 1)</span>"
            " over 1200 drafts") in html
    assert 'id="positions-chart" data-points="0"' in html
    assert ">TTFT (engine)</th>" in html and "0.201 [0.181\u20130.221] s (n=24)" in html


def test_it_shows_the_client_and_engine_ttft_beside_the_decode_cross_check(alice_client):
    run = spec_helpers.speed_run()

    def page() -> str:
        return alice_client.get(run.get_absolute_url()).content.decode()

    assert '<td id="ttft-check">0.213 vs 0.201 s (6.0 %)</td>' in page()
    run.summary["ttft_check"] |= {"client_s": 0.3, "diff_pct": 49.3, "agree": False}
    run.save()
    assert "0.300 vs 0.201 s (49.3 %) <strong>disagree</strong>" in page()


def test_it_says_acceptance_by_position_is_not_exposed(alice_client):
    summary = spec_helpers.speed_summary() | {"acceptance_by_position": None, "spec_decode_metrics": None}
    html = alice_client.get(RunFactory(summary=summary).get_absolute_url()).content.decode()
    missing = 'title="not exposed by this engine (Ollama), or no drafting">\u2014</span>'
    assert f'<td id="positions-text"><span class="missing" {missing}</td>' in html
    assert f'<td id="positions-counters"><span class="missing" {missing}</td>' in html


def test_it_shows_a_lookahead_sweeps_counters_per_length(alice_client):
    html = alice_client.get(spec_helpers.lookahead_run().get_absolute_url()).content.decode()
    assert 'id="positions-chart"' in html
    at_4 = html[html.index('data-positions-length="4"'):]
    assert at_4.startswith(f'data-positions-length="4"><span>{POSITIONS_TEXT} (sum 2.70')
    assert 'data-positions-length="0"><span class="missing"' in html
    at_8 = "position 1: 90.0 %, 2: 76.0 %, 3: 61.0 %, 4: 47.0 %, 5: 36.0 %, 6: 27.0 %, 7: 20.0 %, 8: 14.0 %"
    assert f'data-positions-length="8"><span>{at_8} (sum 3.71' in html


def test_it_lists_the_engines_ttft_per_recorded_request_of_a_replay(alice_client):
    html = alice_client.get(RunFactory(job="replay").get_absolute_url()).content.decode()
    assert "<th>TTFT</th><th>TTFT (engine)</th>" in html


def test_it_offers_a_checkbox_per_run_and_compare_selected(alice_client, run):
    other = RunFactory(status=Run.Status.SUCCEEDED)
    html = alice_client.get(reverse("runs:list")).content.decode()
    for pk in (run.pk, other.pk):
        assert f'<input type="checkbox" name="runs" value="{pk}"' in html
    assert '<button type="submit" name="compare" value="selected">Compare selected</button>' in html
    assert "js/run_list.js" in html


def test_it_opens_the_compare_page_with_the_selected_runs(alice_client, run):
    other = RunFactory(status=Run.Status.SUCCEEDED)
    response = alice_client.get(reverse("runs:list"), {"compare": "selected", "runs": [other.pk, run.pk]})
    assert response.status_code == 302
    assert response.url == f"{reverse('runs:compare')}?runs={run.pk},{other.pk}"
    assert alice_client.get(response.url).status_code == 200


@pytest.mark.parametrize(
    ("ticked", "message"),
    [
        ([], "tick at least 2 runs to compare (0 are ticked)"),
        (["one"], "tick at least 2 runs to compare (1 is ticked)"),
        (["one", "one"], "tick at least 2 runs to compare (1 is ticked)"),
        (["one", "x1"], "Compare selected: x1 is not an id"),
    ],
)
def test_it_says_so_when_fewer_than_two_runs_are_selected(alice_client, run, ticked, message):
    ids = [str(run.pk) if tick == "one" else tick for tick in ticked]
    query = {"compare": "selected", "runs": ids, "status": "succeeded"}
    response = alice_client.get(reverse("runs:list"), query)
    html = response.content.decode()
    assert response.status_code == 400
    assert message in html and 'id="compare-error"' in html
    assert '<input type="hidden" name="status" value="succeeded">' in html
    if ids[:1] == [str(run.pk)]:
        assert f'name="runs" value="{run.pk}" aria-label="compare run #{run.pk}" checked' in html


def test_it_shows_mmlu_pros_budget_hits_beside_the_accuracy(alice_client):
    summary = {"accuracy": 0.75, "correct": 3, "total": 6, "answered": 4, "budget_hit": 2, "max_tokens": 256}
    html = alice_client.get(RunFactory(job="mmlu-pro", summary=summary).get_absolute_url()).content.decode()
    hits = html[html.index('id="budget-hits"'):html.index("</p>", html.index('id="budget-hits"'))]
    assert "2 of 6 questions ran out of max tokens (256) before giving a letter" in hits
    assert "over the 4 answered (3 correct)" in hits and "score is 50%" in hits


def test_it_shows_no_budget_hits_for_an_mmlu_pro_run_without_any(alice_client):
    summary = {"accuracy": 0.5, "correct": 3, "total": 6, "answered": 6, "budget_hit": 0}
    html = alice_client.get(RunFactory(job="mmlu-pro", summary=summary).get_absolute_url()).content.decode()
    assert 'id="budget-hits"' not in html


def test_it_shows_evalplus_budget_hits_beside_pass_at_1(alice_client):
    summary = {"pass_at_1_plus": 2 / 3, "passed_plus": 2, "total": 4, "answered": 3, "budget_hit": 1}
    html = alice_client.get(RunFactory(job="evalplus", summary=summary).get_absolute_url()).content.decode()
    hits = html[html.index('id="budget-hits"'):html.index("</p>", html.index('id="budget-hits"'))]
    assert "1 of 4 problems ran out of max tokens" in hits and "over the 3 answered" in hits
    assert "plus score is 50%" in hits


def test_it_shows_the_reasoning_rows_only_for_a_run_whose_requests_reasoned(alice_client, run):
    plain = alice_client.get(run.get_absolute_url()).content.decode()
    assert '<tr data-reasoning hidden><th>TTFO (first answer token)</th>' in plain
    run.summary |= {
        "ttfr_s": {"median": 0.2, "min": 0.2, "max": 0.25, "n": 9},
        "ttfo_s": {"median": 1.4321, "min": 1.2, "max": 1.6, "n": 9},
        "reasoning_tokens": {"median": 120, "min": 100, "max": 140, "n": 9},
        "reasoning_tokens_sources": ["engine"],
    }
    run.save()
    page = alice_client.get(run.get_absolute_url()).content.decode()
    assert '<tr data-reasoning><th>TTFO (first answer token)</th>' in page
    assert "1.432 [1.200\u20131.600] s (n=9)" in page
    assert "120 [100\u2013140] tokens (n=9)" in page
    assert '<td id="reasoning-sources">engine</td>' in page


# --- Roles: a viewer cannot cancel; a member's cancel is in the audit log --------------------------


def test_it_refuses_a_cancel_to_a_viewer_and_shows_no_cancel_button(alpha):
    running = RunFactory(config=alpha.config, status=Run.Status.RUNNING)
    viewer = person(alpha.team, Role.VIEWER, "alpha_viewer")
    url = reverse("runs:cancel", args=[running.pk])
    assert logged_in(viewer).post(url).status_code == 403
    running.refresh_from_db()
    assert running.status == Run.Status.RUNNING and not AuditEvent.objects.exists()
    html = logged_in(viewer).get(running.get_absolute_url()).content.decode()
    assert f'action="{url}"' not in html
    assert f'action="{url}"' in logged_in(alpha.teammate).get(running.get_absolute_url()).content.decode()


def test_it_records_who_cancelled_a_run(alpha):
    running = RunFactory(config=alpha.config, status=Run.Status.RUNNING)
    logged_in(alpha.teammate).post(reverse("runs:cancel", args=[running.pk]), REMOTE_ADDR="10.5.5.5")
    running.refresh_from_db()
    assert running.status == Run.Status.CANCELLED
    event = AuditEvent.objects.get()
    assert (event.actor, event.action, event.object_id, event.address) == (
        alpha.teammate, "cancelled", str(running.pk), "10.5.5.5")
