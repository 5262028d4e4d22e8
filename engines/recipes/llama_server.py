"""llama.cpp's ``llama-server``: flags as defined in common/arg.cpp of build b11434."""

from __future__ import annotations

from engines.recipes.base import Builder, LaunchSettings, Recipe
from engines.recipes.flags import Choice, Either, Flag, FlagTable, Int, Num, Pattern
from engines.recipes.reasoning import render_llama_reasoning
from measure.words import Words, gettext_noop

__all__ = ["ALLOWED_FLAGS", "SPEC_TYPES", "render_llama_server"]

LAYERS = Either((Int(0, 10_000), Choice(("auto", "all"))))
# The extra flags a config may add (engines.recipes.flags), as common/arg.cpp of b11434 spells them.
ALLOWED_FLAGS = FlagTable("llama-server", "llama-server", [
    Flag(("-ngl", "--gpu-layers", "--n-gpu-layers"), LAYERS, gettext_noop("layers kept in VRAM")),
    Flag(("-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft"), LAYERS,
         gettext_noop("the draft model's layers kept in VRAM")),
    Flag(("-fa", "--flash-attn"), Choice(("on", "off", "auto")), gettext_noop("flash attention")),
    Flag(("-lm", "--load-mode"), Choice(("auto", "none", "mmap", "mlock", "mmap+mlock")),
         gettext_noop("how the weights are loaded (mmap, mlock)")),
    Flag(("-b", "--batch-size"), Int(1, 1_048_576), gettext_noop("logical batch size")),
    Flag(("-ub", "--ubatch-size"), Int(1, 1_048_576), gettext_noop("physical batch size")),
    Flag(("-tb", "--threads-batch"), Int(1, 1024), gettext_noop("threads for prompt processing")),
    Flag(("--jinja",), None, gettext_noop("the model's Jinja chat template")),
    Flag(("--no-jinja",), None, gettext_noop("no Jinja chat template")),
    Flag(("--reasoning-format",), Choice(("none", "deepseek", "deepseek-legacy", "auto")),
         gettext_noop("where reasoning goes in the answer")),
    Flag(("--rope-scaling",), Choice(("none", "linear", "yarn")), gettext_noop("RoPE scaling method")),
    Flag(("--rope-scale",), Num(0, 1000, above=True), gettext_noop("RoPE context scaling factor")),
    Flag(("--rope-freq-base",), Num(0, 1e9, above=True), gettext_noop("RoPE base frequency")),
    Flag(("--rope-freq-scale",), Num(0, 1000, above=True), gettext_noop("RoPE frequency scaling factor")),
    Flag(("--yarn-orig-ctx",), Int(0, 10_000_000), gettext_noop("YaRN original context")),
    Flag(("--yarn-ext-factor",), Num(-1, 100), gettext_noop("YaRN extrapolation mix")),
    Flag(("--yarn-attn-factor",), Num(-1, 100), gettext_noop("YaRN attention magnitude")),
    Flag(("--yarn-beta-slow",), Num(-1, 1000), gettext_noop("YaRN high correction dim")),
    Flag(("--yarn-beta-fast",), Num(-1, 1000), gettext_noop("YaRN low correction dim")),
    Flag(("-sm", "--split-mode"), Choice(("none", "layer", "row", "tensor")),
         gettext_noop("how the model is split across GPUs")),
    Flag(("-ts", "--tensor-split"),
         Pattern(r"\d+(\.\d+)?(,\d+(\.\d+)?)*", gettext_noop("numbers separated by commas")),
         gettext_noop("the share of the model on each GPU")),
    Flag(("-mg", "--main-gpu"), Int(0, 63), gettext_noop("the GPU for the whole model or its small tensors")),
    Flag(("-dev", "--device"),
         Pattern(r"[A-Za-z0-9_]+(,[A-Za-z0-9_]+)*", gettext_noop("device names, comma-separated")),
         gettext_noop("the devices to offload to")),
    Flag(("--numa",), Choice(("distribute", "isolate", "numactl")), gettext_noop("NUMA placement")),
    Flag(("-cmoe", "--cpu-moe"), None, gettext_noop("all MoE expert weights on the CPU")),
    Flag(("-ncmoe", "--n-cpu-moe"), Int(0, 10_000),
         gettext_noop("the MoE expert weights of the first N layers on the CPU")),
    Flag(("--swa-full",), None, gettext_noop("a full-size sliding-window-attention cache")),
    Flag(("-nkvo", "--no-kv-offload"), None, gettext_noop("the KV cache stays on the CPU")),
    Flag(("-kvu", "--kv-unified"), None, gettext_noop("one KV buffer shared by all sequences")),
    Flag(("-cb", "--cont-batching"), None, gettext_noop("continuous batching")),
    Flag(("-nocb", "--no-cont-batching"), None, gettext_noop("no continuous batching")),
    Flag(("--context-shift",), None, gettext_noop("shift the context when it is full")),
    Flag(("--no-context-shift",), None, gettext_noop("no context shift")),
    Flag(("--cache-reuse",), Int(0, 10_000_000),
         gettext_noop("minimum chunk reused from the cache by KV shifting")),
    Flag(("-ctxcp", "--ctx-checkpoints"), Int(0, 1024), gettext_noop("context checkpoints per slot")),
    Flag(("--poll",), Int(0, 100), gettext_noop("polling level while waiting for work")),
    Flag(("--prio",), Int(-1, 2), gettext_noop("process priority (-1 low to 2 high)")),
    Flag(("-fit", "--fit"), Choice(("on", "off")), gettext_noop("fit unset settings into device memory")),
    Flag(("-to", "--timeout"), Int(1, 86_400), gettext_noop("server read/write timeout (s)")),
    Flag(("--temp", "--temperature"), Num(0, 5), gettext_noop("default sampling temperature")),
    Flag(("-s", "--seed"), Int(-1, 4_294_967_295), gettext_noop("default sampling seed")),
    Flag(("--no-warmup",), None, gettext_noop("no warm-up run at start")),
    Flag(("--no-webui",), None, gettext_noop("no web UI")),
])  # fmt: skip

