"""The simulator answers a multiple-choice question with one of its own option letters."""
from __future__ import annotations

import pytest

from engines.simulator.choice import multiple_choice_answer

pytestmark = pytest.mark.backend_free

QUESTION = ('The following are multiple choice questions (with answers) about law. Think step by step and '
            'then finish your answer with "the answer is (X)" where X is the correct letter choice.\n\n'
            "Question: Which court?\nOptions:\nA. one\nB. two\nC. three\nAnswer: Let's think step by step.")


def test_it_answers_with_one_of_the_questions_letters_the_same_each_time():
    said = multiple_choice_answer([{"role": "user", "content": QUESTION}])
    assert said is not None and said.endswith(("(A).", "(B).", "(C)."))
    assert said == multiple_choice_answer([{"role": "user", "content": QUESTION}])


def test_it_leaves_other_prompts_to_the_word_stream():
    assert multiple_choice_answer([{"role": "user", "content": "Write a haiku."}]) is None
    assert multiple_choice_answer([]) is None
