"""The telemetry benchmark's worker process: `python -m tests.bench.telemetry_probe PLAN_JSON`.

Sets Django up on a fresh embedded SQLite database (the caller points SPARKDASH_VAR_DIR at a
temporary folder), migrates it, and runs speed runs against a simulator in another process
through the worker's own path (runs.worker.execution claim and execute: client, recorder,
database writes, telemetry), one per plan entry, with SPARKDASH_TELEMETRY_HZ set to the entry's
rate (0: off). Per run: this process's CPU and wall time over execute(), the sampler's own CPU
(summary["telemetry"]["sampler_cpu_s"]), the telemetry samples stored, and each request's TTFT
and end-to-end time. Prints one JSON object as the last line of stdout.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any


def main(plan: dict[str, Any]) -> None:
    """Run a warm-up pair, then every (label, rate_hz) of plan["runs"] in order."""
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from engines.simulator import SimProfile
    from tests.bench.simproc import simulator_process
    from tests.bench.worker_probe import simulator_config

    call_command("migrate", verbosity=0, interactive=False)
    settings.SPARKDASH_TELEMETRY_BASELINE_S = plan["baseline_s"]
    results = []
    with simulator_process(SimProfile(**plan["profile"])) as sim:
        config = simulator_config(sim.url, "telemetry", plan["max_tokens"])
        for rate in (0.0, 10.0):  # imports, first connections, the first /proc reads
            _one(config, rate, plan["reps"])
        for label, rate in plan["runs"]:
            results.append({"label": label, "rate_hz": rate} | _one(config, rate, plan["reps"]))
            print(f"{label}: {results[-1]['wall_s']:.1f} s", file=sys.stderr, flush=True)
    print(json.dumps({"results": results}))


def _one(config: Any, rate_hz: float, reps: int) -> dict[str, Any]:
    """One speed run at `rate_hz` through claim and execute; what it cost and its requests' times."""
    from django.conf import settings

    from runs.models import Run
    from runs.worker import execution

    settings.SPARKDASH_TELEMETRY_HZ = rate_hz
    run = Run.objects.create(
        config=config, machine=config.engine.machine, job="speed", params={"reps": reps, "warmup": 0}
    )
    if execution.claim(run.pk) != execution.CLAIMED:
        raise RuntimeError(f"run {run.pk} was not claimed")
    cpu, wall = time.process_time(), time.perf_counter()
    execution.execute(run.pk)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    run.refresh_from_db()
    if run.status != Run.Status.SUCCEEDED:
        raise RuntimeError(f"run at {rate_hz} Hz ended {run.status}: {run.error}")
    requests = [s.values for s in run.samples.filter(kind="request").order_by("seq")]
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "sampler_cpu_s": run.summary["telemetry"]["sampler_cpu_s"],
        "telemetry_samples": run.samples.filter(kind="telemetry").count(),
        "sources": run.summary["telemetry"]["sources"],
        "ttft_s": [r["ttft_s"] for r in requests],
        "e2e_s": [r["e2e_s"] for r in requests],
    }


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
