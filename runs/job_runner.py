"""From a run's job kind and parameters to the measurement core's job objects, and back."""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from engines.clients import EngineClient
from runs.core.agent_table import AgentTableJob, load_fixture, run_agent_table
from runs.core.concurrency import ConcurrencyJob, run_concurrency
from runs.core.lookahead import LookaheadJob, run_lookahead
from runs.core.mmlu_pro import MmluProJob, run_mmlu_pro
from runs.core.needle import NeedleJob, ollama_calibrator, openai_tokenizer, run_needle
from runs.core.prefix_cache import PrefixCacheJob, run_prefix_cache
from runs.core.quality_data import SAMPLE_DATASET, evalplus_download, sample_path
from runs.core.replay import ReplayJob, run_replay
from runs.core.speed import SpeedJob, run_speed
from runs.engine_session import RunEngine
from runs.models import Run
from runs.provenance import record_provenance
from runs.recorder import RunRecorder


async def run_job(
    client: EngineClient, run: Run, recorder: RunRecorder, engine_side: RunEngine
) -> dict[str, Any]:
    """Dispatch on the run's job kind to the measurement core."""
    if run.job == Run.Job.SPEED:
        return await run_speed(client, speed_job(run), recorder)
    if run.job == Run.Job.LOOKAHEAD:
        lookahead = LookaheadJob(speed_job(run), tuple(run.params.get("lengths", (0, 2, 4, 8, 12))))
        return await run_lookahead(_provenance_on_first_launch(run, engine_side), lookahead, recorder)
    params, model = run.params, run.config.model
    if run.job == Run.Job.REPLAY:
        replay = ReplayJob(params["requests"], params["reps"], model, params.get("warmup", 1))
        return await run_replay(client, replay, recorder)
    if run.job == Run.Job.CONCURRENCY:
        levels = tuple(params.get("levels", (1, 2, 4, 8, 16)))
        sweep = ConcurrencyJob(model, levels, params["answer_tokens"], params["reps"], run.config.sampling())
        return await run_concurrency(client, sweep, recorder)
    if run.job == Run.Job.PREFIX_CACHE:
        probe = PrefixCacheJob(model, params["steps"], params["bytes_per_step"], params["answer_tokens"])
        return _with_cache_fix(await run_prefix_cache(client, probe, recorder), run)
    if run.job == Run.Job.AGENT_TABLE:
        table = AgentTableJob(model, load_fixture(params["fixture"]).root, params["max_steps"],
                              params["answer_tokens"], run.config.sampling())
        return await run_agent_table(client, table, recorder)
    if run.job == Run.Job.NEEDLE:
        return await _run_needle(client, run, recorder)
    if run.job in (Run.Job.MMLU_PRO, Run.Job.EVALPLUS):
        return await _run_quality(client, run, recorder)
    raise ValueError(f"unknown job {run.job!r}")


async def _run_needle(client: EngineClient, run: Run, recorder: RunRecorder) -> dict[str, Any]:
    """Haystacks sized by the engine's own tokenizer (/tokenize; Ollama: calibrated)."""
    params, config = run.params, run.config
    extra: dict[str, Any] = {}
    if config.engine.kind == "ollama":
        # Ollama would cut a long prompt to its default context without an explicit num_ctx.
        extra = {"options": {"num_ctx": max(params["lengths"]) + params["answer_tokens"] + 512}}
        tokenizer = ollama_calibrator(client, config.model, extra)
    else:
        tokenizer = openai_tokenizer(client, config.model)
    job = NeedleJob(config.model, tuple(params["lengths"]), tuple(params["depths"]), config.seed,
                    params["answer_tokens"], extra=extra)
    return await run_needle(client, job, recorder, tokenizer)


async def _run_quality(client: EngineClient, run: Run, recorder: RunRecorder) -> dict[str, Any]:
    """lm-eval's MMLU-Pro or EvalPlus against the engine's OpenAI-compatible /v1 (Ollama's too)."""
    params, config = run.params, run.config
    api_key = config.engine.api_key or None
    if run.job == Run.Job.MMLU_PRO:
        dataset = _dataset(params.get("dataset"), "mmlu_pro")
        limit = params.get("limit")
        mmlu = MmluProJob(config.model, dataset, limit, params["num_fewshot"], params["max_tokens"])
        return await run_mmlu_pro(client.base_url, api_key, mmlu, recorder)
    # EvalPlus (and the openai SDK) take seconds to import: only a worker that runs the job pays.
    from runs.core.evalplus_job import EvalPlusJob, run_evalplus

    suite = params["suite"]
    dataset = _dataset(params.get("dataset"), f"{suite}_plus")
    if not dataset:
        dataset = await asyncio.to_thread(evalplus_download, suite)
    evalplus = EvalPlusJob(config.model, suite, dataset, params.get("limit"), params["max_tokens"])
    return await run_evalplus(client.base_url, api_key, evalplus, recorder)


def _dataset(value: str | None, benchmark: str) -> str | None:
    return sample_path(benchmark) if value == SAMPLE_DATASET else value


CACHE_FIX = {
    "llama-server": "a larger --cache-ram N (MiB; -1 = no limit), or LLAMA_ARG_CACHE_RAM",
    "ollama": "set LLAMA_ARG_CACHE_RAM (MiB) in the ollama serve environment and restart it",
    "vllm": "more KV-cache room (--gpu-memory-utilization, --max-model-len), prefix caching on",
    "sglang": "give the radix cache more room (--mem-fraction-static) or check --disable-radix-cache is off",
}


def _with_cache_fix(summary: dict[str, Any], run: Run) -> dict[str, Any]:
    """A detected discard comes with the fix for this engine kind."""
    summary["fix"] = CACHE_FIX.get(run.config.engine.kind) if summary.get("cache_discard_detected") else None
    return summary


def speed_job(run: Run) -> SpeedJob:
    """The speed job's requests with the config's fixed sampling and the run's parameters."""
    sampling = run.config.sampling() | {k: v for k, v in run.params.items() if k == "max_tokens"}
    return SpeedJob(
        model=run.config.model,
        reps=run.params.get("reps", 3),
        warmup=run.params.get("warmup", 1),
        sampling=sampling,
    )


def _provenance_on_first_launch(run: Run, engine_side: RunEngine) -> Any:
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
