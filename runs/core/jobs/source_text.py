"""Deterministic source-like text: numbered Python-ish lines for filling a conversation.

The prefix-cache probe pastes "the next part of a file" into every step, as a coding agent does;
the same seed and size always give the same text, so runs compare.
"""
from __future__ import annotations

import random

__all__ = ["source_text"]

NOUNS = ("order", "user", "item", "invoice", "route", "session", "report", "token", "cart", "payment")
VERBS = ("load", "save", "check", "build", "parse", "send", "merge", "count", "render", "close")


def source_text(n_bytes: int, seed: int = 0, first_line: int = 1) -> str:
    """Exactly n_bytes of ASCII source, each line starting with its line number.

    :param seed: picks names and constants; each seed gives a different text.
    :param first_line: the number of the first line, so consecutive parts read as one file.
    """
    rng = random.Random(seed)
    lines: list[str] = []
    size, number = 0, first_line
    while size <= n_bytes:
        for line in _function(rng):
            lines.append(f"{number:5d}  {line}".rstrip())
            size += len(lines[-1]) + 1
            number += 1
    return "\n".join(lines)[:n_bytes]


def _function(rng: random.Random) -> list[str]:
    verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
    a, b = rng.randrange(2, 100), rng.randrange(1, 1000)
    return [
        f"def {verb}_{noun}_{b}(request, {noun}_id):",
        f'    """{verb.capitalize()} the {noun} for the given id."""',
        f"    total = {noun}_id * {a} + {b}",
        f"    if total % {a} == {b % a}:",
        f"        return {{'{noun}': {noun}_id, 'total': total}}",
        "    return None",
        "",
    ]
