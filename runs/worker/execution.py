"""Claiming a run for its machine, running its job through the core, and storing the outcome.

Safe to call twice for one run (a redelivered task): only one caller claims it.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, TypeVar

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from engines.clients import EngineClient, EngineError, client_for
from engines.clients.counters import spec_since
from engines.models import Machine
from measure import event_loop, pooled
from measure.catalog import ACCEPTANCE_BY_POSITION, LOG_ACCEPTANCE, TOKENS_PER_VERIFICATION
from measure.stats import figure_value
from measure.words import gettext_noop
from runs.core import registry
from runs.core.jobs.concurrency.pool import MeasuringProcessLost
from runs.core.jobs.quality_data import DatasetError
from runs.core.jobs.summary import SummaryError
from runs.core.outcomes import failed_share_warning
from runs.core.request_figures import ENGINE_COUNTERS
from runs.core.worded import warning, worded
from runs.live.broadcast import broadcast
from runs.models import Run
from runs.worker.acceptance import with_engine_acceptance
from runs.worker.client_health import client_bound_warning
from runs.worker.engine_session import RunEngine, release_engines_of
from runs.worker.guard import RunGuard
from runs.worker.job_runner import run_job
from runs.worker.machine_figures import above_ceiling_warning, store_machine_fields
from runs.worker.provenance import record_provenance, roofline_for
from runs.worker.recorder import RunCancelled, RunRecorder, load_run, retry_db
from runs.worker.telemetry import RunTelemetry, preheat_box, throttled_warning

log = logging.getLogger(__name__)

CLAIMED, BUSY, GONE, REFUSED = "claimed", "busy", "gone", "refused"
T = TypeVar("T")


class JobTimedOut(EngineError):
    """The job ran longer than the per-job timeout."""


def claim(run_id: int) -> str:
    """Move a queued run to running unless its machine already runs one (one job per box).

    A run whose machine's relay became active after it was queued fails with the relay's reason
    (REFUSED): starting its engine would pull the one engine out from under the team's traffic.
    """
    with transaction.atomic():
        run = Run.objects.filter(pk=run_id).only("status", "machine_id").first()
        if run is None or run.status != Run.Status.QUEUED:
            return GONE
        # Locking the machine row serialises claims for one box across workers.
        machine = Machine.objects.select_for_update().filter(pk=run.machine_id).first()
        busy = machine.relay_refusal() if machine is not None else None
        if busy:
            ended = Run.objects.end(run_id, Run.Status.FAILED, only=(Run.Status.QUEUED,), error=busy)
            outcome = REFUSED if ended else GONE
        else:
            outcome = _claim_on_locked_machine(run_id, run.machine_id)
    if outcome == REFUSED:  # its live page shows the reason without a reload
        async_to_sync(broadcast)(run_id, {"type": "run", "run": Run.objects.get(pk=run_id).to_dict()})
    return outcome


def _claim_on_locked_machine(run_id: int, machine_id: int) -> str:
    reap_lost_runs(machine_id)
    if Run.objects.filter(machine_id=machine_id, status=Run.Status.RUNNING).exists():
        return BUSY
    return CLAIMED if Run.objects.claim(run_id) else GONE  # not claimed: another worker got there first


def reap_lost_runs(machine_id: int | None = None) -> int:
    """Fail running runs whose worker stopped sending heartbeats (on one machine, or on all).

    Their managed engines, orphaned by the worker's death, are stopped and their sessions closed,
    so the machine can start the next run's engine.
    """
    limit = timedelta(seconds=settings.SPARKDASH_LOST_RUN_S)
    since = timezone.now() - limit
    stale = Run.objects.filter(status=Run.Status.RUNNING, heartbeat__lt=since)
    if machine_id is not None:
        stale = stale.filter(machine_id=machine_id)
    error = f"lost: its worker sent no heartbeat for {int(limit.total_seconds())} s (killed or stopped?)"
    reaped = 0
    for run_id in list(stale.values_list("pk", flat=True)):
        # Conditional: a heartbeat that arrived meanwhile, or another reaper, keeps it out.
        if Run.objects.fail_running(run_id, error, since=since):
            reaped += 1
            release_engines_of(run_id)
    return reaped


def execute(run_id: int) -> None:
    """Run a claimed run's job to the end and store the outcome; a claimed run never stays running."""
    try:
        run = Run.objects.select_related("config__engine__machine", "revision").get(pk=run_id)
        if run.revision is not None:
            # Runs with the settings it was queued with, whatever the config says now.
            run.config = run.revision.applied(run.config)
        event_loop.run(_execute_on_checked_connection(run))
    except Exception as exc:
        log.exception("run %s failed outside its job", run_id)
        Run.objects.fail_running(run_id, f"internal error: {exc!r}")


