"""Prometheus text from engines: flat samples, and speculative deltas for llama.cpp and vLLM."""
from __future__ import annotations

import pytest

from engines.clients.base import EngineError
from engines.counters_text import (
    VLLM,
    SpecDelta,
    parse_counters,
    request_delta,
    spec_decode_delta,
    startup_phases,
)

pytestmark = pytest.mark.backend_free


def llamacpp(drafts: float, draft_tokens: float, accepted: float, per_pos: list[int] | None = None) -> str:
    """/metrics as llama-server (server-task.cpp to_metrics) writes it."""
    counters = {
        "prompt_tokens_total": 100,
        "spec_decode_num_draft_tokens_total": draft_tokens,
        "spec_decode_num_accepted_tokens_total": accepted,
        "spec_decode_num_drafts_total": drafts,
    }
    text = "".join(
        f"# HELP llamacpp:{name} Speculative: something\n# TYPE llamacpp:{name} counter\n"
        f"llamacpp:{name} {value}\n"
        for name, value in counters.items()
    )
    text += "# HELP llamacpp:requests_processing x\n# TYPE llamacpp:requests_processing gauge\n"
    text += "llamacpp:requests_processing 0\n"
    if per_pos:
        name = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
        text += f"# HELP {name} Accepted tokens per draft position\n# TYPE {name} counter\n"
        text += "".join(f'{name}{{position="{i}"}} {n}\n' for i, n in enumerate(per_pos))
    return text


