"""Nothing from a claim runs verbatim: which of its settings map onto a config here, which do not and
why, and what this machine cannot reproduce at all.

Settings SparkDash knows become config fields (then checked like every config's, by
``EngineConfig.clean``: the launch allowlist included); each extra flag is checked alone against the
engine kind's allowlist (engines.recipes.flags), so one refused flag is listed with its reason and the
others still carry over. A recipe's ``container``, ``mods``, ``env`` and ``tensor_parallel`` above 1
never do. What this machine cannot reproduce (more nodes, a bandwidth class of its own, a
quantization this engine kind cannot load) is said before anything runs: the claim's figures are
then ``not-comparable``. Plain Python, no Django.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from claims.core.schema import ClaimData
from engines import kinds
from engines.recipes import simulator
from engines.recipes.flags import BINDS, REFUSED, FlagTable, checked

__all__ = ["Carried", "cannot_reproduce", "carry"]

# A recipe default -> the config field it sets (the value checked by the config's own validators).
DEFAULT_FIELDS = {
    "max_model_len": "context_length",
    "context_length": "context_length",
    "max_num_seqs": "parallel",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "attention_backend": "attention_backend",
    "kv_cache_dtype": "kv_cache_dtype",
    "moe_backend": "moe_backend",
    "reasoning_parser": "reasoning_parser",
    "cache_ram_mib": "cache_ram_mib",
    "threads": "threads",
    "parallel": "parallel",
}
# Read into the claim's speculative method and lookahead (claims.core.recipe.speculative), or SparkDash's own.
SPECULATIVE = {
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_num_draft_tokens",
    "speculative_eagle_topk",
    "speculative_config",
    "spec_type",
    "draft_max",
    "speculative_method",
    "lookahead",
}
SAMPLING = ("temperature", "top_p", "top_k", "seed")
NAMED_BY_SPARKDASH = {"served_model_name": "SparkDash names the model it serves"}
# Bandwidth within this share of the machine's counts as the same class of machine.
BANDWIDTH_SAME = 0.10
# The weight formats each engine kind loads (lower case); a claim's other quantization is not comparable.
GGUF = re.compile(r"^(q\d.*|iq\d.*|f16|bf16|f32|mxfp4|tq\d.*)$")
SAFETENSORS = re.compile(
    r"^(bf16|fp16|f16|fp8.*|nvfp4|mxfp4|awq.*|gptq.*|int4.*|int8.*|w4a16|w8a8|modelopt.*)$"
)
LOADS = {"llama-server": GGUF, "ollama": GGUF, "vllm": SAFETENSORS, "sglang": SAFETENSORS}


@dataclass
class Carried:
    """A claim's settings as a config here: its fields, its extra flags, and what was left behind."""

    fields: dict[str, Any] = field(default_factory=dict)
    extra_flags: list[str] = field(default_factory=list)
    not_carried_over: list[dict[str, str]] = field(default_factory=list)

    def leave(self, setting: str, why: str) -> None:
        self.not_carried_over.append({"setting": setting, "why": why})


def carry(claim: ClaimData, kind: str, is_simulator: bool = False) -> Carried:
    """What of ``claim``'s settings a config of engine ``kind`` here takes, and what it does not."""
    carried = Carried()
    if claim.speculative_method:
        carried.fields["speculative_method"] = claim.speculative_method
    if claim.lookahead is not None:
        carried.fields["lookahead"] = claim.lookahead
    _carry_sampling(carried, claim)
    table = simulator.ALLOWED_FLAGS if is_simulator else kinds.get(kind).flag_table()
    for flag in flag_groups(claim.extra_flags):
        _carry_flag(carried, table, flag)
    settings = claim.launch_settings
    for key, value in sorted((settings.get("defaults") or {}).items()):
        _carry_default(carried, key, value)
    for key in ("container", "mods"):
        if settings.get(key):
            carried.leave(
                f"{key}:",
                "runs code SparkDash does not build or check"
                if key == "mods"
                else "SparkDash starts the engine's own program, not a container image",
            )
    for name in sorted(settings.get("env") or {}):
        carried.leave(f"env: {name}", "sets the environment")
    for key, value in sorted(settings.items()):
        if key not in {"defaults", "container", "mods", "env", "runtime", "command"}:
            carried.leave(f"{key}: {value}", "not a setting SparkDash knows")
    return carried


def _carry_sampling(carried: Carried, claim: ClaimData) -> None:
    """The workload's sampling and thinking, as the config's request settings."""
    for key, value in sorted(claim.sampling.items()):
        if key in SAMPLING and value is not None:
            carried.fields[key] = value
        else:
            carried.leave(f"sampling.{key}: {value}", "not a sampling setting SparkDash sends")
    if claim.thinking is not None:
        carried.fields["thinking"] = "on" if claim.thinking else "off"
    if claim.output_tokens:
        carried.fields["max_tokens"] = claim.output_tokens


def flag_groups(tokens: list[str]) -> list[list[str]]:
    """Command-line tokens grouped as one flag and its value each (``--flag=value`` stays one)."""
    groups: list[list[str]] = []
    for token in tokens:
        if token.startswith("-") or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


def _carry_flag(carried: Carried, table: FlagTable, flag: list[str]) -> None:
    name = flag[0].partition("=")[0]
    if name in REFUSED:
        carried.leave(name, REFUSED[name])
        return
    try:
        carried.extra_flags += checked(table, shlex.join(flag))
    except ValueError as exc:
        message = str(exc.args[0]).removeprefix("extra flags: ")
        carried.leave(" ".join(flag), message)


def _carry_default(carried: Carried, key: str, value: Any) -> None:
    if key in SPECULATIVE or value in ("", None, "auto"):
        return
    if key == "tensor_parallel" or key == "tp":
        if int(value) > 1:
            carried.leave(f"tensor_parallel: {value}", f"needs {value} nodes")
        return
    if key in DEFAULT_FIELDS:
        carried.fields[DEFAULT_FIELDS[key]] = value
    elif key in ("host", "port"):
        carried.leave(f"{key}: {value}", BINDS)
    elif key in NAMED_BY_SPARKDASH:
        carried.leave(f"{key}: {value}", NAMED_BY_SPARKDASH[key])
    else:
        carried.leave(f"{key}: {value}", "not a setting SparkDash knows")


def cannot_reproduce(claim: ClaimData, kind: str, bandwidth_gbps: float) -> list[dict[str, str]]:
    """What this machine cannot reproduce of the claim, said before anything runs (empty: it can)."""
    found: list[dict[str, str]] = []
    if claim.nodes > 1:
        found.append(
            {
                "what": f"{claim.nodes} nodes",
                "why": f"the claim ran on {claim.nodes} nodes; a check runs on one machine",
            }
        )
    if claim.bandwidth_gbps and abs(claim.bandwidth_gbps - bandwidth_gbps) > BANDWIDTH_SAME * bandwidth_gbps:
        found.append(
            {
                "what": f"{claim.bandwidth_gbps:g} GB/s",
                "why": f"the claim's machine moves "
                f"{claim.bandwidth_gbps:g} GB/s, this one {bandwidth_gbps:g} GB/s: another class of machine",
            }
        )
    loads = LOADS.get(kind)
    quantization = claim.quantization.strip().lower()
    if loads is not None and quantization and not loads.fullmatch(quantization):
        found.append(
            {
                "what": claim.quantization,
                "why": f"{kinds.get(kind).label} cannot load {claim.quantization} weights",
            }
        )
    return found
