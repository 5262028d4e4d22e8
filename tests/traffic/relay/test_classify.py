"""An answer's output type from what the engine answered."""
from __future__ import annotations

import pytest

from traffic.relay.classify import output_type

pytestmark = pytest.mark.backend_free


@pytest.mark.parametrize(("text", "calls", "expected"), [
    ("", 1, "tool-call"),
    ("Let me read it.", 2, "tool-call"),
    ("Routes:\n\n| method | path |\n| --- | --- |\n| GET | /health |", 0, "table"),
    ("A line | with a bar |", 0, "prose-en"),
    ("| only one row |", 0, "prose-en"),
    ("このファイルはサーバーの経路を定義しています。", 0, "prose-ja"),
    ("The word 東京 means Tokyo, a city in Japan with many people.", 0, "prose-en"),
    ("The routes are GET /health and POST /users.", 0, "prose-en"),
    ("  \n ", 0, ""),
])
def test_it_classifies_an_answer(text: str, calls: int, expected: str) -> None:
    assert output_type(text, calls) == expected
