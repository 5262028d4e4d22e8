"""Request bodies carried from Ollama's API to the OpenAI-compatible one and back."""
from __future__ import annotations

import json

import pytest

from traffic.relay.translate import BadRequest, merge_system, ollama_to_openai, openai_to_ollama

pytestmark = pytest.mark.backend_free

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def test_it_turns_ollama_tool_calls_and_results_into_openai_ones() -> None:
    messages = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "read_file", "arguments": {"path": "a.py"}}}]},
        {"role": "tool", "tool_name": "read_file", "content": "print(1)"},
    ]
    out = ollama_to_openai("/api/chat", {"model": "m", "messages": messages, "tools": TOOLS})
    assert out.path == "/v1/chat/completions" and out.body["tools"] == TOOLS
    call = out.body["messages"][1]["tool_calls"][0]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"]) == {"path": "a.py"}
    result = out.body["messages"][2]
    assert result["tool_call_id"] == call["id"] and result["name"] == "read_file"


def test_it_turns_openai_tool_calls_and_results_into_ollama_ones() -> None:
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
    ]
    out = openai_to_ollama("/v1/chat/completions", {"model": "m", "messages": messages})
    assert out.path == "/api/chat"
    assert out.body["messages"][0]["tool_calls"][0]["function"]["arguments"] == {"path": "a.py"}
    assert out.body["messages"][1] == {"role": "tool", "content": "print(1)", "tool_call_id": "c1",
                                            "tool_name": "read_file"}


def test_it_refuses_tool_arguments_that_are_not_json() -> None:
    bad = {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{oops"}}]}
    with pytest.raises(BadRequest, match="not JSON"):
        openai_to_ollama("/v1/chat/completions", {"messages": [bad]})


@pytest.mark.parametrize(("think", "expected"), [
    (True, {"chat_template_kwargs": {"enable_thinking": True}}),
    (False, {"chat_template_kwargs": {"enable_thinking": False}}),
    ("high", {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "high"}),
])
def test_it_maps_think_to_template_kwargs_and_effort(think: object, expected: dict) -> None:
    body = ollama_to_openai("/api/chat", {"model": "m", "messages": [], "think": think}).body
    assert {k: body[k] for k in expected} == expected


def test_it_maps_reasoning_back_to_think() -> None:
    effort = {"messages": [], "reasoning_effort": "low"}
    assert openai_to_ollama("/v1/chat/completions", effort).body["think"] == "low"
    kwargs = {"messages": [], "chat_template_kwargs": {"enable_thinking": False}}
    assert openai_to_ollama("/v1/chat/completions", kwargs).body["think"] is False
    assert "think" not in openai_to_ollama("/v1/chat/completions", {"messages": []}).body


def test_it_maps_options_to_sampling_and_names_what_it_ignores() -> None:
    options = {"temperature": 0.2, "top_p": 0.9, "top_k": 20, "seed": 7, "num_predict": 64, "stop": ["\n"],
               "repeat_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": 0.3, "num_ctx": 32768}
    out = ollama_to_openai("/api/chat", {"messages": [], "options": options}, engine_kind="vllm")
    expected = {"temperature": 0.2, "top_p": 0.9, "top_k": 20, "seed": 7, "max_tokens": 64, "stop": ["\n"],
                "repetition_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": 0.3}
    assert {key: out.body.get(key) for key in expected} == expected
    assert "num_ctx" not in out.body and "load-time" in out.ignored["num_ctx"]
    penalty = {"messages": [], "options": {"repeat_penalty": 1.1}}
    llama = ollama_to_openai("/api/chat", penalty, "llama-server")
    assert llama.body["repeat_penalty"] == 1.1


def test_it_leaves_no_limit_for_a_negative_num_predict() -> None:
    body = ollama_to_openai("/api/chat", {"messages": [], "options": {"num_predict": -1}}).body
    assert "max_tokens" not in body


def test_it_maps_sampling_back_to_options() -> None:
    body = {"messages": [], "max_tokens": 9, "temperature": 0, "stop": "END", "repetition_penalty": 1.2}
    options = openai_to_ollama("/v1/chat/completions", body).body["options"]
    assert options == {"num_predict": 9, "temperature": 0, "stop": "END", "repeat_penalty": 1.2}


def test_it_maps_format_to_response_format_and_back() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert ollama_to_openai("/api/chat", {"messages": [], "format": "json"}).body["response_format"] == {
        "type": "json_object"}
    fmt = ollama_to_openai("/api/chat", {"messages": [], "format": schema}).body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == schema
    back = openai_to_ollama("/v1/chat/completions", {"messages": [], "response_format": fmt}).body
    assert back["format"] == schema


def test_it_carries_images_as_data_urls_and_refuses_image_links() -> None:
    png = "iVBORw0KGgo="
    message = {"role": "user", "content": "what is it", "images": [png]}
    out = ollama_to_openai("/api/chat", {"messages": [message]})
    parts = out.body["messages"][0]["content"]
    assert parts == [{"type": "text", "text": "what is it"},
                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}]
    back = openai_to_ollama("/v1/chat/completions", {"messages": [{"role": "user", "content": parts}]}).body
    assert back["messages"][0] == {"role": "user", "content": "what is it", "images": [png]}
    link = [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]
    with pytest.raises(BadRequest, match="data: URL"):
        openai_to_ollama("/v1/chat/completions", {"messages": [{"role": "user", "content": link}]})


def test_it_sends_generate_as_chat_and_raw_generate_as_a_completion() -> None:
    chat = ollama_to_openai("/api/generate", {"model": "m", "system": "Be brief.", "prompt": "hi"})
    assert chat.path == "/v1/chat/completions" and chat.body["stream"] is True
    assert [m["role"] for m in chat.body["messages"]] == ["system", "user"]
    assert chat.body["stream_options"] == {"include_usage": True}
    raw = ollama_to_openai("/api/generate", {"model": "m", "prompt": "1 2 3", "raw": True, "stream": False})
    assert (raw.path, raw.body["prompt"], raw.body["stream"]) == ("/v1/completions", "1 2 3", False)
    back = openai_to_ollama("/v1/completions", {"model": "m", "prompt": ["1 2 3"]})
    assert (back.path, back.body["prompt"], back.body["raw"], back.body["stream"]) == (
        "/api/generate", "1 2 3", True, False)


def test_it_merges_later_system_messages_into_the_first() -> None:
    messages = [{"role": "system", "content": "A."}, {"role": "user", "content": "hi"},
                {"role": "system", "content": [{"type": "text", "text": "B."}]}]
    merged = [{"role": "system", "content": "A.\n\nB."}, {"role": "user", "content": "hi"}]
    assert merge_system(messages) == merged
    one = [{"role": "system", "content": "A."}]
    assert merge_system(one) is one


def test_it_refuses_a_think_value_it_does_not_know() -> None:
    with pytest.raises(BadRequest, match="think must be"):
        ollama_to_openai("/api/chat", {"messages": [], "think": "max"})


def test_it_leaves_out_the_empty_tool_list_the_ollama_client_sends() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": []}
    assert "tools" not in ollama_to_openai("/api/chat", body).body
    tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    assert ollama_to_openai("/api/chat", body | {"tools": tools}).body["tools"] == tools
