"""llama.cpp's ``llama-server``: flags as defined in common/arg.cpp of build b11434."""

from __future__ import annotations

from engines.recipes.base import Builder, LaunchSettings, Recipe
from engines.recipes.reasoning import render_llama_reasoning
from engines.words import Words, gettext_noop

__all__ = ["SPEC_TYPES", "render_llama_server"]

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
                    "speculative_method: %(names)s is not a llama-server --spec-type (one of %(known)s)"
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
                gettext_noop("draft_model: set, but speculative_method is empty (use draft-simple)")
            )
        for name in ("lookahead", "draft_n_min", "draft_p_min"):
            b.unused(name, gettext_noop("speculative_method is empty, so speculative decoding is off"))
        return
    if s.draft_model and not drafts:
        raise ValueError(
            Words(gettext_noop("draft_model: set, but %(types)s uses no draft model"), types=",".join(types))
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
                gettext_noop("draft_model: %(type)s needs a draft model (-md), and none is set"),
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
