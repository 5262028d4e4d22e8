"""Ollama: service environment for ``ollama serve``, plus a Modelfile alias for per-model settings.

Ollama takes no per-config command line. Server-wide settings are ``OLLAMA_*`` variables of the
service; load-time settings (context, draft length, threads, batch) live in a model alias created
``FROM`` the base model through ``POST /api/create``, which shares the base model's weights.
"""

from __future__ import annotations

import hashlib
import re

from engines.recipes import flags
from engines.recipes.base import Builder, LaunchSettings, Recipe
from engines.recipes.flags import Choice, Flag, FlagTable, Int, Pattern
from engines.recipes.reasoning import checked
from measure.words import Words, gettext_noop

__all__ = ["ALLOWED_FLAGS", "alias_name", "render_ollama"]

BOOL = Choice(("0", "1", "false", "true"))
DURATION = Pattern(r"-1|\d+(\.\d+)?|(\d+(\.\d+)?(h|m|s|ms))+", gettext_noop("a duration: -1, 300, 5m, 1h30m"))
DEVICES = Pattern(r"-1|[A-Za-z0-9-]+(,[A-Za-z0-9-]+)*", gettext_noop("GPU numbers or ids, comma-separated"))
# `ollama serve` takes no flags: a config's extra flags are NAME=value service variables, these only
# (envconfig/config.go); OLLAMA_HOST, OLLAMA_MODELS, OLLAMA_ORIGINS and the loader's are refused.
ALLOWED_FLAGS = FlagTable("ollama", "Ollama", [
    Flag(("OLLAMA_FLASH_ATTENTION",), BOOL, gettext_noop("flash attention")),
    Flag(("OLLAMA_KV_CACHE_TYPE",), Choice(("f16", "q8_0", "q4_0")), gettext_noop("KV cache type")),
    Flag(("OLLAMA_NUM_PARALLEL",), Int(1, 1024), gettext_noop("parallel requests per model")),
    Flag(("OLLAMA_CONTEXT_LENGTH",), Int(128, 10_000_000), gettext_noop("default context length")),
    Flag(("OLLAMA_KEEP_ALIVE",), DURATION, gettext_noop("how long a model stays loaded")),
    Flag(("OLLAMA_MAX_KEEP_ALIVE",), DURATION, gettext_noop("the longest keep-alive a request may ask")),
    Flag(("OLLAMA_LOAD_TIMEOUT",), DURATION, gettext_noop("how long a load may stall")),
    Flag(("OLLAMA_MAX_LOADED_MODELS",), Int(0, 64), gettext_noop("models loaded at once")),
    Flag(("OLLAMA_MAX_QUEUE",), Int(1, 1_000_000), gettext_noop("requests queued at most")),
    Flag(("OLLAMA_SCHED_SPREAD",), BOOL, gettext_noop("spread a model over all GPUs")),
    Flag(("OLLAMA_GPU_OVERHEAD",), Int(0, 10**15), gettext_noop("VRAM kept free per GPU (bytes)")),
    Flag(("OLLAMA_MULTIUSER_CACHE",), BOOL, gettext_noop("prompt cache for many users")),
    Flag(("OLLAMA_NOPRUNE",), BOOL, gettext_noop("no pruning of model blobs at start")),
    Flag(("OLLAMA_DEBUG",), Choice(("0", "1", "2", "false", "true")), gettext_noop("debug logging")),
    Flag(("CUDA_VISIBLE_DEVICES",), DEVICES, gettext_noop("the NVIDIA GPUs it sees")),
    Flag(("HIP_VISIBLE_DEVICES",), DEVICES, gettext_noop("the AMD GPUs it sees")),
    Flag(("ROCR_VISIBLE_DEVICES",), DEVICES, gettext_noop("the AMD GPUs it sees (ROCr)")),
], env=True)  # fmt: skip

# Ollama chooses draft-mtp or draft-dflash itself from the model (llm/llama_server.go), so a
# speculative_method only says whether a separate draft model is expected.
METHODS = {
    "none": None, "mtp": False, "draft-mtp": False, "dflash": True, "draft-dflash": True,
    "draft": True, "draft-simple": True, "draft-model": True, "draft_model": True,
}  # fmt: skip


def render_ollama(settings: LaunchSettings) -> Recipe:
    s = settings
    b = Builder(s.with_(extra_flags=""), [s.binary, "serve"])
    _environment(b, s)
    _alias(b, s)
    b.notes.append(
        gettext_noop("OLLAMA_* variables are read when ollama serve starts: restart it after changing them")
    )
    b.notes.append(
        gettext_noop("a systemd service takes them from `systemctl edit ollama` (Environment=NAME=value)")
    )
    if s.prefix_caching is not None:
        state = "on" if s.prefix_caching else "off"
        b.notes.append(
            Words(
                gettext_noop("prefix caching (%(state)s) is not rendered: Ollama has no prefix-cache switch"),
                state=state,
            )
        )
    b.unused(
        "attention_backend", gettext_noop("Ollama has no attention backend choice (OLLAMA_FLASH_ATTENTION)")
    )
    b.unused("moe_backend", gettext_noop("Ollama has no MoE backend choice"))
    b.unused("draft_n_min", gettext_noop("Ollama does not pass a minimum draft length to llama-server"))
    b.unused("draft_p_min", gettext_noop("Ollama does not pass a minimum draft probability to llama-server"))
    b.unused("quantization", gettext_noop("the weights of the base model decide it"))
    _thinking(b, s)
    if s.metrics:
        b.notes.append(
            gettext_noop("Ollama has no /metrics endpoint: acceptance is only in the ollama serve log")
        )
    return b.build()


