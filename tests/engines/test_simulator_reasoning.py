"""The simulator's reasoning ("thinking"): both styles on both APIs, think off, and its counts."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engines.clients import GenerationRequest, client_for
from engines.simulator import SimProfile, serve_in_thread

pytestmark = pytest.mark.backend_free

ASK = {"model": "sim", "messages": [{"role": "user", "content": "Say something."}]}
OPENAI = ASK | {"stream": True, "stream_options": {"include_usage": True}, "max_tokens": 16}
OLLAMA = ASK | {"options": {"num_predict": 16}}
FAST = {"decode_tps": 2000.0, "ttft_ms": 2.0}


@pytest.fixture
def sim(request: pytest.FixtureRequest) -> Iterator[str]:
    """A simulator with 10 reasoning tokens, in the style the test's parameter names."""
    with serve_in_thread(SimProfile(**FAST, reasoning_tokens=10, reasoning_style=request.param)) as server:
        yield server.url


def post(url: str, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The streamed answer's JSON objects (SSE data or NDJSON lines), [DONE] left out."""
    lines = httpx.post(url + path, json=body, timeout=10).text.splitlines()
    payloads = (line.removeprefix("data: ") for line in lines if line.strip())
    return [json.loads(p) for p in payloads if p != "[DONE]"]


def openai_deltas(objects: list[dict[str, Any]], key: str) -> list[str]:
    return [c["delta"][key] for o in objects for c in o["choices"] if c["delta"].get(key)]


@pytest.mark.parametrize("sim", ["field"], indirect=True)
def test_it_streams_reasoning_content_before_the_answer_and_counts_it_in_the_usage(sim):
    objects = post(sim, "/v1/chat/completions", OPENAI)
    deltas = [c["delta"] for o in objects for c in o["choices"]]
    kinds = [k for d in deltas for k in ("reasoning_content", "content") if d.get(k)]
    assert kinds == ["reasoning_content"] * 10 + ["content"] * 6
    usage = objects[-1]["usage"]
    assert usage["completion_tokens"] == 16
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 10}


@pytest.mark.parametrize("sim", ["field"], indirect=True)
def test_it_streams_ollamas_thinking_before_the_content_and_counts_it_in_eval_count(sim):
    lines = post(sim, "/api/chat", OLLAMA)
    thinking = [line["message"]["thinking"] for line in lines if line["message"].get("thinking")]
    content = [line["message"]["content"] for line in lines if line["message"]["content"]]
    assert (len(thinking), len(content)) == (10, 6)
    assert lines.index(next(x for x in lines if x["message"]["content"])) == 10
    assert lines[-1]["eval_count"] == 16


@pytest.mark.parametrize("sim", ["tags"], indirect=True)
def test_it_puts_tagged_reasoning_in_the_content_with_the_tags_split_across_chunks(sim):
    objects = post(sim, "/v1/chat/completions", OPENAI)
    pieces = openai_deltas(objects, "content")
    assert pieces[:2] == ["<thi", "nk>\n"] and pieces[8:10] == ["</th", "ink>"]
    assert openai_deltas(objects, "reasoning_content") == []
    assert "completion_tokens_details" not in objects[-1]["usage"]  # no parser counted it


@pytest.mark.parametrize("sim", ["field", "tags"], indirect=True)
@pytest.mark.parametrize(("path", "body"), [
    ("/api/chat", OLLAMA | {"think": False}),
    ("/v1/chat/completions", OPENAI | {"chat_template_kwargs": {"enable_thinking": False}}),
])
def test_it_sends_no_reasoning_when_the_request_turns_thinking_off(sim, path, body):
    text = json.dumps(post(sim, path, body))
    assert "thinking" not in text and "reasoning" not in text and "<thi" not in text


@pytest.mark.parametrize("sim", ["field"], indirect=True)
def test_it_adds_the_reasoning_to_a_reply_without_a_limit_and_to_a_whole_reply(sim):
    body = ASK | {"stream": False}
    whole = httpx.post(sim + "/v1/chat/completions", json=body, timeout=10).json()
    assert whole["usage"]["completion_tokens"] == 128 + 10  # default_max_tokens of answer after it
    assert whole["choices"][0]["message"]["reasoning_content"].startswith(" hmm let")
    assert whole["usage"]["completion_tokens_details"] == {"reasoning_tokens": 10}


@pytest.mark.parametrize("sim", ["field", "tags"], indirect=True)
async def test_it_gives_the_clients_the_reasoning_count_from_usage_or_from_its_tokenizer(sim, request):
    style = request.node.callspec.params["sim"]
    async with client_for("llama-server", sim) as client:
        gen = await client.generate(GenerationRequest(model="sim", messages=ASK["messages"], max_tokens=16))
    assert gen.figures.reasoning_tokens == 10
    assert gen.figures.reasoning_tokens_source == ("engine" if style == "field" else "tokenizer")
    assert gen.text == "the simulated engine streams plain words"


def test_it_refuses_a_tagged_reasoning_too_short_for_its_tags():
    with pytest.raises(ValueError, match="reasoning_tokens must be 0 or >= 4 in the tags style"):
        SimProfile(reasoning_tokens=3, reasoning_style="tags")
    with pytest.raises(ValueError, match="reasoning_style must be one of"):
        SimProfile(reasoning_style="xml")
