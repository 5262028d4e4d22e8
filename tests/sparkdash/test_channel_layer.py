"""The channel layer the settings choose, as a watcher's socket uses it. With Redis: an idle
receive keeps waiting past one blocking pop, and a cancelled receive ends at once, wherever in
its commands the cancel lands. Each test builds its own layer from the settings, so that closing
its connections never touches the layer the rest of the process shares."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from channels.layers import channel_layers
from channels_redis.core import RedisChannelLayer


@pytest.fixture
async def layer() -> AsyncIterator[RedisChannelLayer]:
    built = channel_layers.make_backend("default")
    if not isinstance(built, RedisChannelLayer):
        pytest.skip("the Redis channel layer only (REDIS_URL set)")
    yield built
    await built.close_pools()


async def test_it_keeps_an_idle_watchers_receive_waiting_past_one_blocking_pop(layer):
    channel = await layer.new_channel()
    receiving = asyncio.ensure_future(layer.receive(channel))
    try:
        # redis-py 8 stops reading after 5 s, as long as one blocking pop: the receive raised
        # TimeoutError and closed every idle watcher's socket (CI, December 7 2026).
        await asyncio.sleep(layer.brpop_timeout + 2)
        assert not receiving.done(), receiving.exception()
        await layer.send(channel, {"type": "run.event", "message": {"n": 1}})
        assert (await asyncio.wait_for(receiving, 5))["message"] == {"n": 1}
    finally:
        receiving.cancel()


@pytest.mark.parametrize("turns", range(30))
async def test_it_ends_a_cancelled_receive_at_once(layer, turns):
    # With a read timeout set, redis-py sends through asyncio.wait_for, which on Python 3.11 drops a
    # cancel that lands as the send completes; the receive then pops on, one blocking pop after
    # another, and a socket test's teardown hung 300 s (CI, December 7 2026).
    channel = await layer.new_channel()
    receiving = asyncio.ensure_future(layer.receive(channel))
    for _ in range(turns):
        await asyncio.sleep(0)
    receiving.cancel()
    await asyncio.wait({receiving}, timeout=1)
    ended = receiving.done()
    if not ended:
        await layer.close_pools()  # its next read fails, so that it leaves no task behind
        await asyncio.wait({receiving}, timeout=10)
    assert ended, "the cancelled receive still ran after 1 s"
