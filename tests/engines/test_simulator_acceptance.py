"""The simulator's acceptance by output type: per-position decay, the lookahead trade-off, its log line."""
from __future__ import annotations

import httpx
import pytest

from engines.logparse import parse_line
from engines.simulator import OUTPUT_TYPES, SimProfile, output_type, plan, serve_in_thread
from runs.core.jobs.prompts import SPEED_PROMPTS, SYSTEM

pytestmark = pytest.mark.backend_free

LENGTHS = (0, 2, 4, 8, 12)
STRUCTURED = ("tool-call", "table")


def sweep(kind: str, n_tokens: int = 64) -> dict[int, tuple[float, float | None]]:
    """length -> (decode tok/s, acceptance) of one reply of this output type at each length."""
    found = {}
    for length in LENGTHS:
        sched = plan(SimProfile(decode_tps=40, lookahead=length), n_tokens, seed=0, output_type=kind)
        acceptance = sched.accepted_tokens / sched.draft_tokens if sched.draft_tokens else None
        assert sched.decode_tps is not None
        found[length] = (sched.decode_tps, acceptance)
    return found


@pytest.mark.parametrize("prompt", SPEED_PROMPTS, ids=lambda p: p.name)
def test_it_reads_each_speed_prompt_as_the_output_type_it_asks_for(prompt) -> None:
    assert output_type(f"{SYSTEM}\n{prompt.user}") == prompt.output_type


@pytest.mark.parametrize("kind", OUTPUT_TYPES)
def test_it_accepts_less_of_each_draft_as_the_lookahead_grows(kind: str) -> None:
    rates = [acceptance for _, acceptance in sweep(kind).values()][1:]
    assert rates == sorted(rates, reverse=True)
    assert rates[0] > rates[-1]


def test_it_accepts_structured_output_far_more_than_english_prose_and_japanese_prose_almost_never() -> None:
    at_four = {kind: sweep(kind)[4][1] for kind in OUTPUT_TYPES}
    assert min(at_four["tool-call"], at_four["table"]) > 0.6
    assert 0.15 < at_four["prose-en"] < 0.4
    assert at_four["prose-ja"] < 0.05


@pytest.mark.parametrize("kind", STRUCTURED)
@pytest.mark.parametrize("n_tokens", [32, 64])
def test_it_decodes_structured_output_fastest_at_a_middle_lookahead_and_slowest_without(kind, n_tokens):
    speed = {length: tps for length, (tps, _) in sweep(kind, n_tokens).items()}
    assert max(speed, key=lambda length: speed[length]) == 8
    assert min(speed, key=lambda length: speed[length]) == 0
    assert speed[8] > 3 * speed[0]


def test_it_keeps_japanese_prose_within_a_few_percent_of_no_drafting_at_every_length() -> None:
    speed = {length: tps for length, (tps, _) in sweep("prose-ja").items()}
    assert all(abs(tps / speed[0] - 1) < 0.1 for tps in speed.values())
    assert speed[12] == pytest.approx(speed[0], rel=0.05)


def test_it_pins_one_rate_for_every_output_type_and_position_when_acceptance_is_set() -> None:
    profile = SimProfile(lookahead=4, acceptance=0.5)
    assert {kind: tuple(profile.position_rates(kind)) for kind in OUTPUT_TYPES} == dict.fromkeys(
        OUTPUT_TYPES, (0.5, 0.5, 0.5, 0.5)
    )
    assert SimProfile(lookahead=3, acceptance_decay=0.5).position_rates("table") == pytest.approx(
        [0.92, 0.46, 0.23]
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"acceptance_by_type": {"tool-call": 0.9}},
        {"acceptance_by_type": {"tool-call": 1.2, "table": 0.9, "prose-en": 0.5, "prose-ja": 0.1}},
        {"acceptance_decay": 0.0},
        {"efficiency": 1.5},
    ],
)
def test_it_refuses_an_impossible_acceptance_profile(fields) -> None:
    with pytest.raises(ValueError, match=next(iter(fields))):
        SimProfile(**fields)


def test_it_refuses_an_unknown_output_type() -> None:
    with pytest.raises(ValueError, match="output_type"):
        plan(SimProfile(lookahead=2), 10, output_type="poetry")


def test_it_decodes_at_its_efficiency_share_of_the_bandwidth_ceiling() -> None:
    profile = SimProfile(bandwidth_gbps=273, model_gb=28.6, efficiency=0.83)
    assert profile.decode_tps == pytest.approx(7.92, abs=0.01)


def test_it_logs_llama_servers_acceptance_line_per_drafted_request_to_its_log_file(tmp_path) -> None:
    log = tmp_path / "logs" / "sim.log"
    profile = SimProfile(decode_tps=1000, ttft_ms=1, lookahead=4)
    body = {"model": "sim", "stream": False, "options": {"num_predict": 40}}
    with serve_in_thread(profile, log_file=str(log)) as sim:
        for prompt in ("Answer with a markdown table.", "日本語の文章で説明してください。"):
            messages = [{"role": "user", "content": prompt}]
            reply = httpx.post(f"{sim.url}/api/chat", json=body | {"messages": messages}, timeout=10)
            reply.raise_for_status()
    events = [parse_line(line) for line in log.read_text().splitlines()]
    assert [event.event for event in events if event] == ["acceptance", "acceptance"]
    table, japanese = (event for event in events if event)
    assert table.generated and japanese.generated
    assert table.rate is not None and japanese.rate is not None and table.rate > 5 * japanese.rate
