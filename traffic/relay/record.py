"""The record of one relayed request: what the client saw and what the engine said about it."""
from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ToolCall", "TrafficRecord", "new_key"]


def new_key() -> str:
    """A record's unique key: the writer's retries store a record once, whatever fails between."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class ToolCall:
    """One tool call in an answer: the tool's name and the path it names, if any (never its content)."""

    name: str
    path: str = ""


@dataclass
class TrafficRecord:
    """One relayed request. Times are seconds; None where neither side could tell.

    - arrived: wall-clock epoch seconds when the request reached the relay.
    - ttft_s: arrival to the first content (or reasoning, or tool-call) chunk sent to the client.
    - generation_s: first to last generated chunk, as the client saw it.
    - e2e_s: arrival to the last byte sent to the client.
    - decode_tps_client: (output tokens - 1) / generation_s; decode_tps_engine: the engine's own.
    - new_prompt_tokens: prompt tokens the engine had to compute (prompt minus cached).
    - output_type: "tool-call", "table", "prose-en", "prose-ja", or "" for no answer.
    - conversation: a key shared by the requests of one conversation (its first messages).
    - error: "" for a clean answer, else why the client got an error (status says which).
    """

    key: str
    front: str  # "ollama" or "openai": the API the client spoke
    path: str  # the client's path, e.g. "/api/chat"
    client: str  # peer address and user agent
    model: str
    arrived: float
    upstream: str = ""  # the engine's wire API: "ollama" or "openai"
    status: int = 200
    ttft_s: float | None = None
    generation_s: float | None = None
    e2e_s: float | None = None
    decode_tps_client: float | None = None
    decode_tps_engine: float | None = None
    prompt_tokens: int | None = None
    new_prompt_tokens: int | None = None
    output_tokens: int | None = None
    output_type: str = ""
    draft_tokens: int | None = None
    accepted_tokens: int | None = None
    finish_reason: str = ""
    error: str = ""
    conversation: str = ""
    turn: int = 0  # messages in the request: a conversation's later steps have more
    tool_calls: list[ToolCall] = field(default_factory=list)
    # Captured only when the machine opts in, each capped in size (see the relay's options).
    request_body: dict[str, Any] | None = None
    response_text: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The record as plain JSON-ready values."""
        return asdict(self)
