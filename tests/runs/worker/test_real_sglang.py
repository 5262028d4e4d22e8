"""SparkDash's jobs against a real SGLang (its CPU build), each request's own meta_info the reference.

Most tests share one SGLang started from the recipe (NGRAM drafting, lookahead 3, radix cache on);
the lookahead sweep and the start failure launch their own managed engine. The engine kill comes
after the shared tests that need it alive (a later test would start it again).
"""
import itertools
import statistics
import tempfile
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from engines.lifecycle import port_is_free
from engines.models import Engine, EngineSession
from runs.models import Run
from tests.factories import EngineConfigFactory
from tests.real_engine import SGLANG, free_port, requires_sglang
from tests.real_sglang import sglang_settings, shared_sglang
from tests.runs.bench_helpers import bench
from tests.runs.worker.real_runs import kill_mid_run, request_rows, run_to_end

pytestmark = [
    pytest.mark.engines, requires_sglang, pytest.mark.django_db(transaction=True), pytest.mark.timeout(900),
]


@pytest.fixture(scope="module")
def sglang(tmp_path_factory):
    server = shared_sglang(tmp_path_factory.mktemp("sglang") / "sglang.log")
    yield server
    server.stop()


def test_it_matches_sglangs_own_figures_and_reads_ngram_acceptance_per_request_in_a_speed_run(sglang):
    run = run_to_end(sglang.config("sglang-ngram"), params={"reps": 1, "warmup": 0, "max_tokens": 64})
    assert run.status == Run.Status.SUCCEEDED, run.error
    rows = request_rows(run)
    client = statistics.median(r["decode_tps_client"] for r in rows)
    engine = statistics.median(r["decode_tps_engine"] for r in rows)
    ttft = run.summary["ttft_check"]
    print(f"\nSGLang speed: client {client:.2f} tok/s, engine {engine:.2f} tok/s (meta_info), ttft "
          f"client {ttft['client_s']:.3f} s / engine {ttft['engine_s']:.3f} s, "
          f"startup {sglang.startup_s:.0f} s")
    # Both clocks time the same tokens: the first to the last (SGLang's (n - 1) / decode time).
    assert client == pytest.approx(engine, rel=0.02)
    assert run.summary["cross_check"]["agree"]
    # meta_info's first_token_latency starts when the request reaches SGLang; the client's earlier.
    assert 0 < ttft["engine_s"] <= ttft["client_s"]
    assert run.provenance["engine_version"] == "0.5.23"
    assert all(r["output_tokens"] == 64 or r["finish_reason"] == "stop" for r in rows)
    _assert_per_request_acceptance(run, rows)


def _assert_per_request_acceptance(run, rows):
    drafted = [r for r in rows if r["verifications"]]
    assert drafted, "NGRAM drafted on none of the speed prompts"
    for row in drafted:
        # SGLang proposes lookahead tokens at every verification; positions fall (verification stops
        # at the first rejected token) and add up to the accepted tokens.
        assert row["draft_tokens"] == 3 * row["verifications"]
        positions = row["accepted_by_position"]
        assert len(positions) == 3 and all(a >= b for a, b in itertools.pairwise(positions))
        assert sum(positions) == row["accepted_tokens"]
        per_verification = 1 + row["accepted_tokens"] / row["verifications"]
        assert row["tokens_per_verification"] == pytest.approx(per_verification)
    by_position = run.summary["acceptance_by_position"]
    by_type = {t: v["acceptance_by_position"] for t, v in run.summary["by_output_type"].items()}
    print(f"SGLang NGRAM 3: acceptance {statistics.median(r['acceptance_rate'] for r in drafted):.3f}, "
          f"by position {[round(p, 3) for p in by_position]}, per type "
          f"{ {t: p and [round(x, 2) for x in p] for t, p in by_type.items()} }")
    verifications = sum(r["verifications"] for r in drafted)
    accepted = sum(r["accepted_tokens"] for r in drafted)
    assert sum(by_position) == pytest.approx(accepted / verifications)


