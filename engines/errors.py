"""The errors of talking to an engine, apart from the clients so that modules the clients use
(engines/metrics_text.py) can raise them without an import cycle; engines.clients re-exports them."""
from __future__ import annotations

__all__ = ["EngineError", "EngineHTTPError"]


class EngineError(Exception):
    """A request to an engine failed; the message is a reason a user can read."""


class EngineHTTPError(EngineError):
    """The engine answered with an HTTP error status (kept apart so callers can tell a missing endpoint)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status
