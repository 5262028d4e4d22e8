"""One relayed exchange: streamed tool-call deltas joined, and every fault in the client's own shape."""
from __future__ import annotations

import json
import time

import httpx
import pytest

from engines.simulator import SimProfile, serve_in_thread
from tests.real_engine import free_port
from tests.traffic.relay.scripted import Scripted, engine, ndjson, relay_to, sse
from traffic.relay import Upstream

pytestmark = pytest.mark.backend_free

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
# An OpenAI engine streaming one tool call as fragments of its arguments (the documented shape).
TOOL_DELTAS = sse(
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]},
    {"choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
        {"index": 0, "id": "call_7", "type": "function",
         "function": {"name": "read_file", "arguments": ""}}]}}]},
    {"choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": '{"path": "ser'}}]}}]},
    {"choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": 'ver.py"}'}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
     "timings": {"cache_n": 20, "prompt_n": 10, "prompt_ms": 12.5, "predicted_n": 9, "predicted_ms": 80.0,
                 "predicted_per_second": 112.5, "draft_n": 8, "draft_n_accepted": 6}},
)


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens there now


def lines_of(response: httpx.Response) -> list[dict]:
    return [json.loads(line) for line in response.iter_lines() if line]


def data_of(response: httpx.Response) -> list:
    out = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            payload = line.removeprefix("data: ")
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def test_it_joins_streamed_tool_call_deltas_into_one_ollama_call() -> None:
    deltas = Scripted(TOOL_DELTAS, "text/event-stream")
    with engine(deltas) as url, relay_to(Upstream(url, "openai")) as relay:
        with httpx.stream("POST", f"{relay.url}/api/chat", json=CHAT, timeout=10) as response:
            lines = lines_of(response)
        record = relay.record()
    calls = [line["message"]["tool_calls"] for line in lines if "tool_calls" in line["message"]]
    assert calls == [[{"id": "call_7", "function": {"index": 0, "name": "read_file",
                                                    "arguments": {"path": "server.py"}}}]]
    final = lines[-1]
    assert final["done"] is True and final["done_reason"] == "stop"
    assert (final["prompt_eval_count"], final["eval_count"]) == (30, 9)
    assert (final["prompt_eval_duration"], final["eval_duration"]) == (12_500_000, 80_000_000)
    assert record.output_type == "tool-call" and record.finish_reason == "tool_calls"
    assert record.tool_calls[0].path == "server.py"
    assert (record.prompt_tokens, record.new_prompt_tokens) == (30, 10)
    assert (record.draft_tokens, record.accepted_tokens) == (8, 6)


def test_it_streams_an_ollama_tool_call_as_an_openai_delta() -> None:
    answer = ndjson(
        {"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "read_file", "arguments": {"path": "a.py"}}}]}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
         "prompt_eval_count": 12, "eval_count": 7, "eval_duration": 70_000_000},
    )
    with engine(Scripted(answer, "application/x-ndjson")) as url, relay_to(Upstream(url, "ollama")) as relay:
        body = CHAT | {"stream": True, "stream_options": {"include_usage": True}}
        with httpx.stream("POST", f"{relay.url}/v1/chat/completions", json=body, timeout=10) as response:
            events = data_of(response)
    call = events[0]["choices"][0]["delta"]["tool_calls"][0]
    assert call["function"] == {"name": "read_file", "arguments": json.dumps({"path": "a.py"})}
    assert events[1]["choices"][0]["finish_reason"] == "tool_calls"
    assert events[2]["usage"]["completion_tokens"] == 7 and events[-1] == "[DONE]"


@pytest.mark.parametrize(("api", "path"), [("ollama", "/api/chat"), ("openai", "/v1/chat/completions")])
def test_it_answers_a_dead_engine_in_the_clients_shape(api: str, path: str) -> None:
    with relay_to(Upstream(dead_url(), api)) as relay:
        response = httpx.post(f"{relay.url}{path}", json=CHAT | {"stream": True}, timeout=10)
        record = relay.record()
    assert response.status_code == 502
    error = response.json()["error"]
    if path == "/api/chat":
        assert isinstance(error, str) and "cannot reach the engine" in error
    else:
        assert error["code"] == 502 and error["type"] == "server_error" and "cannot reach" in error["message"]
    assert record.status == 502 and "cannot reach the engine" in record.error
    assert record.output_type == "" and record.ttft_s is None


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_it_passes_an_engines_http_error_on_with_its_status(api: str) -> None:
    with serve_in_thread(SimProfile(fault="http-500")) as sim, relay_to(Upstream(sim.url, api)) as relay:
        ollama = httpx.post(f"{relay.url}/api/chat", json=CHAT, timeout=10)
        openai = httpx.post(f"{relay.url}/v1/chat/completions", json=CHAT, timeout=10)
        records = [relay.record(), relay.record()]
    assert ollama.status_code == openai.status_code == 500
    assert "simulated engine failure" in ollama.json()["error"]
    assert "simulated engine failure" in openai.json()["error"]["message"]
    assert all(r.status == 500 and "HTTP 500" in r.error for r in records)


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_it_ends_a_stream_cleanly_on_a_malformed_engine_chunk(api: str) -> None:
    profile = SimProfile(decode_tps=200, ttft_ms=5, fault="malformed", fault_after=3)
    with serve_in_thread(profile) as sim, relay_to(Upstream(sim.url, api)) as relay:
        with httpx.stream("POST", f"{relay.url}/api/chat", json=CHAT, timeout=10) as response:
            lines = lines_of(response)
        record = relay.record()
        with httpx.stream("POST", f"{relay.url}/v1/chat/completions", json=CHAT | {"stream": True},
                          timeout=10) as response:
            events = data_of(response)
        openai_record = relay.record()
    assert "malformed engine chunk" in lines[-1]["error"]
    assert all(not line.get("done") for line in lines)
    assert "malformed engine chunk" in events[-1]["error"]["message"] and "[DONE]" not in events
    assert "malformed engine chunk" in record.error and "malformed engine chunk" in openai_record.error
    assert record.status == 200 and record.ttft_s is not None  # the client had pieces before it broke


