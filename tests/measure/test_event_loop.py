"""The measuring loop's event loop: uvloop's by default, asyncio's when a caller asks, closed after."""
from __future__ import annotations

import asyncio

import pytest
import uvloop

from measure import event_loop

pytestmark = pytest.mark.backend_free


async def _running_loop() -> asyncio.AbstractEventLoop:
    await asyncio.sleep(0)
    return asyncio.get_running_loop()


def test_it_runs_a_coroutine_to_its_end_on_uvloop():
    loop = event_loop.run(_running_loop())
    assert isinstance(loop, uvloop.Loop)
    assert loop.is_closed()


def test_it_runs_on_asyncios_own_loop_when_asked():
    loop = event_loop.run(_running_loop(), kind="asyncio")
    assert not isinstance(loop, uvloop.Loop)
    assert isinstance(loop, asyncio.BaseEventLoop)


def test_it_gives_a_new_loop_no_thread_runs_yet():
    loop = event_loop.new_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
        assert not loop.is_running()
        assert loop.run_until_complete(_running_loop()) is loop
    finally:
        loop.close()


def test_it_refuses_a_loop_kind_it_does_not_know():
    with pytest.raises(KeyError):
        event_loop.new_loop("trio")
