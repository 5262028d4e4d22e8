import json
import statistics

import pytest

from engines.simulator import SimProfile, serve_in_thread
from runs.models import Sample
from tests.factories import EngineConfigFactory
from tests.real_engine import requires_engine
from tests.runs.bench_helpers import bench, real_llama_config

pytestmark = pytest.mark.django_db(transaction=True)

RECORDED = [
    {"messages": [{"role": "user", "content": "Read routes.py lines 1-40."}], "max_tokens": 24},
    {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "List 3 HTTP verbs."},
        ],
        "max_tokens": 16,
    },
    {
        "model": "recorded",
        "messages": [{"role": "user", "content": "Say done."}],
        "options": {"num_predict": 8},
    },
]


def requests_file(tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDED) + "\n")
    return str(path)


def test_it_replays_recorded_requests_on_the_simulator(inprocess, capsys, tmp_path):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        EngineConfigFactory(name="sim", engine__base_url=sim.url, engine__simulator=True)
        run = bench(capsys, "sim", "replay", "--requests", requests_file(tmp_path), "--reps", "2")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    assert summary["requests"] == 3 and summary["reps"] == 2
    assert run["params"]["requests"] == 3  # the bodies stay in the database, not in every message
    assert summary["output_tokens"]["median"] == 24 + 16 + 8
    assert summary["generation_s"]["median"] > 0


def test_it_rejects_a_malformed_replay_file_naming_the_line(inprocess, capsys, tmp_path):
    EngineConfigFactory(name="sim")
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(RECORDED[0]) + "\n{not json\n")
    with pytest.raises(Exception, match="requests: line 2"):
        bench(capsys, "sim", "replay", "--requests", str(path))


def test_it_sweeps_concurrency_on_the_simulator(inprocess, capsys):
    # 4 streams should give 2.5x the total of one; the median of 3 bursts of ~0.3-0.5 s each keeps
    # one stall of a loaded CI box (one burst took 3x as long there) from deciding the test.
    with serve_in_thread(SimProfile(decode_tps=100, ttft_ms=5, batch_cost=0.2)) as sim:
        EngineConfigFactory(name="sim", engine__base_url=sim.url, engine__simulator=True)
        run = bench(capsys, "sim", "concurrency", "--levels", "1,4", "--answer-tokens", "32", "--reps", "3")
    assert run["status"] == "succeeded", run["error"]
    levels = run["summary"]["levels"]
    assert set(levels) == {"1", "4"}
    assert levels["4"]["total_tps"]["median"] > 2 * levels["1"]["total_tps"]["median"]
    assert levels["4"]["finish_s"]["median"] > levels["1"]["finish_s"]["median"]
    # The client's pace reaches the run's client health (its figures: bounds only, the box is busy).
    health = run["summary"]["client_health"]
    assert [level["requested"] for level in health["achieved_concurrency"]] == [1, 4]
    assert 0 < levels["4"]["achieved_concurrency"] <= 4
    assert health["schedule_delay_ms"]["p99"] >= health["schedule_delay_ms"]["p50"] >= 0


@pytest.mark.parametrize(("cache_tokens", "discard"), [(1500, True), (100_000, False)])
def test_it_probes_the_prefix_cache_on_the_simulator(inprocess, capsys, cache_tokens, discard):
    profile = SimProfile(decode_tps=400, ttft_ms=5, prefill_tps=20_000, cache_tokens=cache_tokens)
    with serve_in_thread(profile) as sim:
        EngineConfigFactory(name="sim", engine__base_url=sim.url, engine__simulator=True)
        run = bench(capsys, "sim", "prefix-cache", "--steps", "6", "--bytes-per-step", "1200")
    assert run["status"] == "succeeded", run["error"]
    assert run["summary"]["cache_discard_detected"] is discard
    assert (run["summary"]["fix"] is not None) is discard
    assert run["progress"] == {"done": 8, "total": 8}


@requires_engine
@pytest.mark.timeout(600)
def test_it_runs_replay_and_concurrency_on_the_real_llama_server(inprocess, capsys, tmp_path):
    real_llama_config("real", context_length=8192, parallel=4)
    replay = bench(capsys, "real", "replay", "--requests", requests_file(tmp_path), "--reps", "2")
    assert replay["status"] == "succeeded", replay["error"]
    assert replay["summary"]["requests"] == 3
    sweep = bench(capsys, "real", "concurrency", "--levels", "1,2,4", "--answer-tokens", "32")
    assert sweep["status"] == "succeeded", sweep["error"]
    levels = sweep["summary"]["levels"]
    # Levels run one after another, so a busy box can slow one level and not the next (level 1 once
    # took 5.06 s to level 4's 1.27 s). Within one burst both figures share its interval: the box's
    # total tok/s over the burst, and the engine's own decode tok/s of each answer in it (its
    # timings). Decoded one after another, the total is one answer's speed at most; at once, ~c.
    rows = [s.values for s in Sample.objects.filter(run_id=sweep["id"], kind="request")]
    streams = {
        c: v["total_tps"]["median"]
        / statistics.median(r["decode_tps_engine"] for r in rows if r["concurrency"] == int(c))
        for c, v in levels.items()
    }
    print(
        "\nreal concurrency (total tok/s, finish s, total / one answer's engine tok/s):",
        {
            c: (round(v["total_tps"]["median"], 1), round(v["finish_s"]["median"], 2), round(streams[c], 2))
            for c, v in levels.items()
        },
    )
    assert all(v["output_tokens"]["median"] == 32 for v in levels.values())
    assert streams["4"] > 2


@requires_engine
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("cache_ram_mib", "discard"), [(4, True), (2048, False)])
def test_it_detects_a_cache_discard_on_the_real_llama_server(inprocess, capsys, cache_ram_mib, discard):
    real_llama_config("real", context_length=8192, parallel=1, cache_ram_mib=cache_ram_mib)
    run = bench(
        capsys, "real", "prefix-cache", "--steps", "5", "--bytes-per-step", "1000", "--answer-tokens", "8"
    )
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    cont = summary["continuation"]
    print(
        f"\nreal prefix cache, --cache-ram {cache_ram_mib}: discard {summary['cache_discard_detected']}, "
        f"continuation new {cont['new_tokens']} of {cont['prompt_tokens']} tokens, "
        f"ttft {cont['ttft_s']:.2f} s"
    )
    assert summary["cache_discard_detected"] is discard
    assert any(w["kind"] == "cache-discard" for w in run["warnings"]) is discard
