"""The MMLU-Pro job: lm-evaluation-harness's own mmlu_pro tasks, run against an engine's OpenAI API.

The questions come from a local copy of TIGER-Lab/MMLU-Pro (a folder with its test and
validation splits as .parquet, .jsonl or .json, in the dataset's own fields). lm-eval builds the
prompts (chain-of-thought few-shot from the validation split, per category), sends them through
its local-chat-completions model to the engine's /v1/chat/completions, extracts "the answer is
(X)" and scores exact match. SparkDash only picks the questions (a balanced subset when a limit
is set), points each category task at the local files, and reports every answer as it arrives.

Only the answer is graded, never the reasoning: engines send reasoning apart (reasoning_content),
and reasoning left in the content is cut at </think>. A question whose answer hit max_tokens
(finish reason "length") before giving a letter is "budget hit before answering": counted apart,
not as wrong, and left out of the accuracy, which is over the questions answered.

lm-eval is synchronous; it runs on a thread, and its answers cross back to the event loop.
"""
from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from runs.core.jobs.progress import RunProgress
from runs.core.jobs.quality_data import DatasetError, interleave_by, load_split

__all__ = [
    "SAMPLE_QUESTIONS", "MmluProJob", "extract_answer", "load_questions", "run_mmlu_pro",
    "summarize_mmlu_pro",
]

CHOICES = "ABCDEFGHIJ"
HUB_DATASET = "TIGER-Lab/MMLU-Pro"
SAMPLE_QUESTIONS = Path(__file__).resolve().parent / "fixtures"  # the shipped subset
CATEGORIES = (
    "biology", "business", "chemistry", "computer science", "economics", "engineering", "health",
    "history", "law", "math", "other", "philosophy", "physics", "psychology",
)
FIELDS = ("question_id", "question", "options", "answer", "answer_index", "cot_content", "category")
# lm-eval's mmlu_pro filter ("custom-extract": this regex, then the first match).
ANSWER_RE = re.compile(r"answer is \(?([ABCDEFGHIJ])\)?")
# Answers longer than this are cut in the live samples (the stored per-question result keeps the letter).
ANSWER_PREVIEW = 2000


@dataclass(frozen=True)
class MmluProJob:
    """What an MMLU-Pro run asks lm-eval for.

    :param dataset_path: a folder holding MMLU-Pro's test and validation splits; None: lm-eval's own
        tasks download TIGER-Lab/MMLU-Pro from the Hugging Face hub.
    :param limit: how many test questions (local: balanced across categories; hub: per category,
        as lm-eval's --limit); None: all.
    :param num_fewshot: chain-of-thought examples per prompt (lm-eval's default is 5).
    :param max_tokens: the answer budget (lm-eval's default for mmlu_pro is 2048), reasoning included.
    :param thinking, reasoning_effort: the config's, sent with every question (None: the engine's).
    """

    model: str
    dataset_path: str | None
    limit: int | None = None
    num_fewshot: int = 5
    max_tokens: int = 2048
    timeout_s: int = 600
    thinking: bool | None = None
    reasoning_effort: str | None = None


def extract_answer(text: str) -> str | None:
    """The letter lm-eval's custom-extract filter takes from an answer, or None."""
    match = ANSWER_RE.search(text or "")
    return match.group(1) if match else None


def load_questions(dataset_path: str, limit: int | None) -> tuple[list[dict], list[dict]]:
    """The test questions to ask (balanced across categories when limited) and the few-shot pool."""
    root = Path(dataset_path)
    test = [_checked(row, where) for row, where in load_split(root, "test")]
    validation = [_checked(row, where) for row, where in load_split(root, "validation")]
    if limit is not None:
        test = interleave_by(test, "category")[:limit]
    return test, validation


def _checked(row: dict[str, Any], where: str) -> dict[str, Any]:
    missing = [name for name in FIELDS if name not in row]
    if missing:
        raise DatasetError(f"{where}: not an MMLU-Pro question, missing {', '.join(missing)}")
    options = row["options"]
    if not isinstance(options, list) or not 1 <= len(options) <= len(CHOICES):
        raise DatasetError(f"{where}: options must be a list of 1 to 10 answers")
    if row["answer"] not in CHOICES[: len(options)]:
        raise DatasetError(f"{where}: answer must be one of the option letters, not {row['answer']!r}")
    return {name: row[name] for name in (*FIELDS, "src") if name in row}


