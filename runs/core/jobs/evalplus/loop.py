"""The EvalPlus job: HumanEval+ or MBPP+ pass@1, greedy, against an engine's OpenAI-compatible API.

EvalPlus (evalplus==0.3.1) does the measuring; this module only feeds it one problem at a time
so a live page can follow along:

- the dataset is a local jsonl in EvalPlus's own format (HumanEvalPlus.jsonl / MbppPlus.jsonl),
  read the way its loaders read it (MBPP+ inputs through `mbpp_deserialize_inputs`, then
  `completeness_check`), but line by line so a bad line is named; nothing is downloaded;
- the expected outputs come from `evalplus.evaluate.get_groundtruth`, which runs the canonical
  solutions and caches them in EvalPlus's cache dir under a hash of the file and the chosen tasks;
- each answer is asked for with `OpenAIChatDecoder`'s prompt (EvalPlus's instruction prefix, its
  `make_request`: system message, temperature 0, top_p 0.95) at base_url + "/v1", cut down
  to code with `evalplus.sanitize.sanitize`, and graded at once with
  `evalplus.evaluate.check_correctness` on the base and the plus inputs (in subprocesses).

Only the answer's content is graded, never the reasoning (reasoning_content). A problem whose
answer hit max_tokens (finish reason "length") with no code in it is "budget hit before
answering": counted apart, not as a failure, and left out of pass@1 (over the problems answered).

The blocking parts (the openai SDK, sanitizing, grading) run in threads. No Django import here.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import multiprocessing
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import evalplus.eval
import openai
from evalplus import __version__ as EVALPLUS_VERSION
from evalplus.config import DEFAULT_GT_TIME_LIMIT_FACTOR, DEFAULT_MIN_TIME_LIMIT
from evalplus.data.mbpp import mbpp_deserialize_inputs
from evalplus.data.utils import completeness_check
from evalplus.eval import PASS, estimate_pass_at_k
from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
from evalplus.evaluate import check_correctness, get_groundtruth
from evalplus.gen.util.openai_request import make_request
from evalplus.provider.openai import OpenAIChatDecoder
from evalplus.sanitize import sanitize

from engines.clients.base import EngineError, EngineHTTPError
from runs.core.jobs.progress import RunProgress
from runs.core.jobs.quality_data import DatasetError, check_size
from runs.core.jobs.thinking import thinking_body

__all__ = ["DATASETS", "EVALPLUS_VERSION", "EvalPlusJob", "Problems", "load_problems", "run_evalplus"]

DATASETS = ("humaneval", "mbpp")
# evalplus.codegen.run_codegen's prompts for chat models (local variables there, hence copied).
INSTRUCTION_PREFIX = (
    "Please provide a self-contained Python script that solves the following problem "
    "in a markdown code block:"
)
RESPONSE_PREFIX = (
    "Below is a Python script with a self-contained function that solves the problem "
    "and passes corresponding tests:"
)
# The fields EvalPlus's loaders, completeness_check, get_groundtruth and check_correctness read.
FIELDS: dict[str, type | tuple[type, ...]] = {
    "task_id": str,
    "prompt": str,
    "entry_point": str,
    "canonical_solution": str,
    "contract": str,
    "base_input": list,
    "plus_input": list,
    "atol": (int, float),
}
MBPP_TASK_ID = re.compile(r"Mbpp/\d+")
SOLUTION_CHARS = 4000


@dataclass(frozen=True)
class EvalPlusJob:
    """What an EvalPlus run asks: the model, the dataset file, how many problems, the limits."""

    model: str  # model name sent to the engine
    dataset: str  # "humaneval" or "mbpp"
    dataset_path: str  # local jsonl in EvalPlus's format
    limit: int | None = None  # the first N problems of the file
    max_tokens: int = 768  # EvalPlus's own default (DecoderBase.max_new_tokens)
    request_timeout_s: float = 600.0  # one generation, connection excluded (10 s)
    max_retries: int = 1  # the openai SDK retries twice by default
    min_time_limit: float = DEFAULT_MIN_TIME_LIMIT  # EvalPlus's per-test time limits
    gt_time_limit_factor: float = DEFAULT_GT_TIME_LIMIT_FACTOR
    thinking: bool | None = None  # the config's, sent with every problem (None: the engine's)
    reasoning_effort: str | None = None

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {DATASETS}, not {self.dataset!r}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be None or >= 1, not {self.limit}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, not {self.max_tokens}")


@dataclass(frozen=True)
class Problems:
    """The chosen problems by task_id (file order), and what identifies them for the cache."""

    path: str
    tasks: dict[str, dict[str, Any]]
    digest: str  # md5 of the file's bytes, the chosen task ids and the EvalPlus version


def load_problems(path: str, dataset: str, limit: int | None = None) -> Problems:
    """Read an EvalPlus jsonl as get_human_eval_plus / get_mbpp_plus do; ValueError names the line."""
    try:
        raw = check_size(Path(path)).read_bytes()
    except OSError as exc:
        raise DatasetError(f"cannot read dataset file {path}: {exc.strerror or exc}") from exc
    tasks = _parse(path, raw, dataset)
    if not tasks:
        raise DatasetError(f"{path} holds no problems")
    chosen = dict(list(tasks.items())[:limit])
    if dataset == "mbpp":
        for task_id, task in chosen.items():
            task["base_input"] = mbpp_deserialize_inputs(task_id, task["base_input"])
            task["plus_input"] = mbpp_deserialize_inputs(task_id, task["plus_input"])
    try:
        completeness_check("MBPP+" if dataset == "mbpp" else "HumanEval+", chosen)
    except AssertionError as exc:
        raise DatasetError(f"{path}: {exc}") from exc
    key = raw + "\n".join([*chosen, EVALPLUS_VERSION]).encode()
    return Problems(path, chosen, hashlib.md5(key).hexdigest())


def _parse(path: str, raw: bytes, dataset: str) -> dict[str, dict[str, Any]]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    tasks: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        task = _task(f"{path} line {n}", line, dataset)
        if task["task_id"] in tasks:
            raise DatasetError(f"{path} line {n}: task_id {task['task_id']!r} appears twice")
        tasks[task["task_id"]] = task
    return tasks


def _task(where: str, line: str, dataset: str) -> dict[str, Any]:
    try:
        task = json.loads(line)
    except ValueError as exc:
        raise DatasetError(f"{where}: not valid JSON ({exc})") from exc
    if not isinstance(task, dict):
        raise DatasetError(f"{where}: not a JSON object")
    for name, kind in FIELDS.items():
        if name not in task:
            raise DatasetError(f"{where}: field {name!r} is missing")
        if not isinstance(task[name], kind) or isinstance(task[name], bool):
            raise DatasetError(f"{where}: field {name!r} has the wrong type ({type(task[name]).__name__})")
    if dataset == "mbpp" and not MBPP_TASK_ID.fullmatch(task["task_id"]):
        raise DatasetError(f"{where}: MBPP+ task_id {task['task_id']!r} is not 'Mbpp/<number>'")
    return task


def _expected_outputs(problems: Problems, dataset: str) -> dict[str, dict[str, Any]]:
    """EvalPlus's ground truth: the canonical solutions run on every input (cached)."""
    not_none = MBPP_OUTPUT_NOT_NONE_TASKS if dataset == "mbpp" else []
    try:
        with contextlib.redirect_stdout(sys.stderr):  # EvalPlus prints progress; stdout carries results
            return get_groundtruth(problems.tasks, f"sparkdash-{dataset}-{problems.digest}", not_none)
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        message = f"{problems.path}: a canonical solution fails on its own inputs ({reason})"
        raise DatasetError(message) from exc


