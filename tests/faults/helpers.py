"""Helpers for the fault tests: managed simulator engines, the machine's worker, waiting on rows.

A managed simulator is a real engine process (`manage.py simengine`) that SparkDash starts
and stops per run, so a test can kill it, or kill the worker that started it.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.conf import settings

from engines.models import Engine, EngineConfig, EngineSession, Machine
from runs.models import Sample
from tests.factories import EngineConfigFactory, MachineFactory
from tests.real_engine import free_port
from tests.runs.celery_helpers import celery_worker

T = TypeVar("T")

__all__ = ["machine_worker", "managed_sim", "open_session", "samples_of", "wait_for"]


def managed_sim(flags: str, machine: Machine | None = None, engine: Engine | None = None) -> EngineConfig:
    """A config of a managed simulator engine (a new one on a new machine unless `engine` is given)."""
    if engine is not None:
        return EngineConfigFactory(engine=engine, model="demo", extra_flags=flags)
    machine = machine or MachineFactory(name=f"faults-{uuid.uuid4().hex[:10]}")
    return EngineConfigFactory(
        model="demo",
        extra_flags=flags,
        engine__machine=machine,
        engine__simulator=True,
        engine__launch=Engine.Launch.MANAGED,
        engine__base_url=f"http://127.0.0.1:{free_port()}",
    )


@contextmanager
def machine_worker(machine: Machine, name: str, pool: str = "solo") -> Iterator[object]:
    """The machine's worker: a real Celery worker on its queue, or the in-process one (nothing to start)."""
    if settings.SPARKDASH_WORKER != "celery":
        yield None
        return
    with celery_worker(machine.queue_name, name=name, pool=pool) as worker:
        yield worker


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 30.0) -> T:
    """Poll `probe` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout_s} s: {what}")


def open_session(run_id: int) -> EngineSession | None:
    """The run's engine session once its engine runs and is healthy (pid recorded), else None."""
    return EngineSession.objects.filter(run_id=run_id, stopped__isnull=True, startup_s__isnull=False).first()


def samples_of(run_id: int) -> list[int]:
    """The seqs of a run's stored samples, in order."""
    return list(Sample.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True))
