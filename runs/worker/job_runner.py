"""From a run to its job kind's core function (runs.core.registry), with what the job needs of the run."""
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from django.conf import settings

from engines.clients import EngineClient
from runs.core import registry
from runs.core.jobs.spec import AtLookahead
from runs.models import Run
from runs.worker.client_health import with_client_health
from runs.worker.engine_session import RunEngine
from runs.worker.provenance import record_provenance
from runs.worker.recorder import RunRecorder


async def run_job(
    client: EngineClient, run: Run, recorder: RunRecorder, engine_side: RunEngine | None
) -> dict[str, Any]:
    """Run the run's job kind through the measurement core; its summary, with its client health.

    `engine_side` is None for a job that uses no engine (a machine benchmark).
    """
    spec = registry.get(run.job)
    at_lookahead = None
    if spec.engine == "per-lookahead" and engine_side is not None:
        at_lookahead = _provenance_on_first_launch(run, engine_side)
    context = registry.JobContext(client, dict(run.params), job_config(run), recorder, at_lookahead,
                                  pace=recorder.health)
    return await with_client_health(spec.run(context), recorder.health)


def job_config(run: Run) -> registry.JobConfig:
    """What the job reads of the run's config."""
    config = run.config
    return registry.JobConfig(
        model=config.model, sampling=config.sampling(), seed=config.seed, engine_kind=config.engine.kind,
        api_key=config.engine.api_key or None, machine_bandwidth_gbps=config.engine.machine.bandwidth_gbps,
        thinking_budget=config.thinking_budget if config.thinking == config.Thinking.BUDGET else None,
        thinking_answer_budget=settings.SPARKDASH_THINKING_ANSWER_BUDGET,
        lookahead=config.lookahead,
    )


def _provenance_on_first_launch(run: Run, engine_side: RunEngine) -> AtLookahead:
    recorded = False

    @contextlib.asynccontextmanager
    async def at_lookahead(length: int) -> AsyncIterator[tuple[EngineClient, str]]:
        nonlocal recorded
        async with engine_side.at_lookahead(length) as (client, model):
            if not recorded:
                await record_provenance(client, run)
                recorded = True
            yield client, model

    return at_lookahead