def _chat_decoder(job: EvalPlusJob, url: str) -> OpenAIChatDecoder:
    return OpenAIChatDecoder(
        job.model,
        base_url=url,
        batch_size=1,
        temperature=0.0,
        max_new_tokens=job.max_tokens,
        instruction_prefix=INSTRUCTION_PREFIX,
        response_prefix=RESPONSE_PREFIX,
    )


def _decoder(base_url: str, api_key: str | None, job: EvalPlusJob) -> OpenAIChatDecoder:
    """EvalPlus's OpenAI chat decoder, greedy, with a client that gives up instead of retrying."""
    url = base_url.rstrip("/") + "/v1"
    with contextlib.redirect_stdout(sys.stderr):
        decoder = _chat_decoder(job, url)
    decoder.client.close()
    decoder.client = openai.OpenAI(
        api_key=api_key or "none",
        base_url=url,
        max_retries=job.max_retries,
        # The SDK's own Timeout: it runs on httpx2, which takes an httpx.Timeout for a number.
        timeout=openai.Timeout(job.request_timeout_s, connect=10.0),
    )
    return decoder


def _generate(
    decoder: OpenAIChatDecoder, prompt: str, body: dict[str, Any]
) -> tuple[str, int | None, str | None]:
    """One answer (its content, tokens, finish reason), sent as OpenAIChatDecoder.codegen sends it.

    `body` is laid over the request (thinking on or off); reasoning_content is never read.

    codegen itself goes through make_auto_request, which retries every error forever and arms
    SIGALRM (main thread only), so the request is made with EvalPlus's make_request directly.
    """
    message = decoder.instruction_prefix + f"\n```python\n{prompt.strip()}\n```"
    url = str(decoder.client.base_url).rstrip("/")
    try:
        answer = make_request(
            decoder.client,
            message=message,
            model=decoder.name,
            max_tokens=decoder.max_new_tokens,
            temperature=decoder.temperature,
            n=1,
            **({"extra_body": body} if body else {}),
        )
    except openai.OpenAIError as exc:
        raise _engine_error(url, exc, decoder.client.timeout) from exc
    choices = getattr(answer, "choices", None)
    if not choices:
        raise EngineError(f"{url}/chat/completions answered without choices: {str(answer)[:200]}")
    usage = getattr(answer, "usage", None)
    finish = getattr(choices[0], "finish_reason", None)
    return choices[0].message.content or "", getattr(usage, "completion_tokens", None), finish