async def _execute_on_checked_connection(run: Run) -> None:
    # The async ORM runs on asgiref's shared sync thread, whose connection no Celery or request
    # hook ever checks: without this, one dropped connection fails every later run of the worker.
    await sync_to_async(close_old_connections)()
    try:
        await _execute(run)
    finally:
        await sync_to_async(close_old_connections)()


async def _execute(run: Run) -> None:
    engine = run.config.engine
    refusal = engine.url_refusal()
    if refusal:  # the worker contacts only URLs on the machine the engine is registered on
        recorder = RunRecorder(run.pk, settings.SPARKDASH_FLUSH_INTERVAL_S)
        error = f"engine URL {engine.base_url} refused: {refusal}"
        await _finish(run.pk, recorder, Run.Status.FAILED, {}, error)
        return
    client = client_for(engine.kind, engine.base_url, engine.api_key, request_timeout_s(run))
    recorder = RunRecorder(run.pk, settings.SPARKDASH_FLUSH_INTERVAL_S)
    guard = RunGuard(run.pk, settings.SPARKDASH_WATCH_INTERVAL_S, recorder)
    status, summary, error = Run.Status.FAILED, {}, ""
    try:
        await recorder.open()
        async with RunTelemetry(recorder) as telemetry:
            summary = await guard.run(_engine_and_job(client, run, recorder, telemetry))
        summary = registry.get(run.job).stored(summary)
        status = Run.Status.SUCCEEDED
    except SummaryError as exc:  # kept as it came, for whoever mends the job kind
        error = str(exc)
    except RunCancelled:
        status = Run.Status.CANCELLED
    except (EngineError, DatasetError, MeasuringProcessLost) as exc:
        error = str(exc)
    except Exception as exc:
        log.exception("run %s failed", run.pk)
        error = f"internal error: {exc!r}"
    finally:
        await client.aclose()
    await _finish(run.pk, recorder, status, summary, error)


def request_timeout_s(run: Run) -> float:
    """The per-request read timeout: how long an engine may send nothing before the request fails."""
    # Agent steps are not streamed: one read has to cover a whole long answer on a slow box.
    if registry.get(run.job).long_requests:
        return settings.SPARKDASH_AGENT_REQUEST_TIMEOUT_S
    return settings.SPARKDASH_REQUEST_TIMEOUT_S


async def _engine_and_job(
    client: EngineClient, run: Run, recorder: RunRecorder, telemetry: RunTelemetry
) -> dict[str, Any]:
    spec = registry.get(run.job)
    if spec.engine == "none":  # a machine benchmark: no engine started, probed or tailed
        await telemetry.baseline()
        summary = await _within_job_limit(run_job(client, run, recorder, None))
        telemetry.phase("done")
        summary["telemetry"] = telemetry.summary()
        await store_machine_fields(run, spec, summary)
        return summary
    async with RunEngine(run, start=spec.engine == "once") as engine_side:
        return await _within_job_limit(_measure(client, run, recorder, engine_side, telemetry))


async def _within_job_limit(job: Awaitable[T]) -> T:
    """The job, failed with JobTimedOut once it has run for SPARKDASH_JOB_TIMEOUT_S."""
    limit = settings.SPARKDASH_JOB_TIMEOUT_S
    try:
        async with asyncio.timeout(limit) as scope:
            return await job
    except TimeoutError:
        if not scope.expired():
            raise  # a timeout of the job's own
        raise JobTimedOut(
            f"job timed out: not finished after {limit:g} s (the per-job timeout, SPARKDASH_JOB_TIMEOUT_S)"
        ) from None


