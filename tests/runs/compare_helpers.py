"""Succeeded factory runs with known figures, for the compare page, the report and /metrics."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from engines.models import EngineConfig
from runs.core.jobs.prompts import SPEED_PROMPTS, prompt_set_id
from runs.models import Run
from tests.factories import EngineConfigFactory, RunFactory

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
PROMPT_SET = prompt_set_id(SPEED_PROMPTS)


def spread(median: float, width: float, n: int = 18) -> dict[str, Any]:
    return {"median": median, "min": median - width, "max": median + width, "n": n}


def speed_summary(
    tps: float, ttft: float = 0.21, acceptance: float | None = None, positions: list[float] | None = None
) -> dict[str, Any]:
    return {
        "decode_tps_client": spread(tps, 2.0), "decode_tps_engine": spread(tps + 1, 2.0),
        "ttft_s": spread(ttft, 0.01), "acceptance_rate": pooled(acceptance) if acceptance else None,
        "acceptance_by_position": positions, "requests": 18, "prompt_set": PROMPT_SET,
    }


def pooled(acceptance: float, drafted: int = 1000) -> dict[str, Any]:
    """A run's acceptance pooled from the engine's counters (docs/metrics.md, Acceptance)."""
    accepted = round(acceptance * drafted)
    return {"pooled": accepted / drafted, "accepted": accepted, "drafted": drafted, "verifications": 250,
            "requests": None, "source": "engine"}


def concurrency_summary(totals: dict[int, float]) -> dict[str, Any]:
    levels = {
        str(c): {"concurrency": c, "total_tps": spread(tps, 1.0, n=1), "finish_s": spread(2.0 * c, 0.1, n=c)}
        for c, tps in totals.items()
    }
    return {"levels": levels, "baseline": min(totals), "max_concurrency": max(totals), "answer_tokens": 256}


def succeeded(config: EngineConfig, job: str, summary: dict[str, Any], minute: int = 0, **fields: Any) -> Run:
    created = T0 + timedelta(minutes=minute)
    finished = created + timedelta(seconds=50)
    fields = {"status": Run.Status.SUCCEEDED, "created": created, "finished": finished} | fields
    return RunFactory(config=config, job=job, summary=summary, **fields)


def speed_runs(
    config: EngineConfig, *tps: float, acceptance: float | None = None, positions: list[float] | None = None,
    **fields: Any,
) -> list[Run]:
    summaries = [speed_summary(v, acceptance=acceptance, positions=positions) for v in tps]
    return [succeeded(config, "speed", summary, minute=i, **fields) for i, summary in enumerate(summaries)]


def three_configs() -> tuple[EngineConfig, EngineConfig, EngineConfig]:
    """base 40/41/42 tok/s; near 41/42/43 (within base's range: noise); fast 60/61/62 (better)."""
    base = EngineConfigFactory(name="base", lookahead=0)
    near = EngineConfigFactory(name="near", lookahead=4)
    fast = EngineConfigFactory(name="fast", lookahead=8)
    speed_runs(base, 40.0, 41.0, 42.0)
    speed_runs(near, 41.0, 42.0, 43.0, acceptance=0.60)
    speed_runs(fast, 60.0, 61.0, 62.0, acceptance=0.80)
    return base, near, fast


def full_comparison() -> tuple[EngineConfig, EngineConfig, EngineConfig]:
    """Three configs with speed, concurrency and MMLU-Pro runs: every chart has points.

    The Pareto front of decode tok/s against accuracy is fast (quickest) and base (most accurate).
    """
    base, near, fast = three_configs()
    for config, scale, accuracy in ((base, 1.0, 0.46), (near, 1.05, 0.42), (fast, 1.5, 0.44)):
        for minute in range(2):
            totals = {c: scale * (40.0 * c ** 0.6 + minute) for c in (1, 2, 4, 8)}
            succeeded(config, "concurrency", concurrency_summary(totals), minute=10 + minute,
                      params={"levels": [1, 2, 4, 8], "answer_tokens": 256, "reps": 1})
            succeeded(config, "mmlu-pro", {"accuracy": accuracy + 0.01 * minute, "total": 100},
                      minute=20 + minute, params={"num_fewshot": 5, "max_tokens": 2048})
    return base, near, fast
