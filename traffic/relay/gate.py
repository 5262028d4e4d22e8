"""Who may use the relay: the relay token a client presents, checked before anything reaches the engine.

A client presents the machine's relay token as ``Authorization: Bearer <token>`` (what OpenAI
clients send as their API key, and Ollama's Python client as ``OLLAMA_API_KEY``) or as
``X-SparkDash-Relay-Token: <token>``. The relay asks its gate, a plain callable the relay command
gives it (traffic.gate: the machine's token digests, kept in memory), for an :class:`Admission`:

- ``REFUSED``: a 401 before the body is read; nothing is sent to the engine.
- ``WITH_KEY``: the request presented a live token; the engine's stored API key is added.
- ``WITHOUT_KEY``: the relay is open (on loopback, no token issued); it forwards without the key.

Nothing of the client's request headers is forwarded, so the token never reaches the engine.
"""
from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["REFUSED_MESSAGE", "TOKEN_HEADER", "Admission", "Gate", "Refusals", "open_gate", "presented_token"]

log = logging.getLogger(__name__)

TOKEN_HEADER = b"x-sparkdash-relay-token"
REFUSED_MESSAGE = (
    "the relay refused this request: it carries no valid relay token for this machine. Send it as "
    "'Authorization: Bearer <token>' (an OpenAI client's API key, OLLAMA_API_KEY for Ollama's) or "
    "as 'X-SparkDash-Relay-Token: <token>'; a team admin issues tokens on the machine's Traffic page."
)
LOG_EVERY_S = 10.0  # refusals are counted, and logged at most this often (a flood stays one line)


class Admission(enum.Enum):
    """What the gate decided for one request."""

    REFUSED = "refused"
    WITH_KEY = "with key"
    WITHOUT_KEY = "without key"


Gate = Callable[[str], Admission]


def open_gate(token: str) -> Admission:
    """The gate of a relay that checks no token: every request goes on, never with the stored key."""
    return Admission.WITHOUT_KEY


def presented_token(scope: MutableMapping[str, Any]) -> str:
    """The token a request presents ("" when none): X-SparkDash-Relay-Token, else a Bearer
    Authorization."""
    headers = dict(scope.get("headers") or [])
    own = headers.get(TOKEN_HEADER)
    if own is not None:
        return own.decode("latin-1").strip()
    scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


class Refusals:
    """Refused requests, counted; one log line per LOG_EVERY_S at most (never the token)."""

    def __init__(self) -> None:
        self.count = 0
        self._unlogged = 0
        self._logged_at = float("-inf")

    def note(self, client: str) -> None:
        """One more refusal, from `client` (its address and user agent)."""
        self.count += 1
        self._unlogged += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_S:
            log.warning("refused %d request(s) without a valid relay token, the latest from %s",
                        self._unlogged, client or "an unknown client")
            self._unlogged, self._logged_at = 0, now
