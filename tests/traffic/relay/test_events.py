"""Engine answers read into events, from recorded chunks in the documented formats (ENGINES.md)."""
from __future__ import annotations

import pytest

from traffic.relay.events import Call, End, OllamaReader, OpenAIReader, Piece
from traffic.relay.upstream import StreamError

pytestmark = pytest.mark.backend_free

# llama-server's last chunk with include_usage: choices [], usage, and timings (milliseconds).
LLAMA_LAST = {
    "choices": [],
    "usage": {"completion_tokens": 40, "prompt_tokens": 1200, "total_tokens": 1240,
              "prompt_tokens_details": {"cached_tokens": 1100}},
    "timings": {"cache_n": 1100, "prompt_n": 100, "prompt_ms": 80.0, "predicted_n": 40, "predicted_ms": 500.0,
                "predicted_per_second": 80.0, "draft_n": 30, "draft_n_accepted": 21},
}


def test_it_reads_openai_content_and_reasoning_deltas() -> None:
    reader = OpenAIReader()
    thinking = {"choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]}
    assert reader.chunk(thinking) == [Piece(thinking="hmm")]
    assert reader.chunk({"choices": [{"index": 0, "delta": {"reasoning": "so"}}]}) == [Piece(thinking="so")]
    assert reader.chunk({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}) == [Piece(content="Hi")]
    assert reader.chunk({"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]}) == []


def test_it_takes_the_engines_figures_from_usage_and_timings() -> None:
    reader = OpenAIReader()
    reader.chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    reader.chunk(LLAMA_LAST)
    [end] = reader.done()
    assert isinstance(end, End) and end.finish_reason == "length"
    figures = end.figures
    assert (figures.output_tokens, figures.prompt_tokens, figures.cached_tokens) == (40, 1200, 1100)
    assert (figures.prompt_s, figures.decode_s, figures.decode_tps) == (0.08, 0.5, 80.0)
    assert (figures.draft_tokens, figures.accepted_tokens) == (30, 21)


def test_it_joins_two_streamed_tool_calls() -> None:
    reader = OpenAIReader()
    deltas = [
        [{"index": 0, "id": "a", "function": {"name": "read_file", "arguments": '{"pa'}}],
        [{"index": 1, "id": "b", "function": {"name": "search", "arguments": '{"pattern": "x"}'}}],
        [{"index": 0, "function": {"arguments": 'th": "x.py"}'}}],
    ]
    for tool_calls in deltas:
        assert reader.chunk({"choices": [{"index": 0, "delta": {"tool_calls": tool_calls}}]}) == []
    [piece] = reader.chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert isinstance(piece, Piece)
    assert piece.tool_calls == [
        Call("read_file", {"path": "x.py"}, "a"), Call("search", {"pattern": "x"}, "b")]
    [end] = reader.done()
    assert isinstance(end, End) and end.finish_reason == "tool_calls"


def test_it_calls_a_stream_without_a_finish_reason_broken() -> None:
    reader = OpenAIReader()
    reader.chunk({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    with pytest.raises(StreamError, match="without a finish reason"):
        reader.done()


def test_it_raises_an_engine_error_reported_inside_the_stream() -> None:
    with pytest.raises(StreamError, match="out of memory"):
        OpenAIReader().chunk({"error": {"message": "out of memory", "code": 500}})
    with pytest.raises(StreamError, match="bad request"):
        OpenAIReader().chunk({"object": "error", "message": "bad request"})  # vLLM's shape
    with pytest.raises(StreamError, match="runner stopped"):
        OllamaReader().line({"error": "runner stopped"})


def test_it_reads_a_whole_openai_answer_with_a_tool_call() -> None:
    answer = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "reasoning_content": "look first",
        "tool_calls": [{"id": "c", "type": "function",
                        "function": {"name": "f", "arguments": '{"file": "b"}'}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3}}
    piece, end = OpenAIReader().whole(answer)
    assert piece == Piece(thinking="look first", tool_calls=[Call("f", {"file": "b"}, "c")])
    assert isinstance(end, End) and end.finish_reason == "tool_calls" and end.figures.output_tokens == 3


def test_it_reads_ollama_thinking_tool_calls_and_its_final_figures() -> None:
    reader = OllamaReader()
    thinking = {"message": {"role": "assistant", "content": "", "thinking": "hmm"}, "done": False}
    assert reader.line(thinking) == [Piece(thinking="hmm")]
    calls = reader.line({"message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"index": 0, "name": "read_file", "arguments": {"path": "a.py"}}}]}, "done": False})
    assert calls == [Piece(tool_calls=[Call("read_file", {"path": "a.py"})])]
    [end] = reader.line({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
                         "total_duration": 2_000_000_000, "load_duration": 1_000_000, "prompt_eval_count": 26,
                         "prompt_eval_duration": 130_000_000, "eval_count": 10, "eval_duration": 250_000_000})
    assert isinstance(end, End) and end.finish_reason == "tool_calls"  # Ollama said "stop"
    assert (end.total_s, end.load_s) == (2.0, 0.001)
    assert (end.figures.prompt_tokens, end.figures.output_tokens, end.figures.decode_s) == (26, 10, 0.25)


def test_it_reads_ollama_generate_lines() -> None:
    assert OllamaReader().line({"response": "Hi", "done": False}) == [Piece(content="Hi")]
    with pytest.raises(StreamError, match="no done:true"):
        OllamaReader().whole({"response": "Hi", "done": False})


def test_it_refuses_tool_arguments_that_are_no_object() -> None:
    reader = OpenAIReader()
    reader.chunk({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {
        "name": "f", "arguments": "[1, 2]"}}]}}]})
    with pytest.raises(StreamError, match="not a JSON object"):
        reader.chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