async def _measure(
    client: EngineClient, run: Run, recorder: RunRecorder, engine_side: RunEngine, telemetry: RunTelemetry
) -> dict[str, Any]:
    """Provenance, the idle baseline, pre-heating, then the job, with the engine's own counters
    read before and after it, and the run's telemetry summarised."""
    before, preheated = await _before_job(client, run, recorder, engine_side, telemetry)
    summary = await engine_side.run(run_job(client, run, recorder, engine_side))
    telemetry.phase("done")
    summary["telemetry"] = telemetry.summary()
    summary["preheat"] = preheated
    engine_side.warnings += throttled_warning(summary["telemetry"])
    # An engine that stopped answering after the job has no counters to read: no delta, not a failure.
    spec = await spec_since(client, before)
    summary[ENGINE_COUNTERS] = spec.summary() if spec else None
    if spec and summary.get(ACCEPTANCE_BY_POSITION) is None:
        summary[ACCEPTANCE_BY_POSITION] = spec.acceptance_by_position  # the run's counters, warm-up in
    await engine_side.read_log_now()  # the last request's lines, before the tail's next poll
    with_engine_acceptance(summary, engine_side.acceptance, engine_side.acceptance_by_length)
    summary["engine_startup_s"] = engine_side.startup_s
    summary["engine_startups"] = engine_side.startups
    measured, per_pass, note = roofline_inputs(summary)
    summary["roofline"] = await asyncio.to_thread(roofline_for, run.config, measured, per_pass)
    if summary["roofline"] and note:
        summary["roofline"]["note"] = note
    if summary["roofline"] and measured is not None and measured == summary.get("decode_tps_pooled"):
        summary["roofline"]["measured_pooled"] = True  # the page says which decode it holds up
    engine_side.warnings += _disagreements(summary) + _read_loop_warning(summary) + _counted_warning(summary)
    engine_side.warnings += above_ceiling_warning(summary["roofline"])
    engine_side.warnings += failed_share_warning(summary) + client_bound_warning(summary)
    return summary


async def _before_job(
    client: EngineClient, run: Run, recorder: RunRecorder, engine_side: RunEngine, telemetry: RunTelemetry
) -> tuple[str | None, dict[str, Any] | None]:
    """Everything between the engine's start and the job: the engine's counters just before it,
    and how pre-heating went (None when the config does not pre-heat)."""
    if engine_side.answering and engine_side.startup_s is not None:
        await recorder.on_sample("engine", {"startup_s": engine_side.startup_s})
    if engine_side.answering:  # a lookahead sweep launches its engine per length, inside the job
        await record_provenance(client, run)
    await telemetry.baseline()
    preheated = None
    if run.config.preheat_s:
        preheated = await preheat_box(client, run, telemetry, engine_side.answering)
    return (await client.counters_text() if engine_side.answering else None), preheated


DRAFTS_UNCOUNTED = "efficiency not stated: the engine drafted but reports no tokens per verification"


def roofline_inputs(summary: dict[str, Any]) -> tuple[float | None, float | None, str | None]:
    """The measured decode tok/s and tokens per verification to hold against the roofline, and why
    there is no efficiency when the engine drafted without saying how many tokens each pass
    verified (Ollama: its log counts drafts, not passes); against the plain ceiling a drafting
    run would read as 300 %. A drafting run holds its pooled decode speed against the ceiling x
    its pooled tokens per verification, like for like (docs/metrics.md, Ceiling with drafts)."""
    measured = figure_value(summary.get("decode_tps_client"))
    per_pass = figure_value(summary.get(TOKENS_PER_VERIFICATION))
    drafted = (summary.get(LOG_ACCEPTANCE) or {}).get("generated") or (
        summary.get(ENGINE_COUNTERS) or {}
    ).get(pooled.DRAFT_TOKENS)
    if per_pass is None and drafted:
        return None, None, DRAFTS_UNCOUNTED
    if per_pass is not None and summary.get("decode_tps_pooled"):
        measured = summary["decode_tps_pooled"]
    return measured, per_pass, None


