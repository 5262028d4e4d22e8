"""lm-eval's local-chat-completions model, reporting each answer as it arrives.

Imported only when an lm-eval job runs: lm-eval and its dependencies are slow to import.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests
from lm_eval.api.instance import Instance
from lm_eval.models.openai_completions import LocalChatCompletion

from engines.clients.base import EngineError
from runs.core.jobs.thinking import thinking_body

# (doc, answer text, seconds, usage, finish reason) -> None; on lm-eval's thread, in question order.
OnAnswer = Callable[[dict[str, Any], str, float, dict[str, Any], str | None], None]
# Where a reasoning model's thinking ends when the engine leaves it in the answer's content (no
# reasoning parser): lm-eval then grades only the text after it.
THINK_END = "</think>"

__all__ = ["ReportingChatModel", "reporting_chat_model", "thinking_body"]


class ReportingChatModel(LocalChatCompletion):
    """Asks one question at a time, so each answer is reported before the next is sent."""

    def __init__(self, on_total: Callable[[int], None], on_answer: OnAnswer,
                 body: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """:param body: laid over every request body (thinking on or off, reasoning effort)."""
        super().__init__(**kwargs)
        self.on_total = on_total
        self.on_answer = on_answer
        self.body = body or {}
        self.last_usage: dict[str, Any] = {}
        self.last_finish: str | None = None

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        self.on_total(len(requests))
        answers = []
        for request in requests:
            started = time.monotonic()
            text = super().generate_until([request], disable_tqdm=True)[0]
            self.on_answer(request.doc, text, time.monotonic() - started, self.last_usage, self.last_finish)
            answers.append(text)
        return answers

    def _create_payload(self, messages: list[dict], *args: Any, **kwargs: Any) -> dict:
        return super()._create_payload(messages, *args, **kwargs) | self.body

    def model_call(self, messages: Any, *, generate: bool = True, gen_kwargs: dict | None = None,
                   **kwargs: Any) -> dict | None:
        try:
            out = super().model_call(messages, generate=generate, gen_kwargs=gen_kwargs, **kwargs)
        except requests.RequestException as exc:
            raise EngineError(f"request to {self.base_url} failed: {_reason(exc)}") from None
        if not isinstance(out, dict) or not isinstance(out.get("choices"), list):
            raise EngineError(f"{self.base_url} answered without choices: {str(out)[:200]}")
        self.last_usage = out.get("usage") or {}
        self.last_finish = _answer_only(out)
        return out


def _answer_only(out: dict[str, Any]) -> str | None:
    """The first choice's finish reason; a choice with no content (all reasoning) gets "" as its answer.

    Reasoning (reasoning_content) is never read: only the answer's content is graded.
    """
    for choice in out["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict) and message.get("content") is None:
            message["content"] = ""
    first = out["choices"][0] if out["choices"] else {}
    return first.get("finish_reason") if isinstance(first, dict) else None


def _reason(exc: requests.RequestException) -> str:
    response = getattr(exc, "response", None)
    if response is not None:
        return f"HTTP {response.status_code}: {response.text[:200]}"
    return type(exc).__name__ + (f": {exc.args[0]}" if exc.args else "")


def reporting_chat_model(base_url: str, api_key: str | None, model: str, timeout_s: int,
                         on_total: Callable[[int], None], on_answer: OnAnswer,
                         body: dict[str, Any] | None = None) -> ReportingChatModel:
    """The model lm-eval talks to: the engine's /v1/chat/completions, greedy, one retry at most."""
    header = {"Authorization": f"Bearer {api_key}"} if api_key else None
    return ReportingChatModel(
        on_total, on_answer, body, base_url=f"{base_url.rstrip('/')}/v1/chat/completions", model=model,
        tokenizer_backend=None, tokenized_requests=False, num_concurrent=1, max_retries=2,
        timeout=timeout_s, header=header, think_end_token=THINK_END,
    )