# common/speculative.cpp (b11434): the names --spec-type accepts, comma-separated.
SPEC_TYPES = (
    "none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark",
    "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
)  # fmt: skip
ALIASES = {
    "draft": "draft-simple", "draft-model": "draft-simple", "draft_model": "draft-simple",
    "mtp": "draft-mtp", "eagle3": "draft-eagle3", "dflash": "draft-dflash", "dspark": "draft-dspark",
}  # fmt: skip
# These build a draft context from a separate model (GGML_ASSERT ctx_dft in speculative.cpp);
# draft-mtp builds it from the target model's own MTP heads.
NEEDS_DRAFT_MODEL = {"draft-simple", "draft-eagle3", "draft-dflash", "draft-dspark"}
DRAFT_TYPES = NEEDS_DRAFT_MODEL | {"draft-mtp"}
# The draft length of each ngram type (common_speculative_n_max); ngram-cache is fixed at 8.
NGRAM_LENGTH_FLAG = {
    "ngram-mod": "--spec-ngram-mod-n-max",
    "ngram-simple": "--spec-ngram-simple-size-m",
    "ngram-map-k": "--spec-ngram-map-k-size-m",
    "ngram-map-k4v": "--spec-ngram-map-k4v-size-m",
}


def render_llama_server(settings: LaunchSettings) -> Recipe:
    s = settings
    b = Builder(s, [s.binary, "-m", s.model, "--host", s.host, "--port", str(s.port)])
    b.flag("--metrics", s.metrics)
    b.flag("-c", s.context_length)
    b.flag("-np", s.parallel)
    b.flag("-t", s.threads)
    b.flag("--cache-ram", s.cache_ram_mib)
    b.flag("-b", s.max_num_batched_tokens)
    if s.kv_cache_dtype:
        b.flag("-ctk", s.kv_cache_dtype)
        b.flag("-ctv", s.kv_cache_dtype)
    if s.prefix_caching is not None:
        b.flag("--cache-prompt" if s.prefix_caching else "--no-cache-prompt")
    _speculative(b, s)
    render_llama_reasoning(b, s)
    b.unused(
        "attention_backend",
        gettext_noop("llama-server has no attention backend choice (flash attention: -fa)"),
    )
    b.unused("moe_backend", gettext_noop("llama-server has no MoE backend choice"))
    return b.build()


def spec_types(method: str) -> list[str]:
    """The --spec-type names for a speculative_method (comma-separated; aliases accepted)."""
    names = [ALIASES.get(n, n) for n in (p.strip().lower() for p in method.split(",")) if n]
    unknown = [n for n in names if n not in SPEC_TYPES]
    if unknown:
        raise ValueError(
            Words(
                gettext_noop(
                    "speculative method: %(names)s is not a llama-server --spec-type (one of %(known)s)"
                ),
                names=", ".join(unknown),
                known=", ".join(SPEC_TYPES),
            )
        )
    return [n for n in names if n != "none"]


def _speculative(b: Builder, s: LaunchSettings) -> None:
    types = spec_types(s.speculative_method)
    drafts = [t for t in types if t in DRAFT_TYPES]
    if not types:
        if s.draft_model:
            raise ValueError(
                gettext_noop("draft model: set, but speculative method is empty (use draft-simple)")
            )
        for name in ("lookahead", "draft_n_min", "draft_p_min"):
            b.unused(name, gettext_noop("speculative method is empty, so speculative decoding is off"))
        return
    if s.draft_model and not drafts:
        raise ValueError(
            Words(gettext_noop("draft model: set, but %(types)s uses no draft model"), types=",".join(types))
        )
    if not s.lookahead:
        # 0 draft tokens is no drafting; llama-server would otherwise draft its default length.
        b.notes.append(
            Words(
                gettext_noop("lookahead is 0: speculative decoding is off (%(types)s is not rendered)"),
                types=",".join(types),
            )
        )
        for name in ("draft_model", "draft_n_min", "draft_p_min"):
            b.unused(name, gettext_noop("lookahead is 0, so speculative decoding is off"))
        return
    missing = [t for t in types if t in NEEDS_DRAFT_MODEL]
    if missing and not s.draft_model:
        raise ValueError(
            Words(
                gettext_noop("draft model: %(type)s needs a draft model (-md), and none is set"),
                type=missing[0],
            )
        )
    b.flag("--spec-type", ",".join(types))
    b.flag("-md", s.draft_model or None)
    if drafts:
        b.flag("--spec-draft-n-max", s.lookahead)
        b.flag("--spec-draft-n-min", s.draft_n_min)
        b.flag("--spec-draft-p-min", s.draft_p_min)
    for t in types:
        if t in NGRAM_LENGTH_FLAG:
            b.flag(NGRAM_LENGTH_FLAG[t], s.lookahead)
        if t == "ngram-mod":
            b.flag("--spec-ngram-mod-n-min", s.draft_n_min)
    if not drafts:
        b.unused("draft_p_min", gettext_noop("ngram speculative types have no minimum draft probability"))
        if "ngram-mod" not in types:
            b.unused(
                "draft_n_min",
                Words(gettext_noop("%(types)s has no minimum draft length"), types=",".join(types)),
            )
    if types == ["ngram-cache"]:
        b.unused("lookahead", gettext_noop("ngram-cache drafts a fixed 8 tokens"))
