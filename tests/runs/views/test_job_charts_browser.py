"""Each job's run page in headless Chromium: a run of the job is measured on the simulator to
the end (bench, in-process worker), then its page draws the job's chart and summary table.

Screenshots go to /tmp/chart_<job>.png, for a person to look at.
"""
from __future__ import annotations

import io
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from engines.models import Engine, EngineConfig
from engines.simulator import SimProfile, serve_in_thread
from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import EngineConfigFactory, RunFactory, SampleFactory, telemetry
from tests.real_engine import free_port
from tests.runs.compare_helpers import concurrency_summary
from tests.runs.worker.test_quality_jobs import letter_b
from tests.scripted_openai import scripted_chat

SHOTS = Path(tempfile.gettempdir())
# 273 GB/s / 0.3 GB per token: a 910 tok/s ceiling, above the simulator's ~660 tok/s.
BYTES_PER_TOKEN_GB = 0.3
# Fast enough for each run to take about a second; a prompt cache small enough to be discarded.
PROFILE = SimProfile(
    decode_tps=300, ttft_ms=5, lookahead=4, acceptance=0.8, batch_cost=0.3,
    prefill_tps=20_000, cache_tokens=1500,
)
RECORDED = [
    {"messages": [{"role": "user", "content": f"Recorded step {i}."}], "max_tokens": 16 + 8 * i}
    for i in range(3)
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]

# What the page drew: the main canvas's data-points, each dataset's label and its non-null
# points, and the status the page shows.
DRAWN_JS = """
const canvas = document.getElementById(arguments[0]);
const chart = Chart.getChart(canvas);
return {
  points: Number(canvas.dataset.points),
  labels: chart.data.labels.map(String),
  datasets: chart.data.datasets.map((d) => [d.label, d.data.filter((v) => v !== null).length]),
  radii: Object.fromEntries(chart.data.datasets.map((d) => [d.label, d.pointRadius])),
  status: document.getElementById("run-status").dataset.status,
  job: document.getElementById("run").dataset.job,
};
"""


@pytest.fixture
def sim():
    with serve_in_thread(PROFILE) as server:
        yield server


@pytest.fixture
def browser(live_server, alice):
    with logged_in_chromium(live_server.url, alice, height=1900) as driver:
        yield driver


def _external(sim: Any, **fields: Any) -> EngineConfig:
    return EngineConfigFactory(
        name=f"sim-{uuid.uuid4().hex[:8]}", engine__base_url=sim.url, engine__simulator=True,
        model="demo", max_tokens=16, **fields,
    )


def _bench(config: EngineConfig, job: str, *args: str) -> Run:
    out = io.StringIO()
    call_command("bench", config.name, "--job", job, "--wait", *args, stdout=out)
    run = Run.objects.get(pk=json.loads(out.getvalue())["id"])
    assert run.status == Run.Status.SUCCEEDED, run.error
    return run


def _open(driver: Any, run: Run, canvas: str, points: int, shot: str = "") -> dict[str, Any]:
    """The finished run's page once its main chart shows `points` x points; a screenshot of it."""
    driver.get(driver.base_url + run.get_absolute_url())
    try:
        WebDriverWait(driver, 10).until(
            lambda d: d.find_element(By.ID, canvas).get_attribute("data-points") == str(points)
        )
    finally:
        driver.save_screenshot(str(SHOTS / f"chart_{shot or run.job}.png"))
    return driver.execute_script(DRAWN_JS, canvas)


def _table(driver: Any, table_id: str = "job-summary") -> str:
    return driver.find_element(By.ID, table_id).text


def _severe(driver: Any) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _series(drawn: dict[str, Any]) -> dict[str, int]:
    return dict(drawn["datasets"])


