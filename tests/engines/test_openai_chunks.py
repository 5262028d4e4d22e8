"""A chunk decoded straight into its fields reads as the general path reads it, or is left to it."""
from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.clients.openai import _Answer
from engines.clients.openai_chunks import fast_take

pytestmark = pytest.mark.backend_free

LLAMA_CHUNK = {
    "id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1765130000, "model": "gemma",
    "system_fingerprint": "b11434",
    "choices": [{"index": 0, "delta": {"content": " the"}, "finish_reason": None}],
}
LAST_CHUNK = {
    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    "usage": {"completion_tokens": 9, "prompt_tokens": 4},
    "timings": {"prompt_ms": 1.5, "predicted_n": 9},
}


def _state(answer: _Answer) -> tuple[Any, ...]:
    return answer.finish_reason, answer.usage, answer.timings


def _both(payload: str) -> tuple[Any, _Answer, Any, _Answer]:
    fast, general = _Answer(), _Answer()
    taken = fast.take_line("data: " + payload)
    try:
        data = orjson.loads(payload)
        expected = general.take(data) if isinstance(data, dict) else None
    except (orjson.JSONDecodeError, TypeError):
        expected = None
    return taken, fast, expected, general


@pytest.mark.parametrize("chunk", [
    LLAMA_CHUNK,
    LAST_CHUNK,
    {"choices": [{"delta": {"reasoning_content": "hmm", "content": ""}}]},
    {"choices": [{"delta": {"reasoning": "so", "content": "x"}}]},  # vLLM's name
    {"choices": [{"delta": {"reasoning_content": "", "reasoning": "so"}}]},
    {"choices": [{"delta": {"content": "a"}}, {"delta": {"content": "b"}, "finish_reason": "length"}]},
    {"choices": [], "usage": {"completion_tokens": 3}},
])
def test_it_reads_a_plain_chunk_as_the_general_path_does(chunk: dict[str, Any]) -> None:
    taken, fast, expected, general = _both(json.dumps(chunk))
    assert taken is not None and taken == expected
    assert _state(fast) == _state(general)


@pytest.mark.parametrize("payload", [
    "[DONE]",
    '{"error": {"message": "out of memory"}}',
    '{"object": "error", "message": "bad request", "code": 400}',
    '{"choices": [], "sglext": {"spec_tokens_details": {"accepted": 3}}}',
    '{"choices": [{"delta": {"content": 7}}]}',  # a number for text: the general path ignores it
    '{"choices": "none"}',
    '{"choices": [{"delta": "x"}]}',
    '{"choices": [{"finish_reason": 1}]}',
    "[1, 2]",
    "{not json",
    '{"choices": [], "usage": NaN}',
])
def test_it_leaves_any_other_payload_to_the_general_path(payload: str) -> None:
    assert fast_take(payload) is None


def test_it_only_takes_data_lines() -> None:
    assert _Answer().take_line(": a comment") is None
    assert _Answer().take_line("event: delta") is None
    assert _Answer().take_line("data:" + json.dumps(LLAMA_CHUNK)) is None  # no space: the general path


_TEXT = st.one_of(st.none(), st.text(max_size=8), st.integers(), st.booleans())
_DELTA = st.one_of(st.none(), st.text(max_size=3), st.dictionaries(
    st.sampled_from(["content", "reasoning_content", "reasoning", "role"]), _TEXT, max_size=4))
_CHOICE = st.one_of(st.integers(), st.fixed_dictionaries({}, optional={
    "delta": _DELTA, "finish_reason": _TEXT, "index": st.integers()}))
_MAPPING = st.dictionaries(st.text(max_size=4), st.integers(), max_size=3)
_ANY = st.one_of(st.none(), st.integers(), st.text(max_size=4), _MAPPING)
_CHUNK = st.fixed_dictionaries({}, optional={
    "choices": st.one_of(st.lists(_CHOICE, max_size=3), _ANY), "usage": _ANY, "timings": _ANY,
    "error": _ANY, "object": st.one_of(st.just("error"), st.just("chat.completion.chunk"), _ANY),
    "sglext": _ANY, "id": _ANY,
})


@settings(max_examples=600, deadline=None)
@given(_CHUNK)
def test_it_never_reads_a_chunk_otherwise_than_the_general_path(chunk: dict[str, Any]) -> None:
    taken, fast, expected, general = _both(json.dumps(chunk))
    if taken is None:
        return  # left to the general path, which reads it as before
    assert taken == expected
    assert _state(fast) == _state(general)
