"""One request's record: conversation keys, measured times, body capture and its cap."""
from __future__ import annotations

import time

import pytest

from engines.clients.base import EngineFigures
from traffic.relay.events import Call, End, Piece
from traffic.relay.meter import Meter, conversation_key
from traffic.relay.upstream import Upstream

pytestmark = pytest.mark.backend_free

UP = Upstream("http://127.0.0.1:1", "openai")


def test_it_gives_the_steps_of_one_conversation_one_key() -> None:
    first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read a.py"}]
    later = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "And b.py"}]
    other = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read c.py"}]
    assert conversation_key("m", {"messages": first}) == conversation_key("m", {"messages": later})
    assert conversation_key("m", {"messages": first}) != conversation_key("m", {"messages": other})
    assert conversation_key("m", {"messages": first}) != conversation_key("n", {"messages": first})
    assert len(conversation_key("m", {"prompt": "hi"})) == 16


def test_it_measures_ttft_generation_and_client_speed() -> None:
    meter = Meter("ollama", "/api/chat", "test", UP)
    meter.request({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    time.sleep(0.05)
    for _ in range(5):
        meter.sent(Piece(content="word "))
        time.sleep(0.02)
    figures = EngineFigures(output_tokens=9, prompt_tokens=50, cached_tokens=40, decode_tps=99.0)
    meter.ended(End("stop", figures))
    meter.done()
    record = meter.record()
    assert record.ttft_s is not None and 0.05 <= record.ttft_s < 0.2
    assert record.generation_s is not None and 0.07 <= record.generation_s < 0.3
    assert record.e2e_s is not None and record.e2e_s >= record.ttft_s + record.generation_s
    assert record.output_tokens == 9 and record.decode_tps_client == 8 / record.generation_s
    assert (record.prompt_tokens, record.new_prompt_tokens, record.decode_tps_engine) == (50, 10, 99.0)
    assert (record.model, record.turn, record.output_type) == ("m", 1, "prose-en")


def test_it_counts_pieces_when_the_engine_gives_no_count() -> None:
    meter = Meter("openai", "/v1/chat/completions", "test", UP)
    for _ in range(3):
        meter.sent(Piece(content="x"))
    assert meter.record().output_tokens == 3


def test_it_notes_tool_calls_with_their_path() -> None:
    meter = Meter("ollama", "/api/chat", "test", UP)
    meter.sent(Piece(tool_calls=[Call("read_file", {"file_path": "a.py"}), Call("search", {"pattern": "x"})]))
    record = meter.record()
    assert [(c.name, c.path) for c in record.tool_calls] == [("read_file", "a.py"), ("search", "")]
    assert record.output_type == "tool-call"


def test_it_caps_captured_bodies_on_a_character_boundary() -> None:
    up = Upstream("http://x", "ollama", capture_bodies=True, body_cap_bytes=40)
    meter = Meter("ollama", "/api/chat", "test", up)
    meter.request({"model": "m", "messages": [{"role": "user", "content": "日本語" * 20}]})
    meter.sent(Piece(content="答え" * 30))
    record = meter.record()
    assert record.request_body is not None and record.request_body["truncated"] is True
    assert len(record.request_body["text"].encode()) <= 40
    assert record.response_text is not None and record.response_text.startswith("答え")
    assert record.response_text.endswith("[truncated by the relay]")


def test_it_leaves_new_prompt_tokens_unknown_when_the_engine_tells_no_cache() -> None:
    meter = Meter("ollama", "/api/chat", "test", UP)
    meter.ended(End("stop", EngineFigures(output_tokens=3, prompt_tokens=50)))  # Ollama's final line
    record = meter.record()
    assert (record.prompt_tokens, record.new_prompt_tokens) == (50, None)