def vllm(drafts: int, draft_tokens: int, accepted: int) -> str:
    """/metrics as vLLM's prometheus_client writes it: _total and _created, two engines."""
    text = ""
    for name, value in [
        ("spec_decode_num_drafts", drafts),
        ("spec_decode_num_draft_tokens", draft_tokens),
        ("spec_decode_num_accepted_tokens", accepted),
    ]:
        text += f"# HELP vllm:{name} x\n# TYPE vllm:{name} counter\n"
        for engine, share in (("0", value - value // 2), ("1", value // 2)):
            labels = f'engine="{engine}",model_name="m"'
            text += f"vllm:{name}_total{{{labels}}} {share}.0\n"
            text += f"vllm:{name}_created{{{labels}}} 1.7e+09\n"
    return text


def test_it_flattens_samples_keyed_by_name_and_sorted_labels() -> None:
    samples = parse_counters(llamacpp(10, 40, 25, per_pos=[9, 7]))
    assert samples["llamacpp:spec_decode_num_drafts_total"] == 10.0
    assert samples["llamacpp:requests_processing"] == 0.0
    assert samples['llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"}'] == 7.0
    two = parse_counters('x_total{b="2",a="1"} 3\n')
    assert two == {'x_total{a="1",b="2"}': 3.0}


def test_it_takes_llamacpp_spec_deltas_between_snapshots() -> None:
    delta = spec_decode_delta(llamacpp(10, 40, 25), llamacpp(110, 440, 325))
    assert delta == SpecDelta(drafts=100, draft_tokens=400, accepted=300)
    assert delta.acceptance_rate == 0.75
    assert delta.tokens_per_verification == 4.0


def test_it_accepts_parsed_snapshots_too() -> None:
    before, after = parse_counters(llamacpp(0, 0, 0)), parse_counters(llamacpp(4, 12, 6))
    assert spec_decode_delta(before, after) == SpecDelta(drafts=4, draft_tokens=12, accepted=6)


def test_it_reads_counters_written_in_exponent_form() -> None:
    delta = spec_decode_delta(llamacpp(0, 0, 0), llamacpp("1e+06", "4.5e+06", "2.25e+06"))
    assert delta == SpecDelta(drafts=1_000_000, draft_tokens=4_500_000, accepted=2_250_000)


def test_it_has_no_rates_when_nothing_was_drafted() -> None:
    delta = spec_decode_delta(llamacpp(5, 20, 10), llamacpp(5, 20, 10))
    assert delta == SpecDelta(0, 0, 0)
    assert delta.acceptance_rate is None
    assert delta.tokens_per_verification is None


def test_it_returns_none_when_the_engine_has_no_spec_counters() -> None:
    plain = "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 5\n"
    assert spec_decode_delta(plain, plain) is None


def test_it_counts_from_zero_after_a_counter_reset() -> None:
    delta = spec_decode_delta(llamacpp(500, 2000, 1000), llamacpp(10, 40, 20))
    assert delta == SpecDelta(drafts=10, draft_tokens=40, accepted=20)


def test_it_sums_vllm_counters_over_label_sets() -> None:
    delta = spec_decode_delta(vllm(10, 30, 15), vllm(111, 333, 222), prefix=VLLM)
    assert delta == SpecDelta(drafts=101, draft_tokens=303, accepted=207)
    assert delta.acceptance_rate == pytest.approx(207 / 303)
    assert delta.tokens_per_verification == pytest.approx(1 + 207 / 101)


def test_it_ignores_the_other_engines_prefix() -> None:
    assert spec_decode_delta(vllm(1, 2, 1), vllm(2, 4, 2)) is None


def test_it_rejects_text_that_is_not_prometheus() -> None:
    with pytest.raises(EngineError, match="malformed /metrics"):
        parse_counters("<html>Not Implemented</html>\n")


def test_it_takes_per_position_acceptance_from_the_position_labelled_counter() -> None:
    delta = spec_decode_delta(llamacpp(10, 40, 25, [10, 8, 5, 2]), llamacpp(30, 120, 61, [30, 20, 9, 2]))
    assert delta is not None
    assert delta.accepted_by_position == (20, 12, 4, 0)
    assert delta.acceptance_by_position == [1.0, 0.6, 0.2, 0.0]
    # Position i is counted only when 0..i-1 were accepted too: the rates add up to L - 1.
    assert sum(delta.acceptance_by_position) == pytest.approx(delta.tokens_per_verification - 1)
    assert delta.summary()["acceptance_by_position"] == [1.0, 0.6, 0.2, 0.0]


def test_it_leaves_per_position_acceptance_empty_when_not_exposed() -> None:
    delta = spec_decode_delta(llamacpp(10, 40, 25), llamacpp(30, 120, 61))
    assert delta is not None and delta.accepted_by_position == ()
    assert delta.acceptance_by_position is None and delta.summary()["accepted_by_position"] is None


def vllm_requests(finished: int, generated: int, decode_s: float, ttft_s: float,
                  cached: int | None = 0) -> str:
    """vLLM's request counters and histograms (_sum and _count), one engine."""
    labels = 'engine="0",model_name="m"'
    lines = [f"vllm:generation_tokens_total{{{labels}}} {generated}.0",
             f"vllm:prompt_tokens_total{{{labels}}} {10 * finished}.0",
             f"vllm:e2e_request_latency_seconds_count{{{labels}}} {finished}.0",
             f"vllm:request_decode_time_seconds_sum{{{labels}}} {decode_s}",
             f"vllm:request_prefill_time_seconds_sum{{{labels}}} {ttft_s / 2}",
             f"vllm:time_to_first_token_seconds_sum{{{labels}}} {ttft_s}"]
    if cached is not None:
        lines.append(f"vllm:prompt_tokens_cached_total{{{labels}}} {cached}.0")
    return "\n".join(lines) + "\n"


def test_it_takes_vllms_request_figures_between_snapshots() -> None:
    delta = request_delta(vllm_requests(2, 100, 4.0, 0.4, 0), vllm_requests(3, 164, 7.15, 0.52, 16))
    assert delta is not None
    assert (delta.finished, delta.generated, delta.prompt_tokens, delta.cached_tokens) == (1, 64, 10, 16)
    assert delta.decode_s == pytest.approx(3.15) and delta.ttft_s == pytest.approx(0.12)
    uncounted = request_delta(vllm_requests(0, 0, 0, 0, None), vllm_requests(1, 9, 1, 1, None))
    assert uncounted is not None and uncounted.cached_tokens is None
    assert request_delta(llamacpp(1, 2, 1), llamacpp(2, 4, 2)) is None  # llama.cpp exports no such set


def sglang_startup(**phases: float) -> str:
    """SGLang's start-up gauge as its /metrics writes it, beside a gauge of the same prefix."""
    labels = 'engine_type="unified",model_name="gemma3-270m"'
    lines = ["# TYPE sglang:startup_time_seconds gauge"]
    lines += [f'sglang:startup_time_seconds{{{labels},phase="{p}"}} {s}' for p, s in phases.items()]
    lines.append(f"sglang:startup_available_gpu_memory_gb{{{labels}}} 16.6")
    return "\n".join(lines) + "\n"


def test_it_reads_start_up_seconds_by_phase() -> None:
    text = sglang_startup(load_weight=4.55, kv_cache_allocation=1.22, scheduler_e2e=79.0)
    phases = startup_phases(text, "sglang:startup_time_seconds")
    assert phases == {"load_weight": 4.55, "kv_cache_allocation": 1.22, "scheduler_e2e": 79.0}
    assert startup_phases(llamacpp(1, 2, 1), "sglang:startup_time_seconds") == {}