def test_it_draws_a_speed_run_with_its_roofline_ceiling(inprocess, sim, browser):
    config = _external(sim, bytes_per_token_gb=BYTES_PER_TOKEN_GB)
    run = _bench(config, "speed", "--reps", "1", "--warmup", "0")
    drawn = _open(browser, run, "speed-chart", 6)
    series = _series(drawn)
    assert (drawn["job"], drawn["status"], drawn["points"]) == ("speed", "succeeded", 6)
    assert series["decode (client), tok/s"] == 6
    assert series["roofline ceiling 910.0 tok/s"] == 6
    assert drawn["radii"]["decode (client), tok/s"] == 2
    roofline = browser.find_element(By.ID, "roofline").text
    assert roofline.startswith("ceiling 910.0 tok/s (273 GB/s \u00f7 0.30 GB per token, override); with ")
    per_pass = run.summary["tokens_per_verification"]["pooled"]
    with_drafts = run.summary["roofline"]["ceiling_with_drafts_tps"]
    with_drafts = f"with {per_pass:.2f} tokens per verification {with_drafts:.1f} tok/s; measured"
    assert with_drafts in roofline and "% efficiency" in roofline
    assert "(n=6)" in browser.find_element(By.CSS_SELECTOR, "[data-metric=decode_tps_client]").text
    assert not browser.find_element(By.CSS_SELECTOR, "[data-metric=ttfo_s]").is_displayed()  # no reasoning
    assert _severe(browser) == []


def test_it_shows_a_reasoning_runs_ttfo_and_token_split_beside_its_speeds(inprocess, browser):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, reasoning_tokens=8)) as sim:
        run = _bench(_external(sim), "speed", "--reps", "1", "--warmup", "0")
    _open(browser, run, "speed-chart", 6, shot="speed-reasoning")
    ttfo = browser.find_element(By.CSS_SELECTOR, "[data-metric=ttfo_s]")
    assert ttfo.is_displayed() and "(n=6)" in ttfo.text
    # 16 tokens per request (the config's max_tokens), the first 8 of them reasoning.
    answer = browser.find_element(By.CSS_SELECTOR, "[data-metric=answer_tokens]")
    figure, interval = answer.text.splitlines()
    assert figure == "8 [8\u20138] tokens (n=6)"
    assert interval.startswith("95 % CI 8") and "p90 of 6 requests = max 8" in interval
    assert browser.find_element(By.ID, "reasoning-sources").text == "engine"
    assert run.summary["ttfo_s"]["median"] > run.summary["ttft_s"]["median"]
    assert _severe(browser) == []


def test_it_draws_a_bandwidth_run_then_holds_a_speed_run_against_both_ceilings(inprocess, sim, browser):
    config = _external(sim, bytes_per_token_gb=BYTES_PER_TOKEN_GB)
    # Measured through a real engine's config on the same machine: a simulated one's would not be
    # stored as the machine's (runs.worker.machine_figures). The job never contacts the engine.
    real = EngineConfigFactory(name="bw-real", engine__machine=config.engine.machine,
                               engine__base_url="http://127.0.0.1:9")
    measured = _bench(real, "bandwidth", "--buffer-mib", "32", "--passes", "3")
    drawn = _open(browser, measured, "bandwidth-chart", 3)
    assert (drawn["job"], drawn["status"], _series(drawn)) == ("bandwidth", "succeeded", {"GB/s": 3})
    gbps = measured.summary["bandwidth_gbps"]
    assert f"measured bandwidth (best pass) {gbps:.1f} GB/s" in _table(browser)
    run = _bench(config, "speed", "--reps", "1", "--warmup", "0")
    _open(browser, run, "speed-chart", 6, shot="speed-two-ceilings")
    roofline = browser.find_element(By.ID, "roofline").text
    ceiling = gbps / BYTES_PER_TOKEN_GB  # GB/s / GB per token
    assert roofline.startswith("ceiling 910.0 tok/s (273 GB/s \u00f7 0.30 GB per token, override)")
    measured_ceiling = f"; measured-bandwidth ceiling {ceiling:.1f} tok/s ({gbps:.1f} GB/s measured), with "
    assert measured_ceiling in roofline
    efficiency = run.summary["roofline"]["measured_efficiency"]
    assert f"% efficiency ({100 * efficiency:.0f} % of the measured-bandwidth ceiling)" in roofline
    assert _severe(browser) == []


