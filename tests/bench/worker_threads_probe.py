"""The worker_threads benchmark's worker process: `python -m tests.bench.worker_threads_probe PLAN_JSON`.

Sets Django up on a fresh embedded SQLite database (the caller points SPARKDASH_VAR_DIR at a
temporary folder) and runs one concurrency run per level of the plan against a simulator in
another process, through the worker's own path (runs.worker.execution claim and execute, on a
thread of its own as the in-process worker runs it). While a run streams, each thread's CPU is
read from /proc/self/task twice, WINDOW_S apart, and named by the thread that owns it; the tokens
generated in between are read back from the run's stored request samples. Prints one JSON object
as the last line of stdout.
"""
from __future__ import annotations

import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.bench.proc_cpu import stat_cpu_s


def main(plan: dict[str, Any]) -> None:
    """One run per level of plan["levels"]; per run, each thread's CPU over the window."""
    import django

    django.setup()
    from django.core.management import call_command

    from engines.simulator import SimProfile
    from tests.bench.simproc import simulator_process
    from tests.bench.worker_probe import simulator_config

    call_command("migrate", verbosity=0, interactive=False)
    with simulator_process(SimProfile(**plan["profile"])) as sim:
        config = simulator_config(sim.url, "threads", plan["answer_tokens"])
        results = [_one(config, level, plan) for level in plan["levels"]]
    print(json.dumps({"results": results}))


def _one(config: Any, level: int, plan: dict[str, Any]) -> dict[str, Any]:
    """A run at `level` long enough to hold the window; each thread's CPU seconds over it."""
    from runs.models import Run
    from runs.worker import execution

    run = Run.objects.create(config=config, machine=config.engine.machine, job="concurrency",
                             params=_params(level, plan))
    if execution.claim(run.pk) != execution.CLAIMED:
        raise RuntimeError(f"run {run.pk} was not claimed")
    origin = time.perf_counter()  # the run's clock starts a few ms later, in its recorder
    worker = threading.Thread(target=execution.execute, args=(run.pk,), name="measuring loop")
    worker.start()
    time.sleep(plan["warm_s"])
    before, start = thread_cpu(), time.perf_counter() - origin
    time.sleep(plan["window_s"])
    after, end = thread_cpu(), time.perf_counter() - origin
    worker.join()
    run.refresh_from_db()
    if run.status != Run.Status.SUCCEEDED:
        raise RuntimeError(f"run at {level} streams ended {run.status}: {run.error}")
    requests = [s.values for s in run.samples.filter(kind="request")]
    used = {name: round(after[name] - before.get(name, 0.0), 3) for name in after}
    tokens = tokens_within(requests, start, end)
    return {"level": level, "window_s": end - start, "cpu_s": used, "tokens": tokens}


def _params(level: int, plan: dict[str, Any]) -> dict[str, Any]:
    """Enough rounds to stream past the window: the level named again for more than 20 rounds."""
    round_s = plan["answer_tokens"] / plan["stream_tps"][str(level)]
    rounds = math.ceil((plan["warm_s"] + plan["window_s"] + plan["spare_s"]) / round_s)
    passes = math.ceil(rounds / 20)
    reps = math.ceil(rounds / passes)
    return {"levels": [level] * passes, "answer_tokens": plan["answer_tokens"], "reps": reps, "warmup": 1}


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) of each of this process's threads so far, by thread name;
    threads of the same kind (a pool's) are added up under their name without its number."""
    names = {t.native_id: _kind(t.name) for t in threading.enumerate()}
    used: dict[str, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            cpu_s = stat_cpu_s((task / "stat").read_text())
        except OSError:
            continue  # ended meanwhile
        name = names.get(int(task.name), "threads not started by Python")
        used[name] = used.get(name, 0.0) + cpu_s
    return used


def _kind(name: str) -> str:
    if name.startswith("run-") and name.endswith("-recorder"):
        return "recorder (store, broadcast)"
    if name.startswith("ThreadPoolExecutor"):
        return "database thread (async ORM)"
    if name.startswith("asyncio_"):
        return "loop's executor"
    return name


def tokens_within(requests: list[dict[str, Any]], start: float, end: float) -> float:
    """Tokens generated between run times start and end: each request's tokens spread evenly over
    its decode (first token to last), counted by the share of it inside the window."""
    total = 0.0
    for r in requests:
        if r.get("output_tokens") is None or r.get("ttft_s") is None:
            continue
        first, last = r["start_t"] + r["ttft_s"], r["start_t"] + r["e2e_s"]
        if last <= first:  # one token: counted where it came
            total += r["output_tokens"] * float(start <= last < end)
            continue
        total += r["output_tokens"] * max(0.0, min(end, last) - max(start, first)) / (last - first)
    return total


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
