"""Launch recipes: the command line, environment and files that start an engine with a config's settings.

Django-free. ``settings_from_config`` reads any object shaped like ``EngineConfig`` (with an
``engine`` carrying ``kind``, ``base_url`` and ``binary``); ``render`` turns settings into a
:class:`Recipe`, raising ``ValueError`` (message starts with the field name) for combinations
the engine cannot run.
"""

from __future__ import annotations

from typing import Any

from engines import kinds
from engines.recipes import simulator
from engines.recipes.base import LaunchSettings, Recipe
from engines.recipes.flags import checked
from measure.words import Words, gettext_noop

__all__ = ["LaunchSettings", "Recipe", "method_choices", "render", "render_config", "settings_from_config"]

OPTIONAL = (
    "quantization", "speculative_method", "draft_model", "draft_n_min", "draft_p_min",
    "context_length", "parallel", "threads", "cache_ram_mib", "kv_cache_dtype", "prefix_caching",
    "max_num_batched_tokens", "attention_backend", "moe_backend", "thinking", "thinking_budget",
    "reasoning_parser", "extra_flags",
)  # fmt: skip


def settings_from_config(config: Any) -> LaunchSettings:
    """The launch settings of an ``EngineConfig``-like object (duck-typed; blank text is default).

    :param config: has ``model``, ``lookahead``, the optional fields of :class:`LaunchSettings`
        (missing ones count as unset) and ``engine`` with ``kind``, ``base_url``, ``binary`` and
        (optionally) ``simulator``.
    """
    engine = config.engine
    values = {name: getattr(config, name, None) for name in OPTIONAL}
    values = {k: (v.strip() if isinstance(v, str) else v) for k, v in values.items() if v is not None}
    return LaunchSettings.from_base_url(
        engine.kind,
        getattr(engine, "base_url", "") or "",
        model=config.model.strip(),
        binary=(getattr(engine, "binary", "") or "").strip(),
        lookahead=getattr(config, "lookahead", 0) or 0,
        simulator=bool(getattr(engine, "simulator", False)),
        **values,
    )


def render(settings: LaunchSettings) -> Recipe:
    """The recipe that starts ``settings.kind`` with these settings (its renderer in engines.kinds).

    A simulator engine's extra flags are the simulator's (checked against its allowlist), not
    the kind's: the recipe shown is the real engine's without them.

    :raises ValueError: for settings the engine cannot run; the message starts with the field.
    """
    if not settings.simulator:
        plain: Recipe = kinds.get(settings.kind).render(settings)
        return plain
    extra = checked(simulator.ALLOWED_FLAGS, settings.extra_flags)
    recipe: Recipe = kinds.get(settings.kind).render(settings.with_(extra_flags=""))
    if extra:
        recipe.notes.append(Words(
            gettext_noop("extra flags (%(flags)s) are the SparkDash simulator's, which stands in for this "
                         "engine: not rendered"), flags=" ".join(extra),
        ))
    return recipe


def render_config(config: Any) -> tuple[Recipe | None, str]:
    """``(recipe, "")`` for a config, or ``(None, reason)`` when its settings cannot be rendered."""
    try:
        return render(settings_from_config(config)), ""
    except ValueError as exc:
        # Words keeps its marked template for the page to translate; str() would drop it.
        reason = exc.args[0] if exc.args and isinstance(exc.args[0], Words) else str(exc)
        return None, reason


def method_choices(kind: str) -> list[str]:
    """The speculative_method names the kind's launch recipe takes (the config form offers them)."""
    spec = kinds.find(kind)
    return spec.method_names() if spec else []