def _engine_error(url: str, exc: openai.OpenAIError, timeout: Any) -> EngineError:
    if isinstance(exc, openai.APITimeoutError):
        limit = getattr(timeout, "read", timeout)
        return EngineError(f"{url} timed out (limit {limit:g}s)")
    if isinstance(exc, openai.APIConnectionError):
        return EngineError(f"cannot reach {url}: {exc.__cause__ or exc}")
    if isinstance(exc, openai.APIStatusError):
        body = " ".join(exc.response.text.split())[:200] or "(empty body)"
        status = exc.status_code
        return EngineHTTPError(f"{url}/chat/completions answered HTTP {status}: {body}", status)
    return EngineError(f"{url}/chat/completions: {type(exc).__name__}: {exc}")


@functools.cache
def _children_from_a_clean_process() -> None:
    """Make EvalPlus start each graded solution from a forkserver, not by forking this process.

    EvalPlus runs every check in a `multiprocessing.Process` of the default context, a fork on
    Linux. A fork of a process that holds other threads and at-fork hooks (a worker's, after a
    Celery control broadcast) can hang the child until EvalPlus's 60 s timeout, and every answer
    then grades "timeout" (seen in CI). The forkserver's children come from a process that holds
    none of that; it preloads evalplus.eval so a check does not import it again.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["evalplus.eval"])
    module: Any = evalplus.eval
    module.multiprocessing, module.Value, module.Array = context, context.Value, context.Array


def _grade(
    job: EvalPlusJob, problem: dict[str, Any], solution: str, expected: dict[str, Any]
) -> tuple[str, str]:
    """EvalPlus's statuses ("pass", "fail", "timeout") on the base and the plus inputs."""
    _children_from_a_clean_process()
    result = check_correctness(
        job.dataset,
        0,
        problem,
        solution,
        expected,
        base_only=False,
        fast_check=True,  # as `evalplus.evaluate` without --test-details
        identifier=problem["task_id"],
        min_time_limit=job.min_time_limit,
        gt_time_limit_factor=job.gt_time_limit_factor,
    )
    return result["base"][0], result["plus"][0]


