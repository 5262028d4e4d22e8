"""The relay in front of the simulator (Ollama and llama-server flavours), driven by plain httpx."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engines.simulator import SimProfile, serve_in_thread
from engines.simulator.wire import text as simulated_text
from tests.traffic.relay.scripted import Relay, TwoSystemsRefused, engine, relay_to, sse
from traffic.relay import RelayServer, Upstream, build_relay

pytestmark = pytest.mark.backend_free

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
TASK = "List every HTTP API route that server.py handles."
FLAVOURS = {"ollama": "ollama", "openai": "llama-server"}


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    with serve_in_thread(SimProfile(decode_tps=40, ttft_ms=60, lookahead=3)) as server:
        yield server.url


@pytest.fixture(params=["ollama", "openai"])
def relay(request: pytest.FixtureRequest, sim: str) -> Iterator[Relay]:
    """A relay in front of the simulator speaking Ollama's API, or llama-server's."""
    with relay_to(Upstream(sim, request.param, engine_kind=FLAVOURS[request.param])) as relay:
        yield relay


def ndjson_lines(response: httpx.Response) -> list[tuple[float, dict[str, Any]]]:
    return [(time.perf_counter(), json.loads(line)) for line in response.iter_lines() if line]


def sse_events(response: httpx.Response) -> list[tuple[float, Any]]:
    events = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            payload = line.removeprefix("data: ")
            events.append((time.perf_counter(), payload if payload == "[DONE]" else json.loads(payload)))
    return events


def test_it_streams_an_ollama_chat_chunk_by_chunk_in_time(relay: Relay) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "options": {"num_predict": 30}}
    with httpx.stream("POST", f"{relay.url}/api/chat", json=body, timeout=10) as response:
        assert response.headers["content-type"] == "application/x-ndjson"
        lines = ndjson_lines(response)
    content = [t for t, line in lines if not line["done"] and line["message"]["content"]]
    assert len(content) >= 8
    # 30 tokens, ~2 per decode step at 40 steps/s: the pieces reach the client spread over ~0.35 s
    # as the engine makes them, not all at the end.
    assert content[-1] - content[0] > 0.2
    assert lines[-1][1]["done"] is True and lines[-1][1]["done_reason"] == "length"
    assert "".join(line["message"]["content"] for _, line in lines) == simulated_text(0, 30)


def test_it_streams_an_openai_chat_and_ends_with_done(relay: Relay) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 24, "stream": True}
    with httpx.stream("POST", f"{relay.url}/v1/chat/completions", json=body, timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response)
    assert events[-1][1] == "[DONE]"
    chunks = [e for _, e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == simulated_text(0, 24)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert not any("usage" in c for c in chunks)  # the client asked for none
    assert events[-2][0] - events[0][0] > 0.1


def test_it_sends_usage_when_the_openai_client_asks(relay: Relay) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": True,
            "stream_options": {"include_usage": True}}
    with httpx.stream("POST", f"{relay.url}/v1/chat/completions", json=body, timeout=10) as response:
        events = sse_events(response)
    usage = [e["usage"] for _, e in events[:-1] if "usage" in e]
    assert usage and usage[-1]["completion_tokens"] == 8


def test_it_answers_stream_false_whole(relay: Relay) -> None:
    ollama = httpx.post(f"{relay.url}/api/chat", json={
        "model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}],
        "options": {"num_predict": 5}}, timeout=10).json()
    assert ollama["done"] is True and ollama["message"]["content"].split() == ["the", "simulated", "engine",
                                                                               "streams", "plain"]
    openai = httpx.post(f"{relay.url}/v1/chat/completions", json={
        "model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}, timeout=10).json()
    assert openai["object"] == "chat.completion"
    assert openai["choices"][0]["message"]["content"] == ollama["message"]["content"]
    assert openai["usage"]["completion_tokens"] == 5


def test_it_carries_the_agents_tool_calls_both_ways(relay: Relay) -> None:
    # The simulator's scripted agent: a search first, then read_file on the file the task names.
    first = httpx.post(f"{relay.url}/api/chat", json={
        "model": "m", "stream": False, "tools": TOOLS, "messages": [{"role": "user", "content": TASK}]},
        timeout=10).json()
    call = first["message"]["tool_calls"][0]["function"]
    assert call["name"] == "search" and isinstance(call["arguments"], dict)  # Ollama: an object
    steps = [{"role": "user", "content": TASK},
             {"role": "assistant", "content": "", "tool_calls": [{"function": call}]},
             {"role": "tool", "tool_name": "search", "content": "no match"}]
    second = httpx.post(f"{relay.url}/api/chat", json={
        "model": "m", "stream": False, "tools": TOOLS, "messages": steps}, timeout=10).json()
    second_call = second["message"]["tool_calls"][0]["function"]
    assert second_call["name"] == "read_file"
    assert second_call["arguments"] == {"path": "server.py", "start_line": 1}
    openai = httpx.post(f"{relay.url}/v1/chat/completions", json={
        "model": "m", "tools": TOOLS, "messages": [{"role": "user", "content": TASK}]}, timeout=10).json()
    openai_call = openai["choices"][0]["message"]["tool_calls"][0]
    assert openai["choices"][0]["finish_reason"] == "tool_calls"
    assert json.loads(openai_call["function"]["arguments"]) == call["arguments"]  # OpenAI: a JSON string
    records = [relay.record() for _ in range(3)]
    assert [r.output_type for r in records] == ["tool-call"] * 3
    assert records[1].tool_calls[0].name == "read_file" and records[1].tool_calls[0].path == "server.py"
    assert records[0].conversation == records[1].conversation  # two steps of one conversation
    assert (records[0].turn, records[1].turn) == (1, 3)


def test_it_answers_model_lists_and_versions_in_the_clients_format(relay: Relay) -> None:
    assert httpx.get(f"{relay.url}/").text == "Ollama is running"
    assert httpx.head(f"{relay.url}/").status_code == 200
    tags = httpx.get(f"{relay.url}/api/tags").json()
    assert [m["name"] for m in tags["models"]] == ["sparkdash-sim:8b"]
    models = httpx.get(f"{relay.url}/v1/models").json()
    assert models["object"] == "list" and [m["id"] for m in models["data"]] == ["sparkdash-sim:8b"]
    show = httpx.post(f"{relay.url}/api/show", json={"model": "sparkdash-sim:8b"}).json()
    assert show["details"]["parameter_size"] == "8.0B"
    assert httpx.get(f"{relay.url}/api/version").json()["version"]
    assert httpx.head(f"{relay.url}/api/version").status_code == 200
    missing = httpx.get(f"{relay.url}/v1/nothing")
    assert missing.status_code == 404 and missing.json()["error"]["message"]
    wrong = httpx.get(f"{relay.url}/api/chat")
    assert wrong.status_code == 405 and "no route GET /api/chat" in wrong.json()["error"]


def test_it_names_the_options_it_could_not_carry_over(sim: str) -> None:
    with relay_to(Upstream(sim, "openai", engine_kind="llama-server")) as relay:
        body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}],
                "options": {"num_predict": 3, "num_ctx": 65536}}
        response = httpx.post(f"{relay.url}/api/chat", json=body, timeout=10)
    assert response.status_code == 200 and response.json()["eval_count"] == 3
    assert "num_ctx: a load-time setting" in response.headers["x-sparkdash-relay-ignored"]


def test_it_records_the_engines_figures(sim: str) -> None:
    with relay_to(Upstream(sim, "openai", engine_kind="llama-server")) as relay:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "options": {"num_predict": 20}}
        with httpx.stream("POST", f"{relay.url}/api/chat", json=body, timeout=10) as response:
            final = ndjson_lines(response)[-1][1]
        record = relay.record()
    direct = _direct_timings(sim, 20)
    assert record.output_tokens == direct["predicted_n"] == 20
    assert record.draft_tokens == direct["draft_n"] and record.accepted_tokens == direct["draft_n_accepted"]
    assert record.prompt_tokens == direct["prompt_n"] + direct["cache_n"]
    assert record.ttft_s is not None and 0.06 <= record.ttft_s < 0.2  # the engine's 60 ms, plus the relay's
    assert record.decode_tps_engine == pytest.approx(direct["predicted_per_second"])
    assert record.decode_tps_client is not None and record.decode_tps_client > 0
    assert record.output_type == "prose-en" and record.finish_reason == "length" and record.error == ""
    # The final Ollama chunk: the engine's own timings in nanoseconds.
    assert final["eval_count"] == direct["predicted_n"]
    assert final["eval_duration"] == round(direct["predicted_ms"] * 1e6)
    assert final["prompt_eval_duration"] == round(direct["prompt_ms"] * 1e6)
    assert final["prompt_eval_count"] == direct["prompt_n"] + direct["cache_n"]


def _direct_timings(sim: str, n: int) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": n, "stream": True}
    with httpx.stream("POST", f"{sim}/v1/chat/completions", json=body, timeout=10) as response:
        events = sse_events(response)
    return next(e["timings"] for _, e in reversed(events[:-1]) if "timings" in e)


def test_it_counts_new_prompt_tokens_against_the_engines_cache() -> None:
    profile = SimProfile(decode_tps=500, ttft_ms=5, prefill_tps=100000)
    with serve_in_thread(profile) as sim, relay_to(Upstream(sim.url, "openai")) as relay:
        system = {"role": "system", "content": "You are a careful agent. " * 40}
        steps = [system, {"role": "user", "content": "Read the file."}]
        for _ in range(2):
            body = {"model": "m", "stream": False, "messages": steps, "options": {"num_predict": 4}}
            answer = httpx.post(f"{relay.url}/api/chat", json=body, timeout=10).json()
            steps = [*steps, answer["message"], {"role": "user", "content": "And the next."}]
        first, second = relay.record(), relay.record()
    assert first.new_prompt_tokens == first.prompt_tokens
    assert second.prompt_tokens is not None and second.new_prompt_tokens is not None
    assert second.new_prompt_tokens < second.prompt_tokens / 2  # the system prompt came from the cache
    assert first.conversation == second.conversation


def test_it_merges_system_messages_for_a_template_that_refuses_two() -> None:
    answer = sse({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})
    scripted = TwoSystemsRefused(answer, "text/event-stream")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "system", "content": "Use tools."},
                {"role": "user", "content": "hi"}]
    body = {"model": "m", "messages": messages}
    with engine(scripted) as url:
        with relay_to(Upstream(url, "openai")) as plain:
            refused = httpx.post(f"{plain.url}/api/chat", json=body, timeout=10)
            assert refused.status_code == 500 and "template refused" in refused.json()["error"]
            assert "HTTP 500" in plain.record().error
        with relay_to(Upstream(url, "openai", merge_system=True)) as merging:
            merged = httpx.post(f"{merging.url}/api/chat", json=body, timeout=10)
    assert merged.status_code == 200
    assert scripted.bodies[-1]["messages"][:2] == [
        {"role": "system", "content": "Be brief.\n\nUse tools."}, {"role": "user", "content": "hi"}]


def test_it_captures_bodies_only_when_asked_and_caps_them(sim: str) -> None:
    body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "x" * 500}],
            "options": {"num_predict": 60}}
    with relay_to(Upstream(sim, "ollama")) as relay:
        httpx.post(f"{relay.url}/api/chat", json=body, timeout=10)
        plain = relay.record()
    with relay_to(Upstream(sim, "ollama", capture_bodies=True, body_cap_bytes=100)) as relay:
        httpx.post(f"{relay.url}/api/chat", json=body, timeout=10)
        capped = relay.record()
    with relay_to(Upstream(sim, "ollama", capture_bodies=True)) as relay:
        httpx.post(f"{relay.url}/api/chat", json=body, timeout=10)
        whole = relay.record()
    assert plain.request_body is None and plain.response_text is None
    assert capped.request_body is not None and capped.request_body["truncated"] is True
    assert len(capped.request_body["text"].encode()) <= 100
    assert capped.response_text is not None and capped.response_text.endswith("[truncated by the relay]")
    assert whole.request_body == body
    assert whole.response_text is not None and len(whole.response_text.split()) == 60


def test_it_relays_generate_and_completions(relay: Relay) -> None:
    body = {"model": "m", "prompt": "hi", "system": "Be brief.", "options": {"num_predict": 6}}
    with httpx.stream("POST", f"{relay.url}/api/generate", json=body, timeout=10) as response:
        lines = [line for _, line in ndjson_lines(response)]
    assert "".join(line["response"] for line in lines) == simulated_text(0, 6)
    assert lines[-1]["done"] is True and lines[-1]["eval_count"] == 6
    assert relay.record().path == "/api/generate"


def test_it_sends_openai_completions_to_ollama_as_raw_generate(sim: str) -> None:
    with relay_to(Upstream(sim, "ollama")) as relay:
        body = {"model": "m", "prompt": "1 2", "max_tokens": 4}
        answer = httpx.post(f"{relay.url}/v1/completions", json=body, timeout=10).json()
    assert answer["object"] == "text_completion" and answer["choices"][0]["text"] == simulated_text(0, 4)
    assert answer["usage"]["completion_tokens"] == 4


def test_it_says_so_when_there_is_no_engine_to_relay_to() -> None:
    def no_engine() -> Upstream:
        raise LookupError("machine spark-1 has no engine")

    records: list = []
    with RelayServer(build_relay(no_engine, records.append)) as server:
        body = {"model": "m", "messages": []}
        chat = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=10)
        tags = httpx.get(f"{server.url}/api/tags", timeout=10)
    assert chat.status_code == 503 and "has no engine" in chat.json()["error"]["message"]
    assert tags.status_code == 503 and "has no engine" in tags.json()["error"]
    assert len(records) == 1 and records[0].status == 503 and "has no engine" in records[0].error
