import json
import re

import pytest

from engines.clients.base import EngineError
from runs.core.jobs.mmlu_pro.loop import (
    SAMPLE_QUESTIONS,
    MmluProJob,
    extract_answer,
    load_questions,
    run_mmlu_pro,
)
from runs.core.jobs.quality_data import interleave_by
from tests.real_engine import free_port
from tests.runs.core.progress import CollectingProgress
from tests.scripted_openai import scripted_chat

pytestmark = pytest.mark.backend_free

SAMPLE = str(SAMPLE_QUESTIONS)
# The shipped subset's questions by a phrase of their text, and the letter a scripted model answers.
ANSWERS = {"What is the value": "B", "Solve for x": "C", "Which organelle": "D",
           "DNA replication": "A", "worst-case": "B", "last-in": "E"}
TRUTH = {"What is the value": "B", "Solve for x": "C", "Which organelle": "D",
         "DNA replication": "C", "worst-case": "B", "last-in": "B"}


def scripted(body):
    question = body["messages"][-1]["content"]
    letter = next(v for k, v in ANSWERS.items() if k in question)
    return f"Let's think step by step. It follows that the answer is ({letter})."


def mmlu_questions(tmp_path, rows, validation=None):
    for split, items in (("test", rows), ("validation", validation or rows)):
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    return str(tmp_path)


async def test_it_scores_answers_through_lm_evals_own_mmlu_pro_tasks():
    progress = CollectingProgress()
    with scripted_chat(scripted) as chat:
        job = MmluProJob("m", SAMPLE, num_fewshot=1, max_tokens=64)
        summary = await run_mmlu_pro(chat.url, None, job, progress)
    assert (summary["correct"], summary["total"]) == (4, 6)
    assert summary["accuracy"] == pytest.approx(4 / 6)
    assert summary["by_category"]["math"] == {"correct": 2, "total": 2, "budget_hit": 0, "accuracy": 1.0}
    assert summary["by_category"]["biology"]["correct"] == 1
    assert summary["lm_eval"]["sparkdash_mmlu_pro_math"]["exact_match,custom-extract"] == 1.0
    assert summary["live_mismatches"] == 0
    wrong = {q["question_id"]: q["answer"] for q in summary["questions"] if not q["correct"]}
    assert wrong == {2811: "A", 10391: "E"}
    # lm-eval's prompt: the category's instruction, one chain-of-thought example, greedy, its stop.
    body = chat.bodies[0]
    assert "multiple choice questions (with answers) about" in body["messages"][0]["content"]
    assert re.search(r"The answer is \([A-J]\)\.$", body["messages"][2]["content"])
    assert body["temperature"] == 0 and body["max_tokens"] == 64 and body["stop"] == ["Question:"]


async def test_it_reports_each_answer_live_with_the_running_accuracy():
    progress = CollectingProgress()
    with scripted_chat(scripted) as chat:
        await run_mmlu_pro(chat.url, None, MmluProJob("m", SAMPLE, num_fewshot=0, max_tokens=64), progress)
    assert progress.total == 6
    questions = [values for kind, values in progress.samples if kind == "question"]
    assert [q["done"] for q in questions] == [1, 2, 3, 4, 5, 6]
    assert questions[-1]["accuracy_so_far"] == pytest.approx(4 / 6)
    assert all(q["completion_tokens"] > 0 and q["seconds"] >= 0 for q in questions)


async def test_it_balances_a_limited_subset_across_categories():
    progress = CollectingProgress()
    with scripted_chat(scripted) as chat:
        job = MmluProJob("m", SAMPLE, limit=3, num_fewshot=0)
        summary = await run_mmlu_pro(chat.url, None, job, progress)
    assert summary["total"] == 3
    assert sorted(summary["by_category"]) == ["biology", "computer science", "math"]
    assert len(chat.bodies) == 3


def test_it_interleaves_groups_so_a_prefix_covers_each():
    rows = [{"c": c, "i": i} for i, c in enumerate("aaabbc")]
    assert [r["i"] for r in interleave_by(rows, "c")] == [0, 3, 5, 1, 4, 2]


def test_it_takes_the_letter_lm_evals_filter_takes():
    assert extract_answer("so the answer is (C). Or maybe the answer is D") == "C"
    assert extract_answer("the answer is J") == "J"
    assert extract_answer("I think C") is None


def first_question():
    with open(f"{SAMPLE}/test.jsonl") as lines:
        return json.loads(lines.readline())


def test_it_names_the_line_of_a_malformed_question(tmp_path):
    good = first_question()
    path = mmlu_questions(tmp_path, [good])
    with open(f"{path}/test.jsonl", "a") as f:
        f.write('{"question": "no id"}\n{not json\n')
    with pytest.raises(ValueError, match=r"test.jsonl:2: not an MMLU-Pro question, missing question_id"):
        load_questions(path, None)


def test_it_refuses_an_answer_outside_the_options(tmp_path):
    bad = first_question() | {"options": ["1", "2"], "answer": "D"}
    with pytest.raises(ValueError, match="answer must be one of the option letters"):
        load_questions(mmlu_questions(tmp_path, [bad]), None)


def test_it_refuses_a_folder_without_a_test_split(tmp_path):
    with pytest.raises(ValueError, match="no test split"):
        load_questions(str(tmp_path), None)


async def test_it_reports_a_dead_engine_as_an_engine_error():
    job = MmluProJob("m", SAMPLE, limit=1, num_fewshot=0)
    with pytest.raises(EngineError, match=r"request to .* failed: ConnectionError"):
        await run_mmlu_pro(f"http://127.0.0.1:{free_port()}", None, job, CollectingProgress())