async def _solve(
    decoder: OpenAIChatDecoder, job: EvalPlusJob, problem: dict[str, Any], expected: dict[str, Any]
) -> dict[str, Any]:
    """Ask for one problem's solution and grade it; the per-problem values a sample keeps."""
    started = time.perf_counter()
    body = thinking_body(job.thinking, job.reasoning_effort)
    answer, tokens, finish = await asyncio.to_thread(_generate, decoder, problem["prompt"], body)
    generated = time.perf_counter()
    solution = await asyncio.to_thread(sanitize, answer, problem["entry_point"])
    base, plus = await asyncio.to_thread(_grade, job, problem, solution, expected)
    return {
        "task_id": problem["task_id"],
        "budget_hit": finish == "length" and not solution.strip(),
        "passed_base": base == PASS,
        "passed_plus": base == plus == PASS,  # EvalPlus's "plus" score is base and extra tests
        "base_status": base,
        "plus_status": plus,
        "solution": solution[:SOLUTION_CHARS],
        "answer": answer[:SOLUTION_CHARS],  # the raw reply, to see why nothing was extracted
        "generation_s": round(generated - started, 3),
        "grading_s": round(time.perf_counter() - generated, 3),
        "completion_tokens": tokens,
    }


def _pass_at_1(results: list[dict[str, Any]], key: str, answered_only: bool = True) -> float:
    """EvalPlus's estimator with one greedy sample per problem (= the share that passed).

    Over the problems answered: a budget hit before answering is left out (all of them: 0.0).
    """
    counted = [r for r in results if not (answered_only and r.get("budget_hit"))]
    if not counted:
        return 0.0
    return float(estimate_pass_at_k(1, [int(r[key]) for r in counted], 1).mean())


def _running(results: list[dict[str, Any]], total: int) -> dict[str, Any]:
    return {
        "done": len(results),
        "total": total,
        "budget_hits": sum(r["budget_hit"] for r in results),
        "pass_at_1_base_so_far": _pass_at_1(results, "passed_base"),
        "pass_at_1_plus_so_far": _pass_at_1(results, "passed_plus"),
    }


def _summary(job: EvalPlusJob, results: list[dict[str, Any]], task_s: float) -> dict[str, Any]:
    tokens = [r["completion_tokens"] for r in results if r["completion_tokens"] is not None]
    return {
        "dataset": job.dataset,
        "model": job.model,
        "total": len(results),
        "passed_base": sum(r["passed_base"] for r in results),
        "passed_plus": sum(r["passed_plus"] for r in results),
        "pass_at_1_base": _pass_at_1(results, "passed_base"),
        "pass_at_1_plus": _pass_at_1(results, "passed_plus"),
        "answered": sum(not r["budget_hit"] for r in results),
        "budget_hit": sum(r["budget_hit"] for r in results),
        # EvalPlus's own: every problem, a budget hit as a failure.
        "pass_at_1_plus_of_all": _pass_at_1(results, "passed_plus", answered_only=False),
        "evalplus_version": EVALPLUS_VERSION,
        "task_s": round(task_s, 3),
        "generation_s": round(sum(r["generation_s"] for r in results), 3),
        "completion_tokens": sum(tokens) if tokens else None,
        "failed_task_ids": [r["task_id"] for r in results if not r["passed_plus"] and not r["budget_hit"]],
        "budget_hit_task_ids": [r["task_id"] for r in results if r["budget_hit"]],
    }


async def run_evalplus(
    base_url: str, api_key: str | None, job: EvalPlusJob, progress: RunProgress
) -> dict[str, Any]:
    """Run the job problem by problem; report each as a "question" sample; return the summary.

    Raises ValueError for a bad dataset file and EngineError when the engine fails.
    """
    started = time.perf_counter()
    problems = await asyncio.to_thread(load_problems, job.dataset_path, job.dataset, job.limit)
    total = len(problems.tasks)
    await progress.on_start(total)
    expected = await asyncio.to_thread(_expected_outputs, problems, job.dataset)
    decoder = _decoder(base_url, api_key, job)
    results: list[dict[str, Any]] = []
    try:
        for task_id, problem in problems.tasks.items():
            result = await _solve(decoder, job, problem, expected[task_id])
            results.append(result)
            await progress.on_sample("question", result | _running(results, total))
    finally:
        decoder.client.close()
    return _summary(job, results, time.perf_counter() - started)
