"""A run's telemetry on the worker: the sampler on while the run runs, its readings stored as
"telemetry" samples (live on the run page), the phases marked, and the summary at the end.

Off with SPARKDASH_TELEMETRY_HZ=0 (the telemetry benchmark's reference): no thread, no drain,
no readings; the baseline still waits, so a run does the same other work either way, and the
summary says {"off": true} in the usual shape.

Phases: "load" (from the claim: the engine starting), "baseline" (the engine idle, before the
job: the energy figures' idle power), "preheat" (a config's warm-up), "job", "done".
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from types import TracebackType
from typing import Any

from django.conf import settings

from engines.clients import EngineClient, GenerationRequest
from engines.telemetry import NO_GPU_NOTE, NvmlSource, TelemetrySampler, machine_sources
from engines.telemetry.recorded import RecordedNvml
from runs.core.energy import windows_of
from runs.core.preheat import preheat
from runs.core.telemetry_summary import summarize_telemetry, throttled_words
from runs.core.worded import warning
from runs.models import Run
from runs.worker.recorder import RunRecorder

log = logging.getLogger(__name__)

__all__ = ["OFF_NOTE", "PREHEAT_PROMPT", "RunTelemetry", "preheat_box", "throttled_warning"]

OFF_NOTE = "telemetry off (SPARKDASH_TELEMETRY_HZ=0)"

PREHEAT_PROMPT = "Write a long, detailed story about a lighthouse keeper, one paragraph at a time."
PREHEAT_TOKENS = 128

class RunTelemetry:
    """The sampler of one run, feeding its recorder; `async with` around the run's engine and job."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        self.recording = settings.SPARKDASH_NVML_TRACE or None
        self.sampler: TelemetrySampler | None = None  # None: telemetry off
        self.why_no_gpu: str | None = OFF_NOTE
        if settings.SPARKDASH_TELEMETRY_HZ:
            nvml = RecordedNvml(json.loads(Path(self.recording).read_text())) if self.recording else None
            sources, self.why_no_gpu = machine_sources(nvml)
            self.sampler = TelemetrySampler(sources, settings.SPARKDASH_TELEMETRY_HZ, zero=recorder.started)

    async def __aenter__(self) -> RunTelemetry:
        if self.sampler is not None:
            self.sampler.start()
            # The recorder's passes take the readings on its own thread, off the measuring loop.
            self.recorder.take_readings(self.sampler.drain)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.sampler is None:
            return
        self.recorder.take_readings(None)
        await asyncio.to_thread(self.sampler.stop)
        self.recorder.add_readings("telemetry", self.sampler.drain())  # stored by the final flush
        for source in self.sampler.sources:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def phase(self, name: str) -> None:
        """What the run does from now on (each reading is labelled with it)."""
        if self.sampler is not None:
            self.sampler.phase = name

    @property
    def readings(self) -> list[dict[str, Any]]:
        """Every reading so far (none with telemetry off)."""
        return list(self.sampler.readings) if self.sampler is not None else []

    async def baseline(self) -> None:
        """Idle readings with the engine loaded, before the job (SPARKDASH_TELEMETRY_BASELINE_S)."""
        self.phase("baseline")
        await asyncio.sleep(settings.SPARKDASH_TELEMETRY_BASELINE_S)
        self.phase("job")

    def readings_since(self, t: float) -> list[dict[str, Any]]:
        """The readings taken at run time `t` or later (pre-heating watches these)."""
        return [r for r in self.readings if r["t"] >= t]

    def summary(self) -> dict[str, Any]:
        """summary["telemetry"] over the readings so far and the run's requests."""
        if self.sampler is None:
            return off_summary()
        info = self._info()
        summary = summarize_telemetry(
            list(self.sampler.readings), info, windows_of(self.recorder.request_rows)
        )
        return summary | {
            "gpus": info["gpus"],
            "sampler_cpu_s": round(self.sampler.cpu_s, 4),
            "recording": self.recording,
            "source_failures": dict(self.sampler.failures) or None,
        }

    def _info(self) -> dict[str, Any]:
        assert self.sampler is not None
        gpu = next((s for s in self.sampler.sources if isinstance(s, NvmlSource)), None)
        gpus: list[dict[str, Any]] = gpu.gpus if gpu else []
        max_clocks = [g["sm_clock_max_mhz"] for g in gpus if g.get("sm_clock_max_mhz")]
        floor = min(max_clocks) * settings.SPARKDASH_THROTTLE_CLOCK_FLOOR_PCT / 100 if max_clocks else None
        unified = gpu.unified_memory if gpu else False
        sources = [
            s.name + (" (recorded trace)" if s.name == "nvml" and self.recording else "")
            for s in self.sampler.sources
        ]
        return {
            "gpu": self.sampler.gpu,
            "note": None if self.sampler.gpu else NO_GPU_NOTE,
            "sources": sources,
            "rate_hz": settings.SPARKDASH_TELEMETRY_HZ,
            "unified_memory": unified,
            "clock_floor_mhz": floor,
            "gpus": gpus,
        }


def off_summary() -> dict[str, Any]:
    """summary["telemetry"] of a run with telemetry off: the usual shape, nothing measured."""
    info = {"gpu": False, "note": OFF_NOTE, "sources": [], "rate_hz": 1.0}  # no readings: any rate
    summary = summarize_telemetry([], info, [])
    return summary | {
        "off": True,
        "rate_hz": 0.0,
        "energy_note": OFF_NOTE,
        "gpus": [],
        "sampler_cpu_s": 0.0,
        "recording": None,
        "source_failures": None,
    }


def throttled_warning(telemetry: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's `throttled` warning (with how long), or none."""
    throttle = telemetry["throttle"]
    if not throttle["throttled"]:
        return []
    text, params = throttled_words(throttle)
    return [warning("throttled", text, **params) | {"throttled_s": throttle["throttled_s"]}]


async def preheat_box(
    client: EngineClient, run: Run, telemetry: RunTelemetry, answering: bool
) -> dict[str, Any]:
    """The config's pre-heat: generate until clocks and temperature settle, at most preheat_s."""
    if not answering:  # a lookahead sweep starts its engine per length, inside the job
        return {
            "s": 0.0,
            "requests": 0,
            "settled": None,
            "note": "not pre-heated: this job starts its engine per lookahead length",
        }
    config = run.config
    request = GenerationRequest(
        model=config.model,
        messages=[{"role": "user", "content": PREHEAT_PROMPT}],
        max_tokens=PREHEAT_TOKENS,
        temperature=config.temperature,
        seed=config.seed,
    )
    telemetry.phase("preheat")
    readings = telemetry.readings
    since = readings[-1]["t"] if readings else 0.0
    try:
        return await preheat(
            client,
            request,
            lambda: telemetry.readings_since(since),
            config.preheat_s,
            settings.SPARKDASH_PREHEAT_SETTLE_S,
        )
    finally:
        telemetry.phase("job")
