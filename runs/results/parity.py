"""The settings a run was measured with, as the parity check (runs.core.scoring.parity) compares them.

A run's provenance holds a snapshot of its config taken when it started, so a config edited
since still reads as the run saw it; runs without a snapshot fall back to the config as it is.
The run's own parameters win where they override the config (--max-tokens, a job's fixed answer
length).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engines.models import EngineConfig
from runs.core import registry
from runs.core.scoring.parity import NOT_RECORDED, Mismatch, check_parity
from runs.core.typed_reads import recorded
from runs.models import Run

__all__ = ["parity", "run_settings", "thinking_of"]

CONFIG_FIELDS = ("temperature", "top_p", "top_k", "seed", "max_tokens", "context_length", "parallel")
THINKING_FIELDS = ("thinking", "thinking_budget", "reasoning_effort")


def run_settings(run: Run, config: EngineConfig) -> dict[str, Any]:
    """Sampling, max tokens, context length, parallel slots, thinking and prompt set of one run."""
    snapshot = (run.provenance or {}).get("config")
    if not isinstance(snapshot, dict):
        snapshot = {name: getattr(config, name) for name in CONFIG_FIELDS + THINKING_FIELDS}
    settings = {name: snapshot.get(name, NOT_RECORDED) for name in CONFIG_FIELDS}
    settings["thinking"] = thinking_of(snapshot)
    effort = snapshot.get("reasoning_effort", NOT_RECORDED)
    settings["reasoning_effort"] = NOT_RECORDED if effort is NOT_RECORDED else (effort or None)
    params = run.params or {}
    # Jobs with a fixed answer length (concurrency, agent table, needle) send that, not max_tokens.
    override = params.get("max_tokens", params.get("answer_tokens"))
    if override is not None:
        settings["max_tokens"] = override
    # Only jobs that send the speed prompt set record its digest in their summary.
    if registry.get(run.job).sends_prompt_set:
        settings["prompt_set"] = recorded(run, "prompt_set", NOT_RECORDED)
    return settings


def thinking_of(snapshot: dict[str, Any]) -> Any:
    """A config's thinking as parity compares it: None (the engine's default), off, on, budget N."""
    mode = snapshot.get("thinking", NOT_RECORDED)
    if mode is NOT_RECORDED or not mode:
        return NOT_RECORDED if mode is NOT_RECORDED else None
    return f"budget {snapshot.get('thinking_budget')}" if mode == "budget" else mode


def parity(runs: Iterable[Run], configs: dict[int, EngineConfig]) -> list[Mismatch]:
    """The parity mismatches among the runs, each config named as configs[run.config_id]."""
    return check_parity(
        (configs[run.config_id].name, run.job, run_settings(run, configs[run.config_id])) for run in runs
    )