def test_it_draws_no_ceiling_without_bytes_per_token(inprocess, sim, browser):
    run = _bench(_external(sim), "speed", "--reps", "1", "--warmup", "0")
    drawn = _open(browser, run, "speed-chart", 6, shot="speed-no-roofline")
    assert not any(label.startswith("roofline") for label, _ in drawn["datasets"])
    assert browser.find_element(By.ID, "roofline").text == "\u2014"


def test_it_drops_the_point_markers_of_a_long_speed_run(browser):
    run = RunFactory(job="speed", status=Run.Status.SUCCEEDED)
    SampleFactory.create_batch(400, run=run)
    drawn = _open(browser, run, "speed-chart", 400, shot="speed-long")
    assert _series(drawn)["decode (client), tok/s"] == 400
    assert set(drawn["radii"].values()) == {0}
    assert _severe(browser) == []


def test_it_draws_a_lookahead_sweep_per_length_and_output_type(inprocess, browser):
    # 48 tokens: at lookahead 8 an answer of 16 could come in two chunks, and a busy box reads two
    # chunks in one read (one time), leaving that length no decode figure (CI: 2 points of 3).
    config = EngineConfigFactory(
        name="sweep", model="demo", max_tokens=48, bytes_per_token_gb=BYTES_PER_TOKEN_GB,
        engine__simulator=True, engine__launch=Engine.Launch.MANAGED,
        engine__base_url=f"http://127.0.0.1:{free_port()}",
        extra_flags="--decode-tps 300 --ttft-ms 5 --acceptance 0.8",
    )
    run = _bench(config, "lookahead", "--lengths", "0,4,8", "--reps", "1", "--warmup", "0")
    drawn = _open(browser, run, "lookahead-chart", 3)
    series = _series(drawn)
    assert drawn["labels"] == ["0", "4", "8"]
    for output_type in ("tool-call", "table", "prose-en", "prose-ja"):
        assert series[f"{output_type} decode, tok/s"] == 3
        # No drafting at length 0: acceptance only at 4 and 8.
        assert series[f"{output_type} acceptance, %"] == 2
    assert series["roofline ceiling 910.0 tok/s"] == 3
    table = _table(browser)
    # Acceptance is one pooled figure per (length, output type), not a spread over requests.
    pooled = run.summary["lengths"]["4"]["all"]["acceptance_rate"]["pooled"]
    assert "tok/s (n=6)" in table and f"{100 * pooled:.1f} %" in table and "(fastest)" in table
    # Each (length, output type) row ends in its acceptance by draft position. The simulator, like
    # llama-server, counts positions in its /metrics, read around each lone request.
    rows = browser.find_elements(By.CSS_SELECTOR, "#job-summary tbody tr")
    last = [r.find_elements(By.TAG_NAME, "td")[-1].text for r in rows]
    at_4 = run.summary["lengths"]["4"]["all"]["acceptance_by_position"]
    assert last[5] == " · ".join(f"{100 * p:.1f}" for p in at_4) + " %"
    assert last[:5] == ["\u2014"] * 5  # no drafting at length 0
    assert [cell.count(" · ") for cell in last[5:]] == [3] * 5 + [7] * 5
    assert _severe(browser) == []


def test_it_draws_a_replay_per_recorded_request_and_pass(inprocess, sim, browser, tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDED))
    run = _bench(_external(sim), "replay", "--requests", str(path), "--reps", "2", "--warmup", "0")
    drawn = _open(browser, run, "replay-chart", 3)
    assert drawn["labels"] == ["#1", "#2", "#3"]
    assert list(_series(drawn).values()) == [3, 3]
    passes = browser.execute_script(DRAWN_JS, "passes-chart")
    assert passes["points"] == 2 and passes["labels"] == ["pass 1", "pass 2"]
    assert "s (n=2)" in _table(browser, "job-totals")
    assert _table(browser).count("tok/s") == 3
    assert _severe(browser) == []


