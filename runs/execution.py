"""Claiming a run for its machine, running its job through the core, and storing the outcome.

Safe to call twice for one run (a redelivered task): only one caller claims it.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import subprocess
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engines.clients import EngineClient, EngineError, client_for
from engines.models import EngineConfig, Machine
from runs import live
from runs.core.speed import SpeedJob, run_speed
from runs.models import Run
from runs.recorder import RunCancelled, RunRecorder, load_run

log = logging.getLogger(__name__)

CLAIMED, BUSY, GONE = "claimed", "busy", "gone"


def claim(run_id: int) -> str:
    """Move a queued run to running unless its machine already runs one (one job per box)."""
    with transaction.atomic():
        run = Run.objects.filter(pk=run_id).only("status", "machine_id").first()
        if run is None or run.status != Run.Status.QUEUED:
            return GONE
        # Locking the machine row serialises claims for one box across workers.
        Machine.objects.select_for_update().filter(pk=run.machine_id).first()
        reap_lost_runs(run.machine_id)
        if Run.objects.filter(machine_id=run.machine_id, status=Run.Status.RUNNING).exists():
            return BUSY
        now = timezone.now()
        claimed = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
            status=Run.Status.RUNNING, started=now, heartbeat=now
        )
    # Nothing got updated: another worker got there first.
    return CLAIMED if claimed == 1 else GONE


def reap_lost_runs(machine_id: int) -> int:
    """Fail running runs on the machine whose worker stopped sending heartbeats."""
    limit = timedelta(seconds=settings.SPARKDASH_LOST_RUN_S)
    stale = Run.objects.filter(
        machine_id=machine_id, status=Run.Status.RUNNING, heartbeat__lt=timezone.now() - limit
    )
    return stale.update(
        status=Run.Status.FAILED,
        finished=timezone.now(),
        error=f"lost: its worker sent no heartbeat for {int(limit.total_seconds())} s (killed or stopped?)",
    )


def execute(run_id: int) -> None:
    """Run a claimed run's job to the end and store the outcome; a claimed run never stays running."""
    try:
        run = Run.objects.select_related("config__engine__machine").get(pk=run_id)
        asyncio.run(_execute(run))
    except Exception as exc:
        log.exception("run %s failed outside its job", run_id)
        Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(
            status=Run.Status.FAILED, finished=timezone.now(), error=f"internal error: {exc!r}"
        )


async def _execute(run: Run) -> None:
    engine = run.config.engine
    client = client_for(engine.kind, engine.base_url, engine.api_key)
    recorder = RunRecorder(run.pk, settings.SPARKDASH_FLUSH_INTERVAL_S)
    status, summary, error = Run.Status.FAILED, {}, ""
    try:
        await recorder.open()
        provenance = await collect_provenance(client, run.config)
        await Run.objects.filter(pk=run.pk).aupdate(provenance=provenance)
        summary = await run_job(client, run, recorder)
        status = Run.Status.SUCCEEDED
    except RunCancelled:
        status = Run.Status.CANCELLED
    except EngineError as exc:
        error = str(exc)
    except Exception as exc:
        log.exception("run %s failed", run.pk)
        error = f"internal error: {exc!r}"
    finally:
        await client.aclose()
    await _finish(run.pk, recorder, status, summary, error)


async def _finish(run_id: int, recorder: RunRecorder, status: str, summary: dict, error: str) -> None:
    try:
        await recorder.flush()
    except RunCancelled:
        status = Run.Status.CANCELLED
    fields: dict[str, Any] = {"finished": timezone.now(), "summary": summary, "error": error}
    updated = await Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).aupdate(status=status, **fields)
    if not updated:  # cancelled meanwhile: keep that status, record when it stopped
        await Run.objects.filter(pk=run_id).aupdate(finished=fields["finished"])
    run = await load_run(run_id)
    await live.broadcast(run_id, {"type": "run", "run": run.to_dict()})


async def run_job(client: EngineClient, run: Run, recorder: RunRecorder) -> dict[str, Any]:
    """Dispatch on the run's job kind to the measurement core."""
    if run.job == Run.Job.SPEED:
        sampling = run.config.sampling() | {k: v for k, v in run.params.items() if k == "max_tokens"}
        job = SpeedJob(
            model=run.config.model,
            reps=run.params.get("reps", 3),
            warmup=run.params.get("warmup", 1),
            sampling=sampling,
        )
        return await run_speed(client, job, recorder)
    raise ValueError(f"unknown job {run.job!r}")


async def collect_provenance(client: EngineClient, config: EngineConfig) -> dict[str, Any]:
    """What produced the figures: engine version, model id/digest, config snapshot, harness commit.

    An unreachable engine raises EngineError here, before any request is measured.
    """
    version = await client.version()
    model = await client.model_info(config.model)
    return {
        "engine_version": version,
        "model": model,
        "config": config.snapshot(),
        "harness_commit": harness_commit(),
        "recorded": timezone.now().isoformat(),
    }


@functools.cache
def harness_commit() -> str:
    """The SparkDash commit measuring (SPARKDASH_HARNESS_COMMIT, else git), or "unknown"."""
    if settings.SPARKDASH_HARNESS_COMMIT:
        return settings.SPARKDASH_HARNESS_COMMIT
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"
