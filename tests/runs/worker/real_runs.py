"""Running one run to its end on this process, as a worker would, for the real-engine tests."""
from __future__ import annotations

import threading
import time
from typing import Any

from runs.models import Run
from runs.worker import execution
from tests.factories import RunFactory


def run_to_end(config: Any, params: dict[str, Any] | None = None, job: str = "speed") -> Run:
    """Claim and execute a run of `job` on `config`; the run as it ended."""
    run = RunFactory(config=config, job=job, params=params or {"reps": 1, "warmup": 1})
    assert execution.claim(run.pk) == execution.CLAIMED
    execution.execute(run.pk)
    run.refresh_from_db()
    return run


def request_rows(run: Run) -> list[dict[str, Any]]:
    """The run's per-request samples, in order."""
    return [s.values for s in run.samples.filter(kind="request").order_by("seq")]


def kill_mid_run(config: Any, kill: Any) -> tuple[Run, float]:
    """Start a speed run on `config`, call `kill()` while its second request streams; the run as it
    ended and the seconds from the kill to its end."""
    run = RunFactory(config=config, params={"reps": 3, "warmup": 0, "max_tokens": 200})
    assert execution.claim(run.pk) == execution.CLAIMED
    worker = threading.Thread(target=execution.execute, args=(run.pk,))
    worker.start()
    deadline = time.monotonic() + 300
    while not run.samples.filter(kind="request").exists():
        assert time.monotonic() < deadline, "no request finished"
        time.sleep(0.2)
    time.sleep(0.5)  # the next request is streaming now
    killed = time.monotonic()
    kill()
    worker.join(30)
    run.refresh_from_db()
    return run, time.monotonic() - killed
