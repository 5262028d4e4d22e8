"""Fixtures for the runs tests: configs on fresh machines, each backed by a live simulator."""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from engines.models import EngineConfig
from engines.simulator import SimProfile, serve_in_thread
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory

MakeSimConfig = Callable[..., EngineConfig]


@pytest.fixture
def sim_config(transactional_db) -> Iterator[MakeSimConfig]:
    """Make a config on a new machine whose llama-server engine is a simulator serving `profile`.

    Machine names get a random suffix, so their Celery queues are new to Redis: a message
    left there by an earlier, interrupted test can never reach this test's workers.
    """
    with ExitStack() as stack:

        def make(profile: SimProfile, prefix: str = "box", **config_fields) -> EngineConfig:
            sim = stack.enter_context(serve_in_thread(profile))
            machine = MachineFactory(name=f"{prefix}-{uuid.uuid4().hex[:10]}")
            engine = EngineFactory(machine=machine, kind="llama-server", base_url=sim.url, simulator=True)
            return EngineConfigFactory(engine=engine, **config_fields)

        yield make


@pytest.fixture
def inprocess(settings) -> None:
    """Runs execute on this process's worker thread (bench waits for them here)."""
    settings.SPARKDASH_WORKER = "inprocess"
