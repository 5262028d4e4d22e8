"""The event loop a run's measuring loop runs on: uvloop's (libuv, in C) unless a caller asks for asyncio's.

At one stream every token is a wake of the loop: the socket becomes readable, the loop's
selector returns, the read is dispatched. On this project's 2-core machine asyncio's pure-Python
loop spent most of a bare client's CPU per token on that machinery, and uvloop runs the same
wake in C (README, "The event loop"). Nothing else changes: the same asyncio API, the same
streams, the same stamps taken where the bytes are read.

Plain Python, no Django: the worker's run (runs.worker.execution), the split level's measuring
processes (runs.core.jobs.concurrency.child) and the recorder's drain thread (runs.worker.handoff)
all take their loop from here.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import uvloop

__all__ = ["LOOP_KINDS", "new_loop", "run"]

T = TypeVar("T")

LoopFactory = Callable[[], asyncio.AbstractEventLoop]
# Each loop a caller may name (a benchmark's A/B); the product always runs on "uvloop".
LOOP_KINDS: dict[str, LoopFactory] = {"uvloop": uvloop.new_event_loop, "asyncio": asyncio.new_event_loop}


def new_loop(kind: str = "uvloop") -> asyncio.AbstractEventLoop:
    """A new event loop of `kind` (a key of LOOP_KINDS), not set as any thread's current loop."""
    return LOOP_KINDS[kind]()


def run(coro: Coroutine[Any, Any, T], kind: str = "uvloop") -> T:
    """Run `coro` to its end on a new loop of `kind`, as asyncio.run does (then close the loop)."""
    with asyncio.Runner(loop_factory=LOOP_KINDS[kind]) as runner:
        return runner.run(coro)