def test_it_draws_a_concurrency_sweep_per_level(inprocess, sim, browser):
    run = _bench(_external(sim), "concurrency", "--levels", "1,2,4", "--answer-tokens", "24", "--warmup", "0")
    drawn = _open(browser, run, "concurrency-chart", 3)
    assert drawn["labels"] == ["1", "2", "4"]
    assert _series(drawn) == {"total of the box, tok/s": 3, "time to finish per answer (median), s": 3}
    table = _table(browser)
    assert "tok/s (n=1)" in table and "s (n=4)" in table
    assert "1 \u2192 4 requests at once:" in browser.find_element(By.ID, "scaling").text
    assert _severe(browser) == []


def test_it_draws_a_prefix_cache_probe_and_flags_the_discard(inprocess, sim, browser):
    run = _bench(_external(sim), "prefix-cache", "--steps", "5", "--bytes-per-step", "1200")
    drawn = _open(browser, run, "prefix-chart", 7)
    assert drawn["labels"][-2:] == ["6,inserted", "7,continuation"]
    assert _series(drawn) == {"TTFT, s": 7, "new (uncached) prompt tokens": 7, "prompt tokens sent": 7}
    banner = browser.find_element(By.ID, "cache-banner")
    assert banner.is_displayed()
    assert banner.text.startswith("Prompt cache discarded: the continuation recomputed")
    assert "Fix: a larger --cache-ram" in banner.text
    assert "continuation (step 7)" in _table(browser)
    assert _severe(browser) == []


def test_it_draws_a_needle_run_per_length_and_depth(inprocess, sim, browser):
    run = _bench(_external(sim), "needle", "--lengths", "2000,4000", "--depths", "0.25,0.75")
    drawn = _open(browser, run, "needle-chart", 4)
    assert drawn["labels"] == ["2000 @ 0.25", "2000 @ 0.75", "4000 @ 0.25", "4000 @ 0.75"]
    assert _series(drawn)["found"] == 4
    assert "2000 @ 0.25" in _table(browser)
    assert _severe(browser) == []


def test_it_draws_an_agent_table_run_step_by_step(inprocess, sim, browser):
    run = _bench(_external(sim), "agent-table", "--fixture", "routes_12", "--max-steps", "3")
    drawn = _open(browser, run, "agent-chart", 3)
    assert _series(drawn)["step time, s"] == 3
    summary = _table(browser)
    assert "outcome loop (step limit)" in summary and "0 / 12" in summary
    assert "table F1 0.0 %" in summary and "exact no" in summary and "(no rows answered)" in summary
    assert "read loop none caught" in summary
    assert _severe(browser) == []


def test_it_shows_the_simulators_read_loop_and_its_rescue(inprocess, sim, browser):
    run = _bench(_external(sim), "agent-table", "--fixture", "routes_12")
    _open(browser, run, "agent-chart", 21, shot="agent-table-loop")
    summary = _table(browser)
    assert "outcome rescued (answered)" in summary and "most reads of one file 20" in summary
    assert "read loop server.js: noted at read 12 (step 12), tools withdrawn at read 20 (step 20)" in summary
    banner = browser.find_element(By.CSS_SELECTOR, '[data-warning="read-loop"]').text
    assert banner.startswith("read-loop: the agent kept reading server.js")
    assert _severe(browser) == []


def test_it_shows_an_agent_table_run_stored_before_f1_existed(browser):
    old = {"score": 45, "rows": 47, "correct": False, "outcome": "completed", "stop_reason": "answered",
           "steps": 9, "task_s": 61.0, "max_reads": 4}
    run = RunFactory(job="agent-table", status=Run.Status.SUCCEEDED, summary=old)
    _open(browser, run, "agent-chart", 0, shot="agent-table-old")
    WebDriverWait(browser, 10).until(lambda d: "45 / 47" in _table(d))
    summary = _table(browser)
    assert "outcome completed (answered)" in summary
    assert "table F1 \u2014" in summary and "(exact)" not in summary
    assert _severe(browser) == []


