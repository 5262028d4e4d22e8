"""MMLU-Pro with a reasoning model: graded from the answer only; a budget hit is not a wrong answer."""
import pytest

from runs.core.jobs.mmlu_pro.loop import SAMPLE_QUESTIONS, MmluProJob, run_mmlu_pro
from tests.runs.core.jobs.test_mmlu_pro import TRUTH
from tests.runs.core.progress import CollectingProgress
from tests.scripted_openai import Reply, scripted_chat

pytestmark = pytest.mark.backend_free

SAMPLE = str(SAMPLE_QUESTIONS)
# Long reasoning that "decides" on a wrong letter on its way: a grader reading it would score (B).
REASONING = "Let me weigh each option in turn. " * 400 + "The answer is (B), or is it? Checking again."


def truth(body):
    question = body["messages"][-1]["content"]
    return next(v for k, v in TRUTH.items() if k in question)


def reasons_then_answers(body):
    letter = truth(body)
    decoy = "A" if letter == "B" else "B"
    return Reply(f"The answer is ({letter}).", REASONING.replace("(B)", f"({decoy})"))


async def run(answer, **job):
    progress = CollectingProgress()
    with scripted_chat(answer) as chat:
        summary = await run_mmlu_pro(chat.url, None, MmluProJob("m", SAMPLE, num_fewshot=0, **job), progress)
    return summary, chat.bodies, [values for kind, values in progress.samples if kind == "question"]


async def test_it_scores_the_answer_after_a_long_reasoning_not_the_reasoning():
    summary, bodies, live = await run(reasons_then_answers, max_tokens=18_432, thinking=True)
    assert (summary["correct"], summary["total"], summary["budget_hit"]) == (6, 6, 0)
    organelle = next(q for q in live if q["target"] == "D")
    assert organelle["answer"] == "D" and organelle["correct"]
    assert all(q["answer"] == q["target"] for q in summary["questions"])
    assert bodies[0]["chat_template_kwargs"] == {"enable_thinking": True}
    assert bodies[0]["max_tokens"] == 18_432


async def test_it_cuts_reasoning_left_in_the_answer_at_the_end_of_thinking():
    def inline(body):
        return f"<think>{REASONING}</think>The answer is ({truth(body)})."

    summary, _, _ = await run(inline, max_tokens=64)
    assert summary["correct"] == 6


async def test_it_asks_for_thinking_off_and_sends_the_reasoning_effort():
    _, bodies, _ = await run(reasons_then_answers, max_tokens=64, thinking=False, reasoning_effort="low")
    assert bodies[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert bodies[0]["reasoning_effort"] == "low"


async def test_it_sends_no_thinking_field_when_thinking_is_the_engines_default():
    _, bodies, _ = await run(reasons_then_answers, max_tokens=64)
    assert "chat_template_kwargs" not in bodies[0] and "reasoning_effort" not in bodies[0]


def budget_hits_on_math(body):
    """Math questions run out of budget while reasoning; the last-in question says no letter at all."""
    question = body["messages"][-1]["content"]
    if "What is the value" in question or "Solve for x" in question:
        return Reply(None, REASONING, finish_reason="length")
    if "last-in" in question:
        return Reply("I cannot tell.")
    return reasons_then_answers(body)


async def test_it_counts_a_budget_hit_before_answering_apart_from_wrong_answers():
    summary, _, live = await run(budget_hits_on_math, max_tokens=256, thinking=True)
    assert (summary["total"], summary["budget_hit"], summary["answered"], summary["correct"]) == (6, 2, 4, 3)
    assert summary["accuracy"] == pytest.approx(3 / 4)  # over the questions answered
    assert summary["accuracy_of_all"] == pytest.approx(3 / 6)  # lm-eval's own: budget hits not correct
    assert summary["by_category"]["math"] == {"correct": 0, "total": 2, "budget_hit": 2, "accuracy": None}
    hits = [q for q in summary["questions"] if q["budget_hit"]]
    assert sorted(q["target"] for q in hits) == ["B", "C"] and not any(q["correct"] for q in hits)
    assert [q["budget_hit"] for q in live].count(True) == 2 and live[-1]["budget_hits"] == 2
    assert live[-1]["accuracy_so_far"] == pytest.approx(3 / 4)
    assert summary["live_mismatches"] == 0


async def test_it_counts_an_answer_cut_at_the_budget_after_its_letter_as_answered():
    def cut_after_letter(body):
        return Reply(f"The answer is ({truth(body)}). To double-check, consider", finish_reason="length")

    summary, _, _ = await run(cut_after_letter, max_tokens=64, thinking=True)
    assert (summary["budget_hit"], summary["correct"]) == (0, 6)