def test_it_ends_a_stream_on_an_error_line_mid_stream() -> None:
    answer = ndjson({"model": "m", "message": {"role": "assistant", "content": "half"}, "done": False},
                    {"error": "model runner has unexpectedly stopped"})
    with engine(Scripted(answer, "application/x-ndjson")) as url, relay_to(Upstream(url, "ollama")) as relay:
        with httpx.stream("POST", f"{relay.url}/v1/chat/completions", json=CHAT | {"stream": True},
                          timeout=10) as response:
            events = data_of(response)
        record = relay.record()
    assert events[0]["choices"][0]["delta"]["content"] == "half"
    assert "unexpectedly stopped" in events[-1]["error"]["message"]
    assert "unexpectedly stopped" in record.error


def test_it_reports_a_stream_that_breaks_off() -> None:
    profile = SimProfile(decode_tps=200, ttft_ms=5, fault="cut", fault_after=2)
    with serve_in_thread(profile) as sim, relay_to(Upstream(sim.url, "openai")) as relay:
        with httpx.stream("POST", f"{relay.url}/api/chat", json=CHAT, timeout=10) as response:
            lines = lines_of(response)
        record = relay.record()
    assert "broke off" in lines[-1]["error"] and "broke off" in record.error


@pytest.mark.parametrize(("api", "path"), [("openai", "/api/chat"), ("ollama", "/v1/chat/completions")])
def test_it_cancels_the_engine_request_when_the_client_leaves(api: str, path: str) -> None:
    piece = (sse({"choices": [{"index": 0, "delta": {"content": "word "}, "finish_reason": None}]})[0]
             if api == "openai" else
             ndjson({"model": "m", "message": {"role": "assistant", "content": "word "}, "done": False})[0])
    endless = Scripted([piece], "text/event-stream", delay_s=0.02, forever=True)
    with engine(endless) as url, relay_to(Upstream(url, api)) as relay:
        with httpx.stream("POST", f"{relay.url}{path}", json=CHAT | {"stream": True}, timeout=10) as response:
            lines = response.iter_lines()
            while "word" not in next(lines):
                pass
        left_at = time.perf_counter()
        assert endless.client_left.wait(timeout=3)
        noticed = time.perf_counter() - left_at
        record = relay.record()
    assert noticed < 1.0
    assert record.error == "client disconnected" and record.status == 200
    assert record.output_tokens is not None and record.output_tokens >= 1


def test_it_refuses_a_body_that_is_not_json() -> None:
    with relay_to(Upstream(dead_url(), "ollama")) as relay:
        response = httpx.post(f"{relay.url}/v1/chat/completions", content=b"{not json", timeout=10)
        record = relay.record()
    assert response.status_code == 400 and "not JSON" in response.json()["error"]["message"]
    assert record.status == 400 and "not JSON" in record.error


@pytest.mark.parametrize("path", ["/api/chat", "/v1/chat/completions"])
def test_it_records_a_clean_answer_when_the_client_leaves_after_its_end(path: str) -> None:
    answer = sse(
        {"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    # The engine holds its stream open a moment after [DONE]: the client has its end and leaves.
    late = Scripted([*answer, b"\n"], "text/event-stream", delay_s=0.3)
    with engine(late) as url, relay_to(Upstream(url, "openai")) as relay:
        with httpx.stream("POST", f"{relay.url}{path}", json=CHAT | {"stream": True}, timeout=10) as response:
            for line in response.iter_lines():
                if '"done": true' in line or '"done":true' in line or line == "data: [DONE]":
                    break
        record = relay.record()
    assert (record.error, record.status, record.finish_reason) == ("", 200, "stop")
