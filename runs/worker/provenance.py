"""Provenance of a run: what produced its figures (engine, model file, recipe, config, harness)."""
from __future__ import annotations

import asyncio
import functools
import hashlib
import subprocess
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from engines.clients import EngineClient
from engines.gguf_inspect import GGUFError, inspect_header
from engines.models import EngineConfig
from engines.recipes import render_config
from engines.recipes.model_dirs import local_file, local_gguf
from engines.roofline import roofline

if TYPE_CHECKING:
    from runs.models import Run


async def record_provenance(client: EngineClient, run: Run) -> None:
    """Collect the run's provenance from the answering engine and store it on the run."""
    provenance = await collect_provenance(client, run.config)
    # Known before the first request, so live decode charts can draw the ceiling from the start.
    ceiling = await asyncio.to_thread(roofline_for, run.config, None)
    provenance["roofline"] = ceiling
    await type(run).objects.filter(pk=run.pk).aupdate(provenance=provenance)


async def collect_provenance(client: EngineClient, config: EngineConfig) -> dict[str, Any]:
    """What produced the figures: engine version, model id/digest, config snapshot, harness commit.

    An unreachable engine raises EngineError here, before any request is measured.
    """
    version = await client.version()
    model = await client.model_info(config.model)
    recipe, recipe_error = render_config(config)
    return {
        "engine_version": version,
        "model": model,
        "model_file": await asyncio.to_thread(model_file, config.model),
        "quantization": config.quantization or model.get("quantization"),
        "recipe": recipe.shell() if recipe else f"none: {recipe_error}",
        "launch": config.engine.launch,
        "config": config.snapshot(),
        "harness_commit": harness_commit(),
        "recorded": timezone.now().isoformat(),
    }


def model_file(model: str) -> dict[str, Any] | None:
    """Size and SHA-256 of the model when it is a file inside this machine's model directories."""
    path = local_file(model)
    if path is None:
        return None
    stat = path.stat()
    sha256 = _sha256(str(path), stat.st_size, stat.st_mtime)
    return {"path": str(path), "bytes": stat.st_size, "sha256": sha256}


@functools.lru_cache(maxsize=32)
def _sha256(path: str, size: int, mtime: float) -> str:
    # Keyed by size and mtime too: a file replaced in place is hashed again.
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


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


def roofline_for(
    config: EngineConfig, measured_tps: float | None, tokens_per_verification: float | None = None
) -> dict[str, Any] | None:
    """Ceiling decode tok/s = machine bandwidth / weights read per token, and the efficiency.

    Held against both the machine's nominal bandwidth and its measured one (the bandwidth job's).

    Bytes per token come from the config's override, else from the model's GGUF header when
    the model is a local file; None when neither is known.
    """
    override = int(config.bytes_per_token_gb * 1e9) if config.bytes_per_token_gb else None
    inspected = _gguf_bytes_per_token(config.model)
    if override is None and inspected is None:
        return None
    machine = config.engine.machine
    found = roofline(machine.bandwidth_gbps, inspected or 0, override, measured_tps, tokens_per_verification,
                     machine.measured_bandwidth_gbps)
    return found.to_dict()


@functools.lru_cache(maxsize=32)
def _gguf_bytes_per_token(model: str) -> int | None:
    path = local_gguf(model)  # a GGUF inside this machine's model directories, nothing else
    if path is None:
        return None
    try:
        return inspect_header(path).bytes_per_token
    except GGUFError:
        return None
