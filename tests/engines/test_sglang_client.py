"""SGLangClient against SGLang's native answers: /tokenize renders the chat, /generate streams meta_info."""

from __future__ import annotations

import json

import httpx
import pytest

from engines.clients import Chunk, EngineError, EngineFigures, EngineHTTPError, GenerationRequest, client_for
from engines.clients.sglang import SGLangClient
from engines.errors import EngineCut, EngineMalformed
from tests.engines.sglang_factories import generate_stream, meta_info, native_engine, spec_fields, tokenized
from tests.engines.stream_factories import SSE, delta, openai_chunk, serve, sse, usage

pytestmark = pytest.mark.backend_free

URL = "http://sglang.test:30000"
REQUEST = GenerationRequest(model="gemma-3-270m", messages=[{"role": "user", "content": "Hi"}], max_tokens=4)


async def collect(transport: httpx.MockTransport, request: GenerationRequest = REQUEST) -> list:
    async with SGLangClient(URL, transport=transport) as client:
        return [item async for item in client.stream(request)]


def test_it_is_the_client_the_registry_makes_for_sglang():
    assert isinstance(client_for("sglang", URL), SGLangClient)


async def test_it_renders_the_chat_by_sglangs_template_then_streams_generate_on_those_ids():
    seen: list[httpx.Request] = []
    request = GenerationRequest(model="gemma-3-270m", messages=REQUEST.messages, max_tokens=4, top_k=20,
                                thinking=False, extra={"ignore_eos": True})  # fmt: skip
    await collect(native_engine(generate_stream(["a"] * 4, meta_info(4)), seen=seen), request)
    tokenize, generate = (json.loads(r.content) for r in seen)
    assert [r.url.path for r in seen] == ["/tokenize", "/generate"]
    assert tokenize == {"model": "gemma-3-270m", "messages": REQUEST.messages,
                        "chat_template_kwargs": {"enable_thinking": False}}  # fmt: skip
    assert generate == {
        "input_ids": tokenized()["tokens"], "stream": True,
        "sampling_params": {"max_new_tokens": 4, "temperature": 0.0, "top_k": 20, "sampling_seed": 0,
                            "ignore_eos": True},
    }  # fmt: skip


@pytest.mark.parametrize("cumulative", [True, False])
async def test_it_yields_only_the_new_text_of_each_chunk(cumulative):
    *chunks, figures = await collect(native_engine(generate_stream(["Hel", "lo", "!"], meta_info(3),
                                                                   cumulative=cumulative)))  # fmt: skip
    assert [c.text for c in chunks] == ["Hel", "lo", "!"]
    assert isinstance(figures, EngineFigures) and figures.output_tokens == 3


async def test_it_takes_the_requests_own_engine_figures_from_meta_info():
    final = meta_info(11, prompt_tokens=40, cached_tokens=24, first_token_latency=0.12, e2e_latency=0.62,
                      prefill_s=0.1)  # fmt: skip
    *_, f = await collect(native_engine(generate_stream(["x"] * 11, final)))
    assert (f.output_tokens, f.prompt_tokens, f.cached_tokens, f.finish_reason) == (11, 40, 24, "length")
    assert f.ttft_s == pytest.approx(0.12) and f.decode_s == pytest.approx(0.5)
    assert f.decode_tps == pytest.approx(10 / 0.5)  # SGLang's (n - 1) ÷ (finished - first token)
    assert f.prompt_s == pytest.approx(0.10)  # the scheduler's prefill: entered to finished
    assert f.draft_tokens is None and f.accepted_by_position is None


async def test_it_reads_acceptance_and_acceptance_by_position_from_the_histogram():
    # 10 verifications of 4 drafts: 2 accepted none, 3 one, 1 two, 4 all four.
    spec = spec_fields([2, 3, 1, 0, 4], draft_positions=4)
    *_, f = await collect(native_engine(generate_stream(["x"] * 30, meta_info(30, **spec))))
    assert (f.verifications, f.draft_tokens, f.accepted_tokens) == (10, 40, 3 + 2 + 16)
    assert f.accepted_by_position == [8, 5, 4, 4]


async def test_it_pads_positions_no_verification_reached_with_zero():
    *_, f = await collect(native_engine(generate_stream(["x"] * 5, meta_info(5, **spec_fields([3, 1], 4)))))
    assert f.accepted_by_position == [1, 0, 0, 0]


async def test_it_refuses_a_prompt_over_the_context_length_before_generating():
    seen: list[httpx.Request] = []
    over = "prompt is 12 tokens, over the engine's context length of 10"
    with pytest.raises(EngineHTTPError, match=over) as err:
        await collect(native_engine(b"", prompt=tokenized(12, max_model_len=10), seen=seen))
    assert err.value.status == 400 and [r.url.path for r in seen] == ["/tokenize"]


@pytest.mark.parametrize("answer", [{"tokens": []}, {"tokens": ["a"]}, {"count": 3}])
async def test_it_rejects_a_tokenize_answer_without_token_ids(answer):
    with pytest.raises(EngineMalformed, match="no token ids"):
        await collect(native_engine(b"", prompt=answer))


async def test_it_raises_the_error_sglang_streams_instead_of_an_answer():
    error = {"error": {"message": "The input (5000 tokens) is longer than the model's context length",
                       "type": "invalid_request_error", "code": 400}}  # fmt: skip
    with pytest.raises(EngineError, match="longer than the model's context length"):
        await collect(native_engine(sse(error, "[DONE]")))


async def test_it_raises_when_sglang_aborts_the_request():
    final = meta_info(2, finish={"type": "abort", "message": "memory pool is full", "status_code": 503})
    with pytest.raises(EngineError, match="aborted the request: memory pool is full"):
        await collect(native_engine(generate_stream(["a", "b"], final)))


@pytest.mark.parametrize("answer", [
    generate_stream(["a", "b"], None), generate_stream(["a"], meta_info(1), done=False),
])
async def test_it_calls_a_stream_without_its_finish_cut(answer):
    with pytest.raises(EngineCut, match="stopped mid-answer"):
        await collect(native_engine(answer))


async def test_it_sends_a_request_with_tools_to_v1_and_reads_acceptance_from_sglext():
    seen: list[httpx.Request] = []
    details = spec_fields([1, 1, 2], draft_positions=3)
    answer = sse(openai_chunk("sglang", [delta("ok", "stop")]), openai_chunk("sglang", [], usage=usage(5)),
                 openai_chunk("sglang", [], sglext={"spec_tokens_details": details}), "[DONE]")  # fmt: skip
    transport = serve({"POST /v1/chat/completions": httpx.Response(200, content=answer, headers=SSE)}, seen)
    request = GenerationRequest(model="m", messages=[], extra={"tools": [{"type": "function"}]})
    *chunks, f = await collect(transport, request)
    assert [c.text for c in chunks if isinstance(c, Chunk)] == ["ok"]
    assert json.loads(seen[0].content)["return_spec_tokens_details"] is True
    assert (f.verifications, f.draft_tokens, f.accepted_tokens) == (4, 12, 5)
    assert f.accepted_by_position == [3, 2, 0]


async def test_it_passes_on_sglangs_own_400_for_an_input_over_its_context():
    refused = json.dumps({"error": {"message": "The input (5002 tokens) is longer than the model's "
                                               "context length (4096 tokens)."}}).encode()  # fmt: skip
    with pytest.raises(EngineHTTPError, match=r"HTTP 400: .*longer than the model's context length") as err:
        await collect(native_engine(refused, status=400))
    assert err.value.status == 400