async def run_mmlu_pro(base_url: str, api_key: str | None, job: MmluProJob,
                       progress: RunProgress) -> dict[str, Any]:
    """Run lm-eval's mmlu_pro category tasks on the chosen questions; report each answer live."""
    loop = asyncio.get_running_loop()
    tally = _Tally()

    def on_total(total: int) -> None:
        tally.total = total
        asyncio.run_coroutine_threadsafe(progress.on_start(total), loop).result()

    def on_answer(doc: dict[str, Any], text: str, seconds: float, usage: dict[str, Any],
                  finish: str | None) -> None:
        values = tally.add(doc, text, seconds, usage, finish)
        asyncio.run_coroutine_threadsafe(progress.on_sample("question", values), loop).result()

    started = time.monotonic()
    asked = job.num_fewshot
    with tempfile.TemporaryDirectory(prefix="sparkdash-mmlu-pro-") as tmp:
        tasks, limit, shots = await asyncio.to_thread(_tasks, job, Path(tmp))
        job = replace(job, num_fewshot=shots)
        results = await asyncio.to_thread(
            _evaluate, base_url, api_key, job, (Path(tmp), tasks, limit), (on_total, on_answer)
        )
    summary = summarize_mmlu_pro(results, tasks, tally.budget_hits)
    summary.update(
        task_s=time.monotonic() - started, num_fewshot=job.num_fewshot, max_tokens=job.max_tokens,
        dataset=job.dataset_path or HUB_DATASET, live_mismatches=tally.mismatches(summary["questions"]),
    )
    if shots < asked:
        summary["num_fewshot_asked"] = asked
    return summary


def _tasks(job: MmluProJob, folder: Path) -> tuple[dict[str, str], int | None, int]:
    """The tasks to run, lm-eval's per-task limit and the few-shot examples per prompt: local files,
    or lm-eval's hub tasks as they are."""
    if job.dataset_path is None:
        return {f"mmlu_pro_{c.replace(' ', '_')}": c for c in CATEGORIES}, job.limit, job.num_fewshot
    test, validation = load_questions(job.dataset_path, job.limit)
    if not test:
        raise DatasetError(f"{job.dataset_path}: no test questions")
    return write_tasks(folder, test, validation), None, fewshot_available(job.num_fewshot, test, validation)


def fewshot_available(asked: int, test: list[dict], validation: list[dict]) -> int:
    """The few-shot examples each prompt can have: as asked, or fewer where a category asked about
    has fewer validation examples (lm-eval would stop on an assertion; the summary says so)."""
    counts = Counter(row["category"] for row in validation)
    return min([asked, *(counts[category] for category in {row["category"] for row in test})])


class _Tally:
    """The running accuracy the live page shows, graded as lm-eval's filter grades."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.correct = 0
        self.verdicts: dict[str, bool] = {}
        self.budget_hits: set[str] = set()

    def add(self, doc: dict[str, Any], text: str, seconds: float, usage: dict[str, Any],
            finish: str | None = None) -> dict[str, Any]:
        answer = extract_answer(text)
        correct = answer == doc["answer"]
        budget_hit = finish == "length" and answer is None
        self.done += 1
        self.correct += correct
        self.verdicts[str(doc["question_id"])] = correct
        if budget_hit:
            self.budget_hits.add(str(doc["question_id"]))
        answered = self.done - len(self.budget_hits)
        return {
            "question_id": doc["question_id"], "category": doc["category"], "target": doc["answer"],
            "answer": answer, "correct": correct, "budget_hit": budget_hit, "seconds": round(seconds, 3),
            "completion_tokens": usage.get("completion_tokens"), "response": text[:ANSWER_PREVIEW],
            "done": self.done, "total": self.total, "budget_hits": len(self.budget_hits),
            "accuracy_so_far": self.correct / answered if answered else None,
        }

    def mismatches(self, questions: Sequence[dict[str, Any]]) -> int:
        """Questions where lm-eval's final grade differs from the live one (expected: 0)."""
        return sum(self.verdicts.get(str(q["question_id"])) != q["correct"] for q in questions)


