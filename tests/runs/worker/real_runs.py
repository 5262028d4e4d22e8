"""Running one run to its end on this process, as a worker would, for the real-engine tests."""
from __future__ import annotations

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
