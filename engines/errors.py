"""The errors of talking to an engine, apart from the clients so that modules the clients use
(engines/counters_text.py) can raise them without an import cycle; engines.clients re-exports them.

The subclasses say what failure it was, so that a run can record a failed request by its
reason (runs/core/outcomes.py) and tell a dead engine from one bad answer.
"""
from __future__ import annotations

__all__ = [
    "EngineCut",
    "EngineError",
    "EngineHTTPError",
    "EngineMalformed",
    "EngineTimeout",
    "EngineUnreachable",
    "NoTokenCount",
]


class EngineError(Exception):
    """A request to an engine failed; the message is a reason a user can read."""

    def reworded(self, message: str) -> EngineError:
        """The same error (its class and fields, e.g. an HTTP status) with another message."""
        copy = type(self).__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.args = (message,)
        return copy


class EngineHTTPError(EngineError):
    """The engine answered with an HTTP error status (kept apart so callers can tell a missing endpoint)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class EngineUnreachable(EngineError):
    """No connection to the engine at all (refused, no route, bad URL): nothing was asked of it."""


class EngineTimeout(EngineError):
    """The engine took longer than the client's limit to answer."""


class EngineMalformed(EngineError):
    """The engine's answer could not be read (not JSON, not UTF-8, an unknown line)."""


class EngineCut(EngineError):
    """The answer stopped before its end (the stream closed mid-answer)."""


class NoTokenCount(EngineError):
    """The answer came whole but without the engine's count of generated tokens."""
