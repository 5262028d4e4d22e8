"""Counting a text's tokens as the engine does (/tokenize), and sizing filler text to a count."""
import json

import httpx
import pytest

from engines.clients import EngineError, client_for
from runs.core.jobs.tokens import CONTEXT_SPARE, context_for, filler, openai_tokenizer, size_text

pytestmark = pytest.mark.backend_free


async def test_it_counts_with_the_engine_tokenize_endpoint():
    bodies = []

    def answer(request):
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"tokens": list(range(len(bodies[-1]["content"].split())))})

    async with client_for("vllm", "http://engine", transport=httpx.MockTransport(answer)) as client:
        assert await openai_tokenizer(client, "demo")("one two three") == 3
    assert bodies == [{"content": "one two three", "prompt": "one two three", "model": "demo"}]


async def test_it_rejects_a_tokenize_answer_without_tokens():
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"count": 3}))
    async with client_for("llama-server", "http://engine", transport=transport) as client:
        with pytest.raises(EngineError, match="without a token list"):
            await openai_tokenizer(client)("one two three")


async def test_it_sizes_any_text_built_from_filler_sentences():
    async def words(text):
        return len(text.split())

    sized = await size_text(words, lambda n: "Question? " + " ".join(filler(n, 3)), 500, 0.02)
    assert abs(sized.tokens - 500) <= 10 and sized.tokens == await words(sized.text)
    assert sized.text.startswith("Question? " + filler(1, 3)[0])
    with pytest.raises(EngineError, match="a prompt of 5 tokens is too short"):
        await size_text(words, lambda n: "a much longer question than five words " * (n + 1), 5, 0.02)


def test_it_gives_ollama_room_for_the_prompt_the_answer_and_the_chat_template():
    assert context_for(True, 1000, 64) == {"options": {"num_ctx": 1000 + 64 + CONTEXT_SPARE}}
    assert context_for(False, 1000, 64) == {}
    assert context_for(True, 0, 64) == {}  # the job's own short prompt: Ollama's default context


async def test_it_takes_the_nearest_sentence_count_when_one_sentence_is_more_than_the_tolerance():
    async def fifteen_a_sentence(text):
        return 10 + 15 * text.count(".")

    def build(n):
        return " ".join(filler(n))

    with pytest.raises(EngineError, match="within 2%"):
        await size_text(fifteen_a_sentence, build, 303, 0.02)
    sized = await size_text(fifteen_a_sentence, build, 303, 0.02, nearest=True)
    assert (sized.sentences, sized.tokens) == (20, 310)  # 295 and 310 straddle 303: 310 is nearer
