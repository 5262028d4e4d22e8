"""The speed job's prompt set: tool-call, table and long free-text shapes, in English and Japanese.

Structured output (tool calls, tables) accepts speculative drafts far more often than free
prose, so a speed run measures each shape and reports it per output type.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SYSTEM = "You are a concise assistant for a software team. Do not think aloud; answer directly."


@dataclass(frozen=True)
class Prompt:
    """One request of the prompt set, with the output shape it asks for."""

    name: str
    output_type: str  # tool-call | table | prose-en | prose-ja
    lang: str
    user: str

    def messages(self) -> list[dict[str, Any]]:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": self.user}]


SPEED_PROMPTS: tuple[Prompt, ...] = (
    Prompt(
        "tool-call-en",
        "tool-call",
        "en",
        "Call the tool read_file to open src/server/routes.py lines 120 to 180. Answer only with "
        'a JSON object {"name": ..., "arguments": {"path": ..., "start": ..., "end": ...}}.',
    ),
    Prompt(
        "tool-call-ja",
        "tool-call",
        "ja",
        "ツール search_code を使って、リポジトリ内で「def create_order」を検索してください。"
        '{"name": ..., "arguments": {"pattern": ..., "path": ...}} の JSON だけで答えてください。',
    ),
    Prompt(
        "table-en",
        "table",
        "en",
        "Write a markdown table with columns method, path, line for these routes of a web app: "
        "GET /users at line 12, POST /users at 30, GET /users/{id} at 41, DELETE /users/{id} at 58, "
        "GET /orders at 77, POST /orders at 95, PATCH /orders/{id} at 120, GET /health at 140.",
    ),
    Prompt(
        "table-ja",
        "table",
        "ja",
        "次の API を「メソッド、パス、行番号」の3列の Markdown 表にしてください: GET /items 10行目、"
        "POST /items 25行目、GET /items/{id} 40行目、PUT /items/{id} 61行目、DELETE /items/{id} 83行目。",
    ),
    Prompt(
        "prose-en",
        "prose-en",
        "en",
        "Explain to a new teammate, in several paragraphs of plain prose, why a language model's "
        "decoding speed on one workstation is limited by memory bandwidth rather than compute, and "
        "what speculative decoding changes about that.",
    ),
    Prompt(
        "prose-ja",
        "prose-ja",
        "ja",
        "新しく入ったチームメンバーに向けて、ワークステーション1台での言語モデルの生成速度が計算性能ではなく"
        "メモリ帯域で決まる理由と、投機的デコードがそれをどう変えるかを、数段落の文章で説明してください。",
    ),
)

OUTPUT_TYPES = ("tool-call", "table", "prose-en", "prose-ja")


def prompt_set_id(prompts: Sequence[Prompt]) -> str:
    """A short digest of the messages a prompt set sends: runs that sent the same set record the same id."""
    texts = [prompt.messages() for prompt in prompts]
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode()).hexdigest()[:12]
