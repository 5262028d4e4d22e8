"""`make bench`'s vllm_agreement: its arithmetic on made-up passes, and a clear skip without vLLM."""
from __future__ import annotations

import pytest

from runs.core.jobs.prompts import SPEED_PROMPTS, SYSTEM
from tests.bench import BENCHMARKS, vllm_agreement
from tests.bench.vllm_agreement import OURS, PEER, engine_delta, level_figures
from tests.bench.vllm_peer import per_request, user_message

pytestmark = pytest.mark.backend_free

PREFIX = 'vllm:{name}{{engine="0",model_name="gemma"}}'


def _samples(**values: float) -> dict[str, float]:
    return {PREFIX.format(name=name): value for name, value in values.items()}


def test_it_is_registered_after_the_llama_server_agreement():
    assert BENCHMARKS.index("vllm_agreement") == BENCHMARKS.index("agreement") + 1


def test_the_peers_one_user_message_is_the_system_prompt_at_the_head_of_the_user_turn():
    # Gemma 3's template renders a system message as "SYSTEM\n\n" before the first user turn.
    assert user_message(SPEED_PROMPTS[0]) == f"{SYSTEM}\n\n{SPEED_PROMPTS[0].user}"


def test_the_engines_share_of_a_pass_is_the_counters_change_summed_over_labels():
    before = _samples(e2e_request_latency_seconds_count=2, time_to_first_token_seconds_sum=0.5,
                      generation_tokens_total=100)
    after = _samples(e2e_request_latency_seconds_count=5, time_to_first_token_seconds_sum=0.8,
                     generation_tokens_total=400, inter_token_latency_seconds_count=297)
    delta = engine_delta(before, after)
    assert delta["requests"] == 3 and delta["generated"] == 300 and delta["itls"] == 297
    assert delta["ttft_s"] == pytest.approx(0.3)


def test_vllms_per_request_figures_follow_its_definitions():
    result = {"ttfts": [0.1], "latencies": [1.1], "output_lens": [11], "itls": [[1e-5] + [0.1] * 10],
              "start_times": [5.0]}
    (row,) = per_request(result)
    assert row["tpot_s"] == pytest.approx(0.1) and row["e2e_s"] == 1.1 and len(row["itls"]) == 11


def _pass(side: str, ttft: float, tpot: float, engine_ttft: float) -> dict:
    rows = [{"ttft_s": ttft, "tpot_s": tpot, "itls": [tpot] * 9, "e2e_s": ttft + 9 * tpot,
             "output_tokens": 10} for _ in range(3)]
    engine = {"requests": 3, "e2e_s": 3 * (engine_ttft + 0.9), "ttft_s": 3 * engine_ttft, "ttfts": 3,
              "itl_s": 2.7, "itls": 27, "decode_s": 2.7, "prefill_s": 0.3, "generated": 30,
              "prompt_tokens": 120}
    return {"side": side, "rows": rows, "tokens": 30, "span_s": 3 * (ttft + 9 * tpot),
            "prompt_tokens": 120, "engine": engine}


def test_each_figure_is_ours_against_the_peers_with_the_goal_and_what_each_harness_adds():
    passes = [_pass(OURS, 0.101, 0.103, 0.099), _pass(PEER, 0.1, 0.1, 0.1)]
    figures = {f["name"]: f for f in level_figures(4, passes)}
    ttft = figures[f"TTFT median, c=4: {OURS} vs {PEER}"]
    assert ttft["ratio"] == pytest.approx(1.01) and ttft["met"] is True and ttft["goal"] == "within 2%"
    tpot = figures[f"TPOT median, c=4: {OURS} vs {PEER}"]
    assert tpot["ratio"] == pytest.approx(1.03) and tpot["met"] is False
    assert figures[f"output tok/s, c=4: {OURS} vs {PEER}"]["value"] == pytest.approx(30 / (3 * 1.028))
    assert figures[f"prompt tokens per request, c=4: {OURS} vs {PEER}"]["met"] is True
    added = figures["TTFT mean minus engine TTFT, c=4"]
    assert added["value"] == pytest.approx(2.0) and added["reference"] == pytest.approx(0.0, abs=1e-9)
    assert figures["engine TTFT mean, our requests vs the peer's, c=4"]["ratio"] == pytest.approx(0.99)
    # 101 ms over the engine's 99 against 100 over 100: 2 % apart once the engine's own time is out
    over = figures[f"TTFT mean over the engine's, c=4: {OURS} vs {PEER}"]
    assert over["value"] == pytest.approx(101 / 99) and over["reference"] == pytest.approx(1.0)
    assert over["met"] is False


def test_without_vllm_every_figure_says_why_it_was_not_measured(monkeypatch):
    monkeypatch.setattr(vllm_agreement, "vllm_missing", lambda: "no vLLM here")
    figures = vllm_agreement.run(short=True)["figures"]
    assert len(figures) == 8 and all(f["value"] is None for f in figures)
    assert all(f["note"] == "not measured: no vLLM here" and f["goal"] == "within 2%" for f in figures)