def _disagreements(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """A warning for each of the client's figures that the engine's own contradicts."""
    found = []
    check, ttft = summary.get("cross_check"), summary.get("ttft_check")
    if check and not check["agree"]:
        found.append(warning("cross-check", DECODE_DISAGREES, client=f"{check['client_tps']:.2f}",
                             engine=f"{check['engine_tps']:.2f}", diff=f"{check['diff_pct']:+.1f}"))
    if ttft and not ttft["agree"]:
        found.append(warning("ttft-check", TTFT_DISAGREES, client=f"{ttft['client_s'] * 1e3:.0f}",
                             engine=f"{ttft['engine_s'] * 1e3:.0f}", diff=f"{ttft['diff_pct']:+.1f}"))
    return found


def _counted_warning(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """A warning when SparkDash, not the engine, counted the tokens (runs.core.request_figures.send)."""
    if "tokenizer" not in (summary.get("output_tokens_sources") or []):
        return []
    return [warning("counted-by-sparkdash", TOKENS_COUNTED)]


TOKENS_COUNTED = gettext_noop(
    "the engine sent no token counts: SparkDash counted each answer's tokens with the engine's "
    "tokenizer, so the token counts and decode speeds are SparkDash's, over the client's clock"
)
DECODE_DISAGREES = gettext_noop(
    "client decode speed %(client)s tok/s and the engine's own %(engine)s tok/s differ by %(diff)s %% "
    "(more than 5 %%)"
)
TTFT_DISAGREES = gettext_noop(
    "client time to first token %(client)s ms and the engine's own %(engine)s ms differ by %(diff)s %% "
    "(more than 10 %%)"
)


def _read_loop_warning(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """A warning when an agent run's watchdog caught a read loop (the agent-table summary's read_loop)."""
    loop = summary.get("read_loop")
    if not loop:
        return []
    text = READ_LOOP[bool(loop.get("noted_at_step")), bool(loop.get("withdrawn_at_step"))]
    outcome = worded(summary.get("outcome") or "\u2014")  # a stored identifier, said where shown
    return [warning("read-loop", text, file=loop["file"], note_at=loop.get("note_at"),
                    noted=loop.get("noted_at_step"), withdraw_at=loop.get("withdraw_at"),
                    withdrawn=loop.get("withdrawn_at_step"), outcome=outcome)]


# One whole sentence for each of what the watchdog did (noted the loop, withdrew the tools).
READ_LOOP = {
    (True, True): gettext_noop(
        "the agent kept reading %(file)s; the watchdog noted the read loop at read %(note_at)s "
        "(step %(noted)s) and withdrew the tools at read %(withdraw_at)s (step %(withdrawn)s); "
        "outcome %(outcome)s"),
    (True, False): gettext_noop(
        "the agent kept reading %(file)s; the watchdog noted the read loop at read %(note_at)s "
        "(step %(noted)s); outcome %(outcome)s"),
    (False, True): gettext_noop(
        "the agent kept reading %(file)s; the watchdog withdrew the tools at read %(withdraw_at)s "
        "(step %(withdrawn)s); outcome %(outcome)s"),
    (False, False): gettext_noop("the agent kept reading %(file)s; the watchdog ; outcome %(outcome)s"),
}


async def _finish(run_id: int, recorder: RunRecorder, status: str, summary: dict, error: str) -> None:
    """Store the last samples and the outcome, each retried while the database restarts."""
    try:
        await recorder.close()
    except RunCancelled:
        status = Run.Status.CANCELLED
    fields: dict[str, Any] = {"finished": timezone.now(), "summary": summary, "error": error}
    run = await retry_db(lambda: _store_outcome(run_id, status, fields), f"run {run_id} outcome")
    await broadcast(run_id, {"type": "run", "run": run.to_dict()})


async def _store_outcome(run_id: int, status: str, fields: dict[str, Any]) -> Run:
    # Repeatable: after a lost connection the first try may have stored the outcome already.
    # Not running any more (cancelled meanwhile, or stored by a try whose answer was lost): keeps that status.
    await sync_to_async(Run.objects.end)(run_id, status, only=(Run.Status.RUNNING,), **fields)
    return await load_run(run_id)