def _thinking(b: Builder, s: LaunchSettings) -> None:
    mode = checked(s)
    if mode:
        b.notes.append(
            Words(
                gettext_noop("thinking (%(mode)s) is sent with every request (think), not at launch"),
                mode=mode,
            )
        )
    b.unused("thinking_budget", gettext_noop("Ollama's think is on or off, with no token budget"))
    b.unused("reasoning_parser", gettext_noop("Ollama parses the model's thinking itself"))


def _environment(b: Builder, s: LaunchSettings) -> None:
    b.env["OLLAMA_HOST"] = s.host_port
    _set(b.env, "OLLAMA_NUM_PARALLEL", s.parallel)
    _set(b.env, "OLLAMA_CONTEXT_LENGTH", s.context_length)
    _set(b.env, "OLLAMA_KV_CACHE_TYPE", s.kv_cache_dtype)
    # Read by the llama-server child (common/arg.cpp set_env) if it inherits Ollama's environment.
    _set(b.env, "LLAMA_ARG_CACHE_RAM", s.cache_ram_mib)
    if s.cache_ram_mib is not None:
        b.notes.append(
            gettext_noop(
                "LLAMA_ARG_CACHE_RAM works only if Ollama passes its environment to the llama-server child "
                "(not verified in Ollama's source)"
            )
        )
    # extra_flags: allowed NAME=value service variables (checked); ollama serve takes no flags.
    for token in flags.checked(ALLOWED_FLAGS, s.extra_flags):
        name, _, value = token.partition("=")
        b.env[name] = value


def _set(env: dict[str, str], name: str, value: object) -> None:
    if value not in (None, ""):
        env[name] = str(value)


def parameters(s: LaunchSettings) -> dict[str, int]:
    """The Modelfile PARAMETERs of the alias (load-time options of api.Runner)."""
    method = s.speculative_method.strip().lower()
    if method not in ("", *METHODS):
        raise ValueError(
            Words(
                gettext_noop(
                    "speculative method: %(method)s means nothing to Ollama "
                    "(Ollama picks draft-mtp or draft-dflash itself; use one of %(known)s)"
                ),
                method=repr(s.speculative_method),
                known=", ".join(METHODS),
            )
        )
    separate = METHODS.get(method)
    if s.draft_model and separate is not True:
        raise ValueError(
            Words(
                gettext_noop("draft model: set, but speculative method %(method)s uses none"),
                method=method or "(empty)",
            )
        )
    if separate and s.lookahead and not s.draft_model:
        raise ValueError(
            Words(
                gettext_noop(
                    "draft model: %(method)s needs a separate draft model (Modelfile DRAFT), none is set"
                ),
                method=method,
            )
        )
    # Lookahead 0 (or method none) is drafting off: without draft_num_predict 0 in the alias,
    # a model with MTP heads would draft its own default length.
    params: dict[str, int] = {"draft_num_predict": 0 if method == "none" else s.lookahead}
    for name, value in (("num_ctx", s.context_length), ("num_thread", s.threads)):
        if value:
            params[name] = value
    if s.max_num_batched_tokens:
        params["num_batch"] = s.max_num_batched_tokens
    return params


def alias_name(s: LaunchSettings, params: dict[str, int]) -> str:
    """A model name made from the base model and the settings, so one config always maps to one."""
    parts = [f"la{params['draft_num_predict']}"]
    short = {"num_ctx": "c", "num_thread": "t", "num_batch": "b"}
    parts += [f"{short[k]}{v}" for k, v in params.items() if k in short]
    if s.draft_model:
        parts.append("d" + hashlib.sha256(s.draft_model.encode()).hexdigest()[:8])
    base = re.sub(r"[^A-Za-z0-9._/-]+", "-", s.model.replace(":", "-")).strip("-")
    return f"{base}-sd-{'-'.join(parts)}"


def _alias(b: Builder, s: LaunchSettings) -> None:
    params = parameters(s)
    if not params["draft_num_predict"]:
        b.notes.append(gettext_noop("lookahead is 0: the alias sets draft_num_predict 0, so drafting is off"))
    alias = alias_name(s, params)
    lines = [f"FROM {s.model}"]
    if s.draft_model:
        lines.append(f"DRAFT {s.draft_model}")
    lines += [f"PARAMETER {k} {v}" for k, v in params.items()]
    b.files["Modelfile"] = "\n".join(lines) + "\n"
    if s.draft_model:
        # The DRAFT command has no documented /api/create field: create it from the Modelfile.
        b.notes.append(
            Words(gettext_noop("create the alias with: ollama create %(alias)s -f Modelfile"), alias=alias)
        )
    else:
        body = {"model": alias, "from": s.model, "parameters": params}
        b.api_calls.append({"method": "POST", "path": "/api/create", "json": body})
    b.notes.append(
        Words(
            gettext_noop("benchmark the alias %(alias)s (it shares the weights of %(model)s)"),
            alias=alias,
            model=s.model,
        )
    )
