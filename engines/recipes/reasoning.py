"""Thinking on the launch side: llama-server's reasoning budget, and vLLM/SGLang's reasoning parser.

A config's thinking is "" (the engine's default: nothing rendered), "off", "on" or "budget"
(on, with ``thinking_budget`` reasoning tokens). Requests carry thinking on/off too (the clients
render it per request); the launch side makes the server keep reasoning out of the answer text
(llama-server ``--reasoning-format deepseek``, vLLM/SGLang ``--reasoning-parser``) and, where a
flag can, bounds it. Kind names stay in each engine's renderer: it passes its own parser table.
"""

from __future__ import annotations

from engines.recipes.base import Builder, LaunchSettings
from measure.words import Words, gettext_noop

__all__ = [
    "THINKING", "Parsers", "checked", "guess_parser", "render_llama_reasoning", "render_reasoning_parser",
]

THINKING = ("", "off", "on", "budget")
# (model-name fragment, parser name) pairs: each engine's renderer has its own (vLLM's reasoning
# parsers and SGLang's differ in spelling); the first fragment in the lower-cased name wins.
Parsers = tuple[tuple[str, str], ...]


def checked(s: LaunchSettings) -> str:
    """The thinking mode, after checking it and its budget; ValueError naming the field."""
    if s.thinking not in THINKING:
        raise ValueError(Words(
            gettext_noop("thinking: %(mode)s is not one of off, on, budget (or blank)"), mode=repr(s.thinking)
        ))
    if s.thinking == "budget" and s.thinking_budget is None:
        raise ValueError(gettext_noop("thinking budget: thinking 'budget' needs a budget in tokens"))
    if s.thinking_budget is not None and s.thinking != "budget":
        raise ValueError(gettext_noop("thinking budget: set, but thinking is not 'budget'"))
    return s.thinking


def render_llama_reasoning(b: Builder, s: LaunchSettings) -> None:
    """--reasoning-budget (-1 unlimited, 0 off, N tokens) and --reasoning-format deepseek."""
    mode = checked(s)
    b.unused("reasoning_parser", gettext_noop("llama-server parses reasoning with --reasoning-format"))
    if not mode:
        return
    budget = {"off": 0, "on": -1}.get(mode, s.thinking_budget)
    b.flag("--reasoning-budget", budget)
    # deepseek: reasoning arrives in reasoning_content, never in the answer's content.
    b.flag("--reasoning-format", "deepseek")


def guess_parser(parsers: Parsers, model: str) -> str:
    """The reasoning parser a model's name suggests among `parsers`, or "" for none known."""
    name = model.lower()
    return next((parser for fragment, parser in parsers if fragment in name), "")


def render_reasoning_parser(b: Builder, s: LaunchSettings, parsers: Parsers) -> None:
    """--reasoning-parser: the config's, else the model family's; a budget is only noted."""
    mode = checked(s)
    parser = s.reasoning_parser or (guess_parser(parsers, s.model) if mode else "")
    if mode in ("on", "budget") and not parser:
        known = ", ".join(sorted({p for _, p in parsers}))
        raise ValueError(Words(gettext_noop(
            "reasoning parser: none known for %(model)s, so its reasoning would arrive in the answer "
            "text; set one (%(known)s, ...)"
        ), model=repr(s.model), known=known))
    b.flag("--reasoning-parser", parser)
    if mode == "budget":
        b.notes.append(Words(gettext_noop(
            "thinking budget (%(budget)s) is not rendered: %(kind)s has no reasoning budget "
            "flag; the answer's max tokens bound reasoning and answer together"
        ), budget=s.thinking_budget, kind=s.kind))