def test_it_draws_an_mmlu_pro_run_question_by_question(inprocess, browser):
    with scripted_chat(letter_b) as chat:
        config = EngineConfigFactory(name="scripted", model="scripted", engine__base_url=chat.url)
        run = _bench(config, "mmlu-pro", "--dataset", "sample", "--num-fewshot", "0")
    drawn = _open(browser, run, "quality-chart", 6)
    assert drawn["labels"] == ["1", "2", "3", "4", "5", "6"]
    assert _series(drawn)["accuracy so far"] == 6
    assert "computer science" in _table(browser)
    assert browser.find_element(By.ID, "progress-text").text == "6 / 6 questions"
    assert _severe(browser) == []


def test_it_draws_an_evalplus_run_problem_by_problem(inprocess, browser):
    def no_solution(body):
        return "```python\ndef nothing():\n    return None\n```"

    with scripted_chat(no_solution) as chat:
        config = EngineConfigFactory(name="scripted", model="scripted", engine__base_url=chat.url)
        run = _bench(config, "evalplus", "--suite", "mbpp", "--dataset", "sample", "--limit", "2")
    drawn = _open(browser, run, "quality-chart", 2)
    assert _series(drawn) == {"pass@1 plus so far": 2, "pass@1 base so far": 2}
    assert "Mbpp/2" in _table(browser) and "fail" in _table(browser)
    assert browser.find_element(By.ID, "progress-text").text == "2 / 2 problems"
    assert _severe(browser) == []


def test_it_shows_only_the_chosen_jobs_fields_on_the_config_page(browser):
    config = EngineConfigFactory()
    browser.get(browser.base_url + config.get_absolute_url())
    steps, reps = browser.find_element(By.NAME, "steps"), browser.find_element(By.NAME, "reps")
    assert reps.is_displayed() and not steps.is_displayed()
    Select(browser.find_element(By.NAME, "job")).select_by_value("prefix-cache")
    browser.save_screenshot(str(SHOTS / "chart_start_form.png"))
    assert steps.is_displayed() and not reps.is_displayed()
    assert steps.find_element(By.XPATH, "..").find_element(By.CSS_SELECTOR, "small.help").text == (
        "requests of one growing conversation; each sends everything before it again, plus new text "
        "(1\u2013200, default 30)"
    )


def test_it_shows_j_per_output_token_per_concurrency_level(browser):
    summary = concurrency_summary({1: 40.0, 4: 120.0})
    for level in summary["levels"].values():
        level |= {"short_answers": 0, "requests": level["concurrency"]}
    by_level = {"1": {"j_per_token": 0.9, "j_per_request": 30.0, "tokens": 24, "requests": 1}}
    measured = summary | {"telemetry": telemetry(0.5, 20.0, by_concurrency=by_level)}
    run = RunFactory(job="concurrency", status=Run.Status.SUCCEEDED, summary=measured,
                     params={"levels": [1, 4]}, config=EngineConfigFactory(name="watt-box"))
    _open(browser, run, "concurrency-chart", 2, shot="concurrency_energy")
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#job-summary tbody tr")]
    assert rows[0].endswith("0.900 J")
    assert rows[1].endswith("\u2014")
    unmeasured = RunFactory(job="concurrency", status=Run.Status.SUCCEEDED, params={"levels": [1, 4]},
                            summary=summary | {"telemetry": telemetry()}, config=run.config)
    _open(browser, unmeasured, "concurrency-chart", 2, shot="concurrency_no_energy")
    dash = browser.find_elements(By.CSS_SELECTOR, "#job-summary tbody tr td:last-child span")[0]
    assert dash.get_attribute("title") == "no power reading on this machine"
    assert _severe(browser) == []