def test_it_probes_sglangs_radix_cache_with_its_cached_tokens(sglang, inprocess, capsys):
    sglang.config("sglang-cache")
    run = bench(capsys, "sglang-cache", "prefix-cache", "--steps", "4", "--bytes-per-step", "600",
                "--answer-tokens", "8")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    last = summary["last_grow"]
    print(f"\nSGLang prefix cache: last step {last['cached_tokens']} of {last['prompt_tokens']} cached, "
          f"continuation new {summary['continuation']['new_tokens']}")
    assert summary["detected_by"] == "cached_tokens"
    assert summary["cache_discard_detected"] is False
    assert last["new_share"] < 0.5


def test_it_sweeps_concurrency_and_sizes_a_needle_on_sglang(sglang, inprocess, capsys):
    sglang.config("sglang-load")
    sweep = bench(capsys, "sglang-load", "concurrency", "--levels", "1,2,4", "--answer-tokens", "24")
    assert sweep["status"] == "succeeded", sweep["error"]
    levels = sweep["summary"]["levels"]
    assert all(v["output_tokens"]["median"] == 24 for v in levels.values())  # ignore_eos honoured
    needle = bench(capsys, "sglang-load", "needle", "--lengths", "1024", "--depths", "0.5",
                   "--answer-tokens", "16")
    assert needle["status"] == "succeeded", needle["error"]
    totals = {c: round(v["total_tps"]["median"], 1) for c, v in levels.items()}
    print(f"\nSGLang concurrency tok/s {totals}, needle error {needle['summary']['length_error_max']:.4f}")
    assert needle["summary"]["length_error_max"] <= 0.02  # sized with SGLang's /tokenize


def test_it_runs_mmlu_pro_and_evalplus_on_sglang(sglang, inprocess, capsys):
    sglang.config("sglang-quality")
    mmlu = bench(capsys, "sglang-quality", "mmlu-pro", "--dataset", "sample", "--limit", "2",
                 "--num-fewshot", "0", "--max-tokens", "32")
    assert mmlu["status"] == "succeeded", mmlu["error"]
    assert mmlu["summary"]["total"] == 2
    plus = bench(capsys, "sglang-quality", "evalplus", "--suite", "humaneval", "--dataset", "sample",
                 "--limit", "1", "--max-tokens", "48")
    assert plus["status"] == "succeeded", plus["error"]
    assert plus["summary"]["total"] == 1


def test_it_fails_a_run_clearly_when_the_prompt_is_over_sglangs_context(sglang, inprocess, capsys):
    sglang.config("sglang-small")
    with pytest.raises(CommandError, match=r"over the engine's context length of 4096"):
        bench(capsys, "sglang-small", "needle", "--lengths", "6000", "--depths", "0.5",
              "--answer-tokens", "8")
    run = Run.objects.get(config__name="sglang-small")
    assert run.status == Run.Status.FAILED and run.finished is not None


def test_it_fails_a_run_within_5_s_keeping_its_samples_when_sglang_is_killed(sglang):
    run, after_s = kill_mid_run(sglang.config("sglang-doomed"), sglang.kill)
    print(f"\nSGLang killed: run {run.status} after {after_s:.1f} s: {run.error}")
    assert run.status == Run.Status.FAILED
    assert run.finished is not None and after_s < 5
    assert "request" in run.error and f"127.0.0.1:{sglang.port}" in run.error
    assert run.samples.filter(kind="request").count() >= 1


def managed_sglang(**fields):
    engine = {
        "engine__kind": "sglang", "engine__launch": Engine.Launch.MANAGED, "engine__binary": str(SGLANG),
        "engine__base_url": f"http://127.0.0.1:{free_port()}",
    }  # fmt: skip
    return EngineConfigFactory(**engine, **sglang_settings(**fields))


def test_it_fails_a_run_naming_the_flag_when_sglang_dies_at_start(sglang, monkeypatch):
    sglang.stop()  # one engine per machine
    # Outside the allowlist: only this machine's own setting lets it reach SGLang's command line.
    monkeypatch.setenv("SPARKDASH_ALLOW_FLAGS", "sglang:--no-such-flag")
    config = managed_sglang(extra_flags=sglang_settings()["extra_flags"] + " --no-such-flag 1")
    run = run_to_end(config, {"reps": 1, "warmup": 0, "max_tokens": 8})
    print(f"\nSGLang with a bad flag: {run.status}: {run.error[:300]}")
    assert run.status == Run.Status.FAILED
    assert "exited" in run.error and "unrecognized arguments: --no-such-flag" in run.error


