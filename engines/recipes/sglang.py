"""SGLang's ``python3 -m sglang.launch_server``: server arguments (see sglang_server_flags.txt)."""

from __future__ import annotations

from engines.recipes.base import Builder, LaunchSettings, Recipe
from engines.recipes.flags import Choice, Flag, FlagTable, Int, Name, Num
from engines.recipes.reasoning import render_reasoning_parser
from measure.words import Words, gettext_noop

__all__ = ["ALGORITHMS", "ALLOWED_FLAGS", "render_sglang"]

WINDOW = Int(1, 1024)
# The extra flags a config may add (engines.recipes.flags), as server_args.py spells them.
ALLOWED_FLAGS = FlagTable("sglang", "SGLang", [
    Flag(("--mem-fraction-static",), Num(0, 1, above=True),
         gettext_noop("share of memory for weights and KV cache")),
    Flag(("--max-running-requests",), Int(1, 65_536), gettext_noop("requests run at once")),
    Flag(("--max-queued-requests",), Int(1, 1_000_000), gettext_noop("requests waiting at most")),
    Flag(("--max-total-tokens",), Int(1, 100_000_000), gettext_noop("tokens in the KV pool")),
    Flag(("--chunked-prefill-size",), Int(-1, 10_000_000), gettext_noop("prefill chunk size (-1: off)")),
    Flag(("--max-prefill-tokens",), Int(1, 10_000_000), gettext_noop("tokens per prefill batch")),
    Flag(("--disable-radix-cache",), None, gettext_noop("no prefix (radix) cache")),
    Flag(("--cuda-graph-max-bs",), Int(1, 4096), gettext_noop("largest batch captured in a CUDA graph")),
    Flag(("--disable-cuda-graph",), None, gettext_noop("no CUDA graphs")),
    Flag(("--disable-cuda-graph-padding",), None, gettext_noop("no padding to a captured batch size")),
    Flag(("--device",), Choice(("cuda", "cpu", "xpu", "hpu", "npu", "mps")), gettext_noop("the device")),
    Flag(("--attention-backend",), Name(), gettext_noop("attention kernels (also a config field)")),
    Flag(("--disable-overlap-schedule",), None, gettext_noop("no CPU/GPU overlap scheduler")),
    Flag(("--dtype",), Choice(("auto", "half", "float16", "bfloat16", "float", "float32")),
         gettext_noop("weights and activations data type")),
    Flag(("--sleep-on-idle",), None, gettext_noop("the idle scheduler sleeps")),
    Flag(("--tp-size", "--tensor-parallel-size"), Int(1, 64), gettext_noop("tensor-parallel GPUs")),
    Flag(("--dp-size", "--data-parallel-size"), Int(1, 64), gettext_noop("data-parallel replicas")),
    Flag(("--pp-size", "--pipeline-parallel-size"), Int(1, 64), gettext_noop("pipeline stages")),
    Flag(("--schedule-policy",), Choice(("lpm", "random", "fcfs", "dfs-weight", "lof", "priority")),
         gettext_noop("scheduling policy")),
    Flag(("--schedule-conservativeness",), Num(0, 10), gettext_noop("how conservative admission is")),
    Flag(("--page-size",), Int(1, 4096), gettext_noop("tokens per KV page")),
    Flag(("--enable-torch-compile",), None, gettext_noop("torch.compile")),
    Flag(("--torch-compile-max-bs",), Int(1, 4096), gettext_noop("largest batch compiled")),
    Flag(("--enable-mixed-chunk",), None, gettext_noop("prefill and decode in one batch")),
    Flag(("--enable-dp-attention",), None, gettext_noop("data-parallel attention")),
    Flag(("--num-continuous-decode-steps",), Int(1, 1024), gettext_noop("decode steps per scheduling round")),
    Flag(("--stream-interval",), Int(1, 1000), gettext_noop("tokens per streamed chunk")),
    Flag(("--random-seed",), Int(0, 4_294_967_295), gettext_noop("random seed")),
    Flag(("--cpu-offload-gb",), Int(0, 100_000), gettext_noop("weights offloaded to the CPU (GB)")),
    Flag(("--enable-hierarchical-cache",), None, gettext_noop("host-memory prefix cache")),
    Flag(("--hicache-ratio",), Num(0, 100, above=True),
         gettext_noop("host cache size as a multiple of the device's")),
    Flag(("--hicache-size",), Int(0, 1_000_000), gettext_noop("host cache size (GB)")),
    Flag(("--disable-chunked-prefix-cache",), None, gettext_noop("no chunked prefix cache")),
    Flag(("--speculative-ngram-min-match-window-size",), WINDOW, gettext_noop("NGRAM: shortest match")),
    Flag(("--speculative-ngram-max-match-window-size",), WINDOW, gettext_noop("NGRAM: longest match")),
    Flag(("--speculative-ngram-min-bfs-breadth",), Int(1, 64), gettext_noop("NGRAM: narrowest draft tree")),
    Flag(("--speculative-ngram-max-bfs-breadth",), Int(1, 64), gettext_noop("NGRAM: widest draft tree")),
    Flag(("--speculative-ngram-match-type",), Choice(("BFS", "PROB")),
         gettext_noop("NGRAM: how drafts are picked")),
    Flag(("--speculative-ngram-branch-length",), WINDOW, gettext_noop("NGRAM: branch length")),
    Flag(("--speculative-ngram-capacity",), Int(1, 1_000_000_000), gettext_noop("NGRAM: cache capacity")),
    Flag(("--speculative-accept-threshold-single",), Num(0, 1),
         gettext_noop("accept a single draft token above this")),
    Flag(("--speculative-accept-threshold-acc",), Num(0, 1),
         gettext_noop("accept drafts above this accumulated")),
    Flag(("--sampling-backend",), Choice(("flashinfer", "pytorch")), gettext_noop("sampling kernels")),
    Flag(("--grammar-backend",), Choice(("xgrammar", "outlines", "llguidance", "none")),
         gettext_noop("structured output backend")),
    Flag(("--tool-call-parser",), Name(), gettext_noop("a built-in tool-call parser")),
    Flag(("--log-level",), Choice(("debug", "info", "warning", "error", "critical")),
         gettext_noop("log level")),
    Flag(("--skip-server-warmup",), None, gettext_noop("no warm-up request at start")),
])  # fmt: skip

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
                    "speculative method: %(method)s is not an SGLang --speculative-algorithm "
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
                gettext_noop("draft model: set, but speculative method is empty (use STANDALONE)")
            )
        b.unused("lookahead", gettext_noop("speculative method is empty, so speculative decoding is off"))
        return
    if algo == "NGRAM" and s.draft_model:
        raise ValueError(gettext_noop("draft model: set, but SGLang NGRAM uses no draft model"))
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
                    "draft model: SGLang %(algo)s needs --speculative-draft-model-path, and none is set"
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
