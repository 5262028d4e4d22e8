"""What may be launched: the one check of a config's launch settings, run by the config form, the
YAML loader, the config matrix and the admin (``EngineConfig.clean``), and again by the worker
right before it starts a managed engine (runs.worker.engine_session), so a row written behind the
form's back launches nothing outside the allowlists either.

Extra flags must be in the kind's allowlist (the simulator's own for a simulator engine), models
must be names inside this machine's model directories or hub ids, and the typed text settings that
become flag values must be plain names. No Django here.
"""
from __future__ import annotations

import re

from engines import kinds
from engines.recipes import simulator
from engines.recipes.base import LaunchSettings
from engines.recipes.field_words import field_words
from engines.recipes.flags import FlagTable, checked
from engines.recipes.model_dirs import model_refusal
from measure.words import Words, gettext_noop

__all__ = ["TYPED_NAMES", "flag_table", "launch_refusal", "launch_refusals"]

# Typed settings rendered as a flag's value (or an environment value): names, never a flag or a path.
TYPED_NAMES = (
    "quantization", "speculative_method", "kv_cache_dtype", "attention_backend", "moe_backend",
    "reasoning_parser",
)  # fmt: skip
TYPED = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.,:+-]{0,99}")


def flag_table(settings: LaunchSettings) -> FlagTable:
    """The allowlist of the settings' extra flags: its kind's, or the simulator's."""
    return simulator.ALLOWED_FLAGS if settings.simulator else kinds.get(settings.kind).flag_table()


def launch_refusals(settings: LaunchSettings) -> dict[str, Words]:
    """What these settings may not launch, by field (empty: nothing); each message starts with the field."""
    errors: dict[str, Words] = {}
    try:
        checked(flag_table(settings), settings.extra_flags)
    except ValueError as exc:
        errors["extra_flags"] = exc.args[0] if isinstance(exc.args[0], Words) else Words(str(exc))
    for field in ("model", "draft_model"):
        refusal = model_refusal(field, getattr(settings, field))
        if refusal is not None:
            errors[field] = refusal
    for field in TYPED_NAMES:
        value = getattr(settings, field)
        if value and not TYPED.fullmatch(value):
            errors[field] = Words(
                gettext_noop("%(field)s: %(value)s is not a name (letters, digits and _ . , : + -)"),
                field=field_words(field), value=repr(value),
            )
    return errors


def launch_refusal(settings: LaunchSettings) -> Words | None:
    """Why these settings may not launch (every refused field), or None."""
    errors = launch_refusals(settings)
    return Words.joined("; ", list(errors.values())) if errors else None


def allowlist_markdown() -> str:
    """The README's list of every kind's allowed extra flags, made from the tables themselves
    (``python -m engines.recipes.checks`` prints it; a test holds the README to it)."""
    tables = [spec.flag_table() for spec in kinds.REGISTRY.values()] + [simulator.ALLOWED_FLAGS]
    lines: list[str] = []
    for table in tables:
        lines += ["", f"**{table.label}** (`{table.kind}`{', as `NAME=value`' if table.env else ''}):", ""]
        lines += ["| flag | value | what |", "| --- | --- | --- |"]
        for flag in table.flags:
            value = "(none)" if flag.value is None else flag.value.describe()
            lines.append(f"| {', '.join(f'`{name}`' for name in flag.names)} | {value} | {flag.what} |")
    return "\n".join(lines[1:]) + "\n"


if __name__ == "__main__":
    print(allowlist_markdown(), end="")