def test_it_sweeps_lookahead_on_sglang_by_relaunch_with_per_position_acceptance(sglang, live_server, alice):
    sglang.stop()  # one engine per machine: the sweep starts its own at each length
    config = managed_sglang(speculative_method="NGRAM", lookahead=3)
    # Short and long, one relaunch between them: each start of SGLang on the CPU takes 1.5-2.5 min of
    # CI's budget. (Drafting off is the recipe's plain render, tested in tests/engines/test_recipes.py.)
    params = {"lengths": [2, 8], "reps": 1, "warmup": 0, "max_tokens": 32}
    run = run_to_end(config, params, job="lookahead")
    assert run.status == Run.Status.SUCCEEDED, run.error
    lengths = run.summary["lengths"]
    shown = {k: (round(v["all"]["decode_tps_client"]["median"], 1), v["all"]["acceptance_rate"] and
                 round(v["all"]["acceptance_rate"]["pooled"], 3), v["all"]["acceptance_by_position"])
             for k, v in lengths.items()}  # fmt: skip
    print("\nSGLang lookahead sweep (tok/s, acceptance, by position):", shown)
    rates = [lengths[k]["all"]["acceptance_rate"]["pooled"] for k in ("2", "8")]
    per_verification = [lengths[k]["all"]["tokens_per_verification"]["pooled"] for k in ("2", "8")]
    assert rates[0] >= rates[1]  # a longer draft is accepted no more often...
    assert per_verification[1] > per_verification[0]  # ...and still advances more per verification
    assert [len(lengths[k]["all"]["acceptance_by_position"]) for k in ("2", "8")] == [2, 8]
    by_type = {t: f["acceptance_by_position"] for t, f in lengths["2"].items() if t != "all"}
    print("per output type at lookahead 2:", {t: p and [round(x, 2) for x in p] for t, p in by_type.items()})
    assert {"tool-call", "table", "prose-en"} <= set(by_type) and all(by_type.values())
    sessions = EngineSession.objects.filter(run_id=run.pk)
    assert sessions.count() == 2 and all(s.stopped and s.startup_s for s in sessions)
    assert port_is_free("127.0.0.1", int(config.engine.base_url.rsplit(":", 1)[1]))
    phases = [s["engine_phases"] for s in run.summary["engine_startups"]]
    print("SGLang's own start-up phases (s):", phases)
    assert all(p and p["load_weight"] > 0 for p in phases), "startup_time_seconds{phase} not recorded"
    drawn = _sweep_page(live_server.url, alice, run)
    print("run page's position chart:", drawn)
    assert drawn["labels"] == [str(i) for i in range(1, 9)]
    assert [d[0] for d in drawn["datasets"]] == ["lookahead 2", "lookahead 8"]


SHOT = Path(tempfile.gettempdir()) / "sglang_lookahead_sweep.png"
# Once the sweep's own chart has its lengths from the samples too (the screenshot shows both).
POSITIONS_JS = """
const chart = Chart.getChart(document.getElementById("positions-chart"));
const sweep = document.getElementById("lookahead-chart");
return chart && Number(sweep.dataset.points) === 2 && {labels: chart.data.labels.map(String),
    datasets: chart.data.datasets.map((d) => [d.label, d.data])};
"""


def _sweep_page(url, user, run):
    """The finished sweep's run page in headless Chromium (screenshot at SHOT): its position chart."""
    pytest.importorskip("selenium")
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium

    if not HAVE_CHROMIUM:
        pytest.skip(NEEDS_CHROMIUM)
    with logged_in_chromium(url, user, height=3000) as driver:
        driver.get(driver.base_url + run.get_absolute_url())
        try:
            return WebDriverWait(driver, 30).until(lambda d: d.execute_script(POSITIONS_JS))
        finally:
            driver.save_screenshot(str(SHOT))
            print(f"screenshot: {SHOT}")