def write_tasks(folder: Path, test: list[dict], validation: list[dict]) -> dict[str, str]:
    """One task YAML per category present: lm-eval's own mmlu_pro_<category> on the local files.

    Returns {task name: category}.
    """
    import lm_eval.tasks

    builtin = Path(lm_eval.tasks.__file__).parent / "mmlu_pro"
    files = {"test": _write_jsonl(folder / "test.jsonl", test),
             "validation": _write_jsonl(folder / "validation.jsonl", validation)}
    tasks: dict[str, str] = {}
    for category in sorted({q["category"] for q in test}):
        slug = category.replace(" ", "_")
        template = builtin / f"mmlu_pro_{slug}.yaml"
        if not template.exists():
            raise DatasetError(f"unknown MMLU-Pro category {category!r} (lm-eval has no {template.name})")
        name = f"sparkdash_mmlu_pro_{slug}"
        config = {"include": str(template), "task": name, "dataset_path": "json",
                  "dataset_kwargs": {"data_files": files, "cache_dir": str(folder / "hf-cache")}}
        (folder / f"{name}.yaml").write_text(json.dumps(config), encoding="utf-8")
        tasks[name] = category
    return tasks


def _write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def _evaluate(
    base_url: str, api_key: str | None, job: MmluProJob,
    plan: tuple[Path, dict[str, str], int | None], report: tuple[Callable, Callable],
) -> dict[str, Any]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    from runs.core.jobs.lm_eval_model import reporting_chat_model, thinking_body

    folder, tasks, limit = plan
    body = thinking_body(job.thinking, job.reasoning_effort)
    lm = reporting_chat_model(base_url, api_key, job.model, job.timeout_s, *report, body=body)
    hub = job.dataset_path is None
    return lm_eval.simple_evaluate(
        model=lm, tasks=list(tasks), num_fewshot=job.num_fewshot, limit=limit,
        task_manager=TaskManager() if hub else TaskManager(include_path=str(folder), include_defaults=False),
        apply_chat_template=True, fewshot_as_multiturn=job.num_fewshot > 0,
        gen_kwargs={"max_gen_toks": job.max_tokens}, log_samples=True, bootstrap_iters=0,
    )


def summarize_mmlu_pro(results: dict[str, Any], tasks: dict[str, str],
                       budget_hits: Set[str] = frozenset()) -> dict[str, Any]:
    """Accuracy overall and per category, and every question's result, from lm-eval's own log.

    `budget_hits` are the question ids whose answer hit max_tokens before giving a letter: counted
    as "budget_hit", not as wrong; the accuracy is over the others ("answered"), and
    "accuracy_of_all" is lm-eval's own (every question, budget hits as not correct).
    """
    questions = [
        _question(sample, tasks[task], budget_hits)
        for task in tasks for sample in results["samples"].get(task, [])
    ]
    correct = sum(q["correct"] for q in questions)
    answered = len(questions) - sum(q["budget_hit"] for q in questions)
    return {
        "accuracy": correct / answered if answered else None,
        "accuracy_of_all": correct / len(questions) if questions else None,
        "correct": correct,
        "total": len(questions),
        "answered": answered,
        "budget_hit": len(questions) - answered,
        "by_category": _by_category(questions),
        "lm_eval": {task: _task_figures(results["results"].get(task, {})) for task in tasks},
        "lm_eval_version": _version(),
        "questions": questions,
    }


def _by_category(questions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Correct, total, budget hits and accuracy (over the answered) per category."""
    by_category: dict[str, dict[str, Any]] = {}
    for question in questions:
        entry = by_category.setdefault(question["category"], {"correct": 0, "total": 0, "budget_hit": 0})
        entry["correct"] += question["correct"]
        entry["total"] += 1
        entry["budget_hit"] += question["budget_hit"]
    for entry in by_category.values():
        answered = entry["total"] - entry["budget_hit"]
        entry["accuracy"] = entry["correct"] / answered if answered else None
    return by_category


def _question(sample: dict[str, Any], category: str, budget_hits: Set[str]) -> dict[str, Any]:
    filtered = sample.get("filtered_resps") or [None]
    answer = filtered[0] if filtered[0] not in ("[invalid]", "") else None
    question_id = sample["doc"]["question_id"]
    return {
        "question_id": question_id,
        "category": category,
        "target": sample["target"],
        "answer": answer,
        "correct": bool(sample["exact_match"]),
        "budget_hit": str(question_id) in budget_hits and answer is None,
    }


def _task_figures(figures: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in figures.items() if isinstance(value, int | float | str)}


def _version() -> str:
    from importlib.metadata import version

    return version("lm_eval")

