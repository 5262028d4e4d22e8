"""The relay as real clients see it: the `ollama` and `openai` Python packages, in front of the simulator."""
from __future__ import annotations

from collections.abc import Iterator

import ollama
import openai
import pytest

from engines.simulator import SimProfile, serve_in_thread
from engines.simulator.wire import text as simulated_text
from tests.traffic.relay.scripted import Relay, relay_to
from traffic.relay import Admission, Upstream

pytestmark = pytest.mark.backend_free

TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
TASK = [{"role": "user", "content": "List every HTTP API route that server.py handles."}]


@pytest.fixture(params=["ollama", "openai"])
def relay(request: pytest.FixtureRequest) -> Iterator[Relay]:
    kind = "ollama" if request.param == "ollama" else "llama-server"
    sim = serve_in_thread(SimProfile(decode_tps=500, ttft_ms=5))
    with sim, relay_to(Upstream(sim.url, request.param, engine_kind=kind)) as relay:
        yield relay


def test_it_serves_the_ollama_client_with_tools_and_streams(relay: Relay) -> None:
    client = ollama.Client(host=relay.url)
    answer = client.chat(model="m", messages=TASK, tools=TOOLS, stream=False)
    assert answer.message.tool_calls is not None
    assert answer.message.tool_calls[0].function.name == "search"
    parts = list(client.chat(model="m", messages=TASK[:1], stream=True, options={"num_predict": 5}))
    assert "".join(p.message.content or "" for p in parts) == simulated_text(0, 5)
    assert parts[-1].done and parts[-1].eval_count == 5
    assert [m.model for m in client.list().models] == ["sparkdash-sim:8b"]


def test_it_serves_the_openai_client_with_tools_and_usage(relay: Relay) -> None:
    client = openai.OpenAI(base_url=f"{relay.url}/v1", api_key="unused")
    answer = client.chat.completions.create(model="m", messages=TASK, tools=TOOLS)
    calls = answer.choices[0].message.tool_calls
    assert calls is not None and calls[0].function.name == "search"
    chunks = list(client.chat.completions.create(
        model="m", messages=TASK, stream=True, max_tokens=5,
        stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == simulated_text(0, 5)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5
    assert [m.id for m in client.models.list()] == ["sparkdash-sim:8b"]


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_it_makes_both_clients_raise_on_a_broken_engine_stream(api: str) -> None:
    profile = SimProfile(decode_tps=500, ttft_ms=5, fault="malformed", fault_after=2)
    with serve_in_thread(profile) as sim, relay_to(Upstream(sim.url, api)) as relay:
        with pytest.raises(ollama.ResponseError, match="malformed engine chunk"):
            list(ollama.Client(host=relay.url).chat(model="m", messages=TASK, stream=True))
        client = openai.OpenAI(base_url=f"{relay.url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.APIError, match="malformed engine chunk"):
            list(client.chat.completions.create(model="m", messages=TASK, stream=True))


def by_token(token: str) -> Admission:
    return Admission.WITH_KEY if token == "sdr_agents" else Admission.REFUSED


def test_it_takes_the_token_as_the_clients_own_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # What agents set: OLLAMA_API_KEY for Ollama's client, the API key for OpenAI's.
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    with serve_in_thread(SimProfile(decode_tps=500, ttft_ms=5)) as sim, relay_to(
            Upstream(sim.url, "ollama", engine_kind="ollama"), by_token) as relay:
        with pytest.raises(ollama.ResponseError, match="no valid relay token") as refused:
            ollama.Client(host=relay.url).chat(model="m", messages=TASK, options={"num_predict": 3})
        monkeypatch.setenv("OLLAMA_API_KEY", "sdr_agents")
        answer = ollama.Client(host=relay.url).chat(model="m", messages=TASK, options={"num_predict": 3})
        with pytest.raises(openai.AuthenticationError, match="no valid relay token"):
            openai.OpenAI(base_url=f"{relay.url}/v1", api_key="sdr_wrong", max_retries=0).models.list()
        listed = openai.OpenAI(base_url=f"{relay.url}/v1", api_key="sdr_agents").models.list()
    assert refused.value.status_code == 401
    assert answer.message.content == simulated_text(0, 3)
    assert [m.id for m in listed] == ["sparkdash-sim:8b"]
