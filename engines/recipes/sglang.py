"""SGLang's ``python3 -m sglang.launch_server``: server arguments (see sglang_server_flags.txt)."""

from __future__ import annotations

from engines.recipes.base import Builder, LaunchSettings, Recipe
from engines.recipes.reasoning import render_reasoning_parser
from engines.words import Words, gettext_noop

__all__ = ["ALGORITHMS", "render_sglang"]

ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH")
ALIASES = {
    "mtp": "NEXTN", "draft-mtp": "NEXTN", "draft": "STANDALONE", "draft-simple": "STANDALONE",
    "draft-model": "STANDALONE", "draft_model": "STANDALONE", "draft-eagle3": "EAGLE3",
    "draft-dflash": "DFLASH",
}  # fmt: skip
NEEDS_MODEL = {"EAGLE", "EAGLE3", "STANDALONE", "DFLASH"}
# Draft with a step count and a tree width; NGRAM and DFLASH only take the draft token count.
STEPPED = {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE"}
QUANTIZATION = {
    "awq", "fp8", "gptq", "marlin", "gptq_marlin", "awq_marlin", "bitsandbytes", "gguf", "modelopt",
    "modelopt_fp4", "petit_nvfp4", "w8a8_int8", "w8a8_fp8", "moe_wna16", "qoq", "w4afp8", "mxfp4",
}  # fmt: skip
# --reasoning-parser names by the model-name fragment that suggests them (sglang's ReasoningParser).
REASONING_PARSERS = (
    ("qwq", "deepseek-r1"), ("qwen3", "qwen3"), ("deepseek-r1", "deepseek-r1"),
    ("deepseek_r1", "deepseek-r1"), ("gpt-oss", "gpt-oss"), ("glm-4.5", "glm45"), ("glm4.5", "glm45"),
)  # fmt: skip


def render_sglang(settings: LaunchSettings) -> Recipe:
    s = settings
    argv = [s.binary, "-m", "sglang.launch_server", "--model-path", s.model]
    b = Builder(s, [*argv, "--host", s.host, "--port", str(s.port)])
    b.flag("--enable-metrics", s.metrics)
    b.flag("--context-length", s.context_length)
    b.flag("--max-running-requests", s.parallel)
    b.flag("--chunked-prefill-size", s.max_num_batched_tokens)
    b.flag("--kv-cache-dtype", s.kv_cache_dtype)
    b.flag("--disable-radix-cache", s.prefix_caching is False)
    b.flag("--attention-backend", s.attention_backend)
    b.flag("--moe-runner-backend", s.moe_backend)
    if s.quantization.lower() in QUANTIZATION:
        b.flag("--quantization", s.quantization.lower())
    else:
        b.unused(
            "quantization",
            gettext_noop("not an SGLang --quantization method; SGLang reads the checkpoint's own"),
        )
    _speculative(b, s)
    render_reasoning_parser(b, s, REASONING_PARSERS)
    b.unused("threads", gettext_noop("SGLang has no CPU thread count flag"))
    b.unused(
        "cache_ram_mib",
        gettext_noop("SGLang's host cache is --enable-hierarchical-cache/--hicache-size (GB)"),
    )
    b.unused("draft_n_min", gettext_noop("SGLang has no minimum draft length"))
    b.unused("draft_p_min", gettext_noop("SGLang's accept thresholds are not a minimum draft probability"))
    return b.build()


def algorithm(method: str) -> str | None:
    """The --speculative-algorithm for a speculative_method (case-insensitive; aliases accepted)."""
    name = method.strip()
    if name.lower() in ("", "none"):
        return None
    found = ALIASES.get(name.lower(), name.upper())
    if found not in ALGORITHMS:
        raise ValueError(
            Words(
                gettext_noop(
                    "speculative_method: %(method)s is not an SGLang --speculative-algorithm "
                    "(one of %(known)s)"
                ),
                method=repr(method),
                known=", ".join(ALGORITHMS),
            )
        )
    return found


def _speculative(b: Builder, s: LaunchSettings) -> None:
    algo = algorithm(s.speculative_method)
    if algo is None:
        if s.draft_model:
            raise ValueError(
                gettext_noop("draft_model: set, but speculative_method is empty (use STANDALONE)")
            )
        b.unused("lookahead", gettext_noop("speculative_method is empty, so speculative decoding is off"))
        return
    if algo == "NGRAM" and s.draft_model:
        raise ValueError(gettext_noop("draft_model: set, but SGLang NGRAM uses no draft model"))
    if not s.lookahead:
        # Rendering the algorithm alone would let SGLang pick its own draft length.
        b.notes.append(
            Words(
                gettext_noop("lookahead is 0: speculative decoding is off (SGLang %(algo)s is not rendered)"),
                algo=algo,
            )
        )
        return
    if algo in NEEDS_MODEL and not s.draft_model:
        raise ValueError(
            Words(
                gettext_noop(
                    "draft_model: SGLang %(algo)s needs --speculative-draft-model-path, and none is set"
                ),
                algo=algo,
            )
        )
    b.flag("--speculative-algorithm", algo)
    b.flag("--speculative-draft-model-path", s.draft_model or None)
    if algo in STEPPED:
        # A chain (top-k 1) of N draft steps verifies N draft tokens plus the root token.
        b.flag("--speculative-num-steps", s.lookahead)
        b.flag("--speculative-eagle-topk", 1)
    b.flag("--speculative-num-draft-tokens", s.lookahead + 1)
