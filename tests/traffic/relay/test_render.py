"""Events written as Ollama lines and OpenAI chunks: the final Ollama line from the engine's figures."""
from __future__ import annotations

import json

import pytest

from engines.clients.base import EngineFigures
from traffic.relay.events import Call, End, Piece
from traffic.relay.render import OllamaWriter, OpenAIWriter, Seen, openai_error

pytestmark = pytest.mark.backend_free

SEEN = Seen(e2e_s=1.5, ttft_s=0.2, generation_s=1.2, pieces=30)
TIMED = EngineFigures(output_tokens=40, prompt_tokens=1200, cached_tokens=1100, prompt_s=0.08, decode_s=0.5)


def sse_bodies(data: bytes) -> list:
    return [json.loads(part.removeprefix(b"data: ")) if part != b"data: [DONE]" else "[DONE]"
            for part in data.split(b"\n\n") if part]


def test_it_writes_the_final_ollama_line_from_the_engines_figures() -> None:
    final = json.loads(OllamaWriter("m", generate=False).end(End("length", TIMED), SEEN))
    assert final["done"] is True and final["done_reason"] == "length"
    assert (final["prompt_eval_count"], final["prompt_eval_duration"]) == (1200, 80_000_000)
    assert (final["eval_count"], final["eval_duration"]) == (40, 500_000_000)
    assert final["total_duration"] == 1_500_000_000  # OpenAI engines give no total: the relay's own
    assert final["load_duration"] == 0


def test_it_falls_back_to_what_the_relay_measured() -> None:
    final = OllamaWriter("m", generate=False).final(End("stop", EngineFigures()), SEEN)
    assert (final["eval_count"], final["eval_duration"]) == (30, 1_200_000_000)
    assert final["prompt_eval_duration"] == 200_000_000


def test_it_writes_ollama_tool_calls_as_objects_and_stop() -> None:
    writer = OllamaWriter("m", generate=False)
    line = json.loads(writer.piece(Piece(tool_calls=[Call("read_file", {"path": "a.py"}, "c1")])))
    assert line["message"]["tool_calls"] == [
        {"id": "c1", "function": {"index": 0, "name": "read_file", "arguments": {"path": "a.py"}}}]
    assert writer.final(End("tool_calls", TIMED), SEEN)["done_reason"] == "stop"


def test_it_writes_ollama_generate_lines_with_response_and_context() -> None:
    writer = OllamaWriter("m", generate=True)
    assert json.loads(writer.piece(Piece(content="Hi", thinking="hm"))) | {"created_at": ""} == {
        "model": "m", "created_at": "", "response": "Hi", "thinking": "hm", "done": False}
    assert writer.final(End("stop", TIMED), SEEN)["context"] == []


def test_it_writes_openai_chunks_role_first_then_deltas_then_usage_and_done() -> None:
    writer = OpenAIWriter("m", completion=False, include_usage=True)
    first = sse_bodies(writer.piece(Piece(content="Hi")))
    second = sse_bodies(writer.piece(Piece(thinking="x")))
    assert first[0]["choices"][0]["delta"] == {"role": "assistant", "content": "Hi"}
    assert second[0]["choices"][0]["delta"] == {"reasoning_content": "x"}
    finish, usage, done = sse_bodies(writer.end(End("stop", TIMED), SEEN))
    assert finish["choices"][0]["finish_reason"] == "stop" and usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240,
                              "prompt_tokens_details": {"cached_tokens": 1100}}
    assert done == "[DONE]" and first[0]["id"] == finish["id"]


def test_it_writes_openai_tool_calls_with_string_arguments() -> None:
    writer = OpenAIWriter("m", completion=False, include_usage=False)
    [chunk] = sse_bodies(writer.piece(Piece(tool_calls=[Call("read_file", {"path": "a.py"})])))
    call = chunk["choices"][0]["delta"]["tool_calls"][0]
    assert call == {"index": 0, "id": "call_0", "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    assert len(sse_bodies(writer.end(End("tool_calls", TIMED), SEEN))) == 2  # no usage: not asked


def test_it_writes_a_whole_completion_and_an_error_event() -> None:
    writer = OpenAIWriter("m", completion=True, include_usage=False)
    whole = writer.final(End("length", TIMED), SEEN, Piece("1 2"))
    assert whole["object"] == "text_completion" and whole["choices"][0]["text"] == "1 2"
    [error] = sse_bodies(OpenAIWriter("m", False, False).error("engine died"))
    assert error == openai_error(502, "engine died") and error["error"]["type"] == "server_error"
