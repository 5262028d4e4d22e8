"""Rows for a service-fault test, written into the private database by a subprocess.

`python -m tests.faults.seed setup SIM_URL` creates a superuser, a machine and a config on the
simulator at SIM_URL, and prints {"config": id, "queue": ..., "cookie": session id} as JSON.
`python -m tests.faults.seed engine URL` creates an external llama-server engine at URL on a
machine of its own and prints {"machine": name, "machine_id": id, "engine": id}.
`python -m tests.faults.seed start CONFIG REPS MAX_TOKENS` starts a speed run through the same
path as the run form and prints {"run": id, "total": requests}.
The environment (DATABASE_URL, REDIS_URL) says which database and broker.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any


def setup(sim_url: str) -> dict[str, Any]:
    """A superuser with a session, and a config on the simulator at `sim_url` (its own machine)."""
    from django.test import Client

    from tests.factories import EngineConfigFactory, EngineFactory, UserFactory

    # A superuser sees every team's machines: who may see the run is not what these tests test.
    user = UserFactory(username="alice", is_superuser=True)
    engine = EngineFactory(simulator=True, base_url=sim_url)
    config = EngineConfigFactory(engine=engine, lookahead=0)
    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    return {"config": config.pk, "queue": engine.machine.queue_name, "cookie": session}


def start(config_id: int, reps: int, max_tokens: int) -> dict[str, Any]:
    """Start a speed run of the config, as the run form does (queued once committed)."""
    from engines.models import EngineConfig
    from runs.actions.runs import start_run
    from runs.core.jobs.prompts import SPEED_PROMPTS

    config = EngineConfig.objects.select_related("engine__machine").get(pk=config_id)
    run = start_run(config, "speed", {"reps": reps, "warmup": 0, "max_tokens": max_tokens})
    return {"run": run.pk, "total": reps * len(SPEED_PROMPTS)}


def engine(url: str) -> dict[str, Any]:
    """An external llama-server engine at `url` on a machine of its own (a relay's target)."""
    from tests.factories import EngineFactory

    made = EngineFactory(base_url=url, kind="llama-server")
    return {"machine": made.machine.name, "machine_id": made.machine_id, "engine": made.pk}


def main(argv: list[str]) -> None:
    """`setup SIM_URL`, `engine URL` or `start CONFIG REPS MAX_TOKENS`; prints the result as JSON."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sparkdash.settings")
    import django

    django.setup()
    action, *args = argv
    if action == "start":
        result = start(*(int(a) for a in args))
    else:
        result = {"setup": setup, "engine": engine}[action](args[0])
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
