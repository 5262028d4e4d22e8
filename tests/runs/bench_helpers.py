"""Running a job through `manage.py bench --wait` in a test, and configs for the real engine."""
from __future__ import annotations

import json
from typing import Any

from django.core.management import call_command

from engines.models import Engine, EngineConfig
from tests.factories import EngineConfigFactory
from tests.real_engine import GEMMA_270M, LLAMA_SERVER, LLAMA_THREADS, free_port


def bench(capsys: Any, config: str, job: str, *args: str) -> dict[str, Any]:
    """The finished run as `bench CONFIG --job JOB --wait ARGS` prints it."""
    call_command("bench", config, "--job", job, "--wait", *args)
    return json.loads(capsys.readouterr().out)


def real_llama_config(name: str, **fields: Any) -> EngineConfig:
    """A config of a managed llama-server with the Gemma 3 270M model on a free port (LLAMA_THREADS)."""
    engine = {
        "engine__kind": "llama-server",
        "engine__launch": Engine.Launch.MANAGED,
        "engine__binary": str(LLAMA_SERVER),
        "engine__base_url": f"http://127.0.0.1:{free_port()}",
    }
    settings = {"model": str(GEMMA_270M), "threads": LLAMA_THREADS, "parallel": 1, "context_length": 4096}
    settings |= fields
    return EngineConfigFactory(name=name, **engine, **settings)
