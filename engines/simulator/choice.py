"""The simulator's answer to a multiple-choice question (MMLU-Pro as lm-eval asks it): a short
reasoning and "The answer is (X)", X one of the question's own option letters chosen from a hash
of the question, so a run is repeatable and scores about what guessing would. Simulated: it never
reads the options."""
from __future__ import annotations

import re
import zlib
from typing import Any

__all__ = ["multiple_choice_answer"]

# lm-eval's mmlu_pro prompt ends each question with this instruction.
ASKS = re.compile(r'the answer is \(X\)', re.IGNORECASE)
OPTION = re.compile(r"^([A-J])\. ", re.MULTILINE)


def multiple_choice_answer(messages: list[dict[str, Any]]) -> str | None:
    """The reply to a conversation whose last user message is such a question, else None."""
    asked = [m for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
    if not asked:
        return None
    question = asked[-1]["content"]
    if not ASKS.search(question) and not any(ASKS.search(str(m.get("content", ""))) for m in messages):
        return None
    letters = OPTION.findall(question.rpartition("Question:")[2]) or OPTION.findall(question)
    if not letters:
        return None
    pick = letters[zlib.crc32(question.encode()) % len(letters)]
    return f"Let's think step by step. The simulator does not read the options. The answer is ({pick})."
