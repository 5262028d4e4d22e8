"""A benchmark's worker process, for the benchmarks that run jobs through the worker's own path.

`run_probe` starts `python -m MODULE PLAN_JSON` with Django on a fresh embedded SQLite database
(a temporary SPARKDASH_VAR_DIR) and reads the JSON object it prints last; inside that process,
`simulator_config` registers a simulator engine and a config to run against it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any


def run_probe(module: str, plan: dict[str, Any], timeout_s: int) -> list[dict[str, Any]]:
    """The "results" the probe module printed for `plan`; RuntimeError with its last words if it failed."""
    with tempfile.TemporaryDirectory(prefix="sparkdash-bench-probe-") as var:
        env = os.environ | {
            "SPARKDASH_VAR_DIR": var, "DATABASE_URL": "", "REDIS_URL": "", "SPARKDASH_WORKER": "inprocess",
            "DEBUG": "False", "SECRET_KEY": "bench-only", "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "sparkdash.settings",
        }
        args = [sys.executable, "-m", module, json.dumps(plan)]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{module} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["results"]


def simulator_config(sim_url: str, name: str, max_tokens: int) -> Any:
    """A config of model "sim-NAME" on a simulator engine at `sim_url`, on a machine of its own."""
    from engines.models import Engine, EngineConfig, Machine
    from teams.models import Team

    machine = Machine.objects.create(
        name=f"{name}-bench", team=Team.default(), bandwidth_gbps=273, memory_gb=121
    )
    engine = Engine.objects.create(
        machine=machine, name=f"sim-{name}", kind="llama-server", base_url=sim_url, simulator=True
    )
    return EngineConfig.objects.create(engine=engine, name=name, model=f"sim-{name}", max_tokens=max_tokens)
