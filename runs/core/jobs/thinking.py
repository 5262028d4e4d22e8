"""What a quality job adds to an OpenAI-compatible request body to ask for thinking on or off.

The quality jobs talk through their harnesses' own HTTP (lm-eval's requests, EvalPlus's openai
SDK), not through engines.clients, so they lay these fields over the harness's body.
"""
from __future__ import annotations

from typing import Any

__all__ = ["thinking_body"]


def thinking_body(thinking: bool | None, reasoning_effort: str | None) -> dict[str, Any]:
    """The request fields that ask an OpenAI-compatible engine for thinking on or off.

    chat_template_kwargs.enable_thinking is read by the chat templates of Qwen3-style models on
    llama-server, vLLM and SGLang; None leaves both to the engine.
    """
    body: dict[str, Any] = {}
    if thinking is not None:
        body["chat_template_kwargs"] = {"enable_thinking": thinking}
    if reasoning_effort:
        body["reasoning_effort"] = reasoning_effort
    return body
