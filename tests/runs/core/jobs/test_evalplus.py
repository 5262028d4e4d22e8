"""The EvalPlus job: the HumanEval+/MBPP+ subsets graded by EvalPlus, against a scripted
OpenAI-compatible server, the simulator, dead and failing engines, and a real llama-server."""
import json
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import evalplus.data.humaneval
import evalplus.data.mbpp
import evalplus.evaluate
import pytest
from evalplus.data import get_human_eval_plus, get_mbpp_plus

from engines.clients import EngineError, EngineHTTPError
from engines.lifecycle import ManagedEngine
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.evalplus.loop import INSTRUCTION_PREFIX, EvalPlusJob, load_problems, run_evalplus
from tests.real_engine import GEMMA_270M, LLAMA_SERVER, LLAMA_THREADS, free_port, requires_engine
from tests.runs.core.progress import CollectingProgress
from tests.scripted_openai import Reply

pytestmark = pytest.mark.backend_free

FIXTURES = Path(__file__).resolve().parents[4] / "runs" / "core" / "jobs" / "evalplus" / "fixtures"
HUMANEVAL = str(FIXTURES / "humaneval_plus.jsonl")
MBPP = str(FIXTURES / "mbpp_plus.jsonl")
FAST = SimProfile(decode_tps=5000, ttft_ms=1)


def block(code, before="Here is the solution:", after="This should work."):
    return f"{before}\n```python\n{code}\n```\n{after}"


HUMANEVAL_REPLIES = {
    # Right, with a call the sanitizer has to drop.
    "has_close_elements": block(
        "from typing import List\n\n"
        "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
        "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n\n"
        "print(has_close_elements([1.0, 2.0], 0.5))"
    ),
    "truncate_number": "Sorry, I cannot help with that.",
    # Never looks at the first operation: the base tests all start with a deposit, plus has [-1].
    "below_zero": block(
        "def below_zero(operations):\n"
        "    balance = 0\n"
        "    for i, op in enumerate(operations):\n"
        "        balance += op\n"
        "        if i > 0 and balance < 0:\n"
        "            return True\n"
        "    return False"
    ),
    # Right, through a helper the sanitizer has to keep.
    "mean_absolute_deviation": block(
        "def _mean(xs):\n    return sum(xs) / len(xs)\n\n"
        "def mean_absolute_deviation(numbers):\n"
        "    m = _mean(numbers)\n"
        "    return _mean([abs(x - m) for x in numbers])"
    ),
}
MBPP_REPLIES = {
    "similar_elements": block("def similar_elements(a, b):\n    return tuple(x for x in a if x in b)"),
    "is_not_prime": block("def is_not_prime(n):\n    return n % 2 == 0"),
    "heap_queue_largest": block(
        "def heap_queue_largest(nums, n):\n    return sorted(nums, reverse=True)[:n]"
    ),
    "square_perimeter": block("def square_perimeter(a):\n    return a * 4"),
}


@pytest.fixture(autouse=True)
def evalplus_cache(tmp_path, monkeypatch):
    """EvalPlus's ground-truth cache goes to a temp dir, not ~/.cache/evalplus."""
    monkeypatch.setattr(evalplus.evaluate, "CACHE_DIR", str(tmp_path / "evalplus-cache"))


class ScriptedEngine:
    """An OpenAI-compatible /v1/chat/completions that answers each problem with a scripted reply,
    picked by the function name the prompt mentions; it keeps every request it got."""

    def __init__(self, replies):
        self.replies = replies
        self.requests = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def reply(self, message):
        return next((text for name, text in self.replies.items() if f"{name}(" in message), "No idea.")

    def _handler(self):
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                engine.requests.append((self.path, headers, body))
                content = engine.reply(body["messages"][-1]["content"])
                data = json.dumps(completion(body["model"], content)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler


def completion(model, content):
    """A chat completion of `content`: a text, or a Reply (reasoning beside it, a finish reason)."""
    said = content if isinstance(content, Reply) else Reply(content)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": said.finish_reason, "message": said.message()}],
        "usage": {"prompt_tokens": 50, "completion_tokens": said.tokens(), "total_tokens": 0},
    }


@contextmanager
def scripted(replies):
    engine = ScriptedEngine(replies)
    thread = Thread(target=engine.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield engine
    finally:
        engine.server.shutdown()
        engine.server.server_close()


def canonical_replies(path):
    """Each problem answered with its own canonical solution (HumanEval+ keeps it apart from the prompt)."""
    replies = {}
    for line in Path(path).read_text().splitlines():
        task = json.loads(line)
        head = task["prompt"] if task["task_id"].startswith("HumanEval/") else ""
        replies[task["entry_point"]] = block(head + task["canonical_solution"])
    return replies


async def test_it_grades_humaneval_answers_with_base_and_plus_tests():
    progress = CollectingProgress()
    job = EvalPlusJob(model="coder", dataset="humaneval", dataset_path=HUMANEVAL, max_tokens=300)
    with scripted(HUMANEVAL_REPLIES) as engine:
        summary = await run_evalplus(engine.url, "secret", job, progress)
    rows = [values for _, values in progress.samples]
    assert progress.total == 4
    assert [kind for kind, _ in progress.samples] == ["question"] * 4
    assert [r["task_id"] for r in rows] == ["HumanEval/0", "HumanEval/2", "HumanEval/3", "HumanEval/4"]
    assert [(r["base_status"], r["plus_status"]) for r in rows] == [
        ("pass", "pass"), ("fail", "fail"), ("pass", "fail"), ("pass", "pass")
    ]
    assert [(r["passed_base"], r["passed_plus"]) for r in rows] == [
        (True, True), (False, False), (True, False), (True, True)
    ]
    assert [r["done"] for r in rows] == [1, 2, 3, 4] and {r["total"] for r in rows} == {4}
    assert [r["pass_at_1_base_so_far"] for r in rows] == pytest.approx([1, 1 / 2, 2 / 3, 3 / 4])
    assert [r["pass_at_1_plus_so_far"] for r in rows] == pytest.approx([1, 1 / 2, 1 / 3, 2 / 4])
    assert summary | {"task_s": 0, "generation_s": 0} == {
        "dataset": "humaneval",
        "model": "coder",
        "total": 4,
        "passed_base": 3,
        "passed_plus": 2,
        "pass_at_1_base": 0.75,
        "pass_at_1_plus": 0.5,
        "answered": 4,
        "budget_hit": 0,
        "pass_at_1_plus_of_all": 0.5,
        "evalplus_version": "0.3.1",
        "task_s": 0,
        "generation_s": 0,
        "completion_tokens": sum(len(t.split()) for t in HUMANEVAL_REPLIES.values()),
        "failed_task_ids": ["HumanEval/2", "HumanEval/3"],
        "budget_hit_task_ids": [],
    }


async def test_it_keeps_the_sanitized_solution_and_the_figures_of_each_problem():
    progress = CollectingProgress()
    job = EvalPlusJob(model="coder", dataset="humaneval", dataset_path=HUMANEVAL)
    with scripted(HUMANEVAL_REPLIES) as engine:
        await run_evalplus(engine.url, None, job, progress)
    first, nothing, _, helper = [values for _, values in progress.samples]
    assert first["solution"].startswith("from typing import List\ndef has_close_elements(")
    assert "print(" not in first["solution"] and "Here is" not in first["solution"]
    assert "def _mean(xs)" in helper["solution"]
    assert nothing["answer"] == "Sorry, I cannot help with that."
    assert first["completion_tokens"] == len(HUMANEVAL_REPLIES["has_close_elements"].split())
    assert 0 <= first["generation_s"] < 5 and 0 < first["grading_s"] < 30


async def test_it_sends_evalplus_prompt_greedy_to_the_v1_endpoint():
    job = EvalPlusJob(model="coder", dataset="humaneval", dataset_path=HUMANEVAL, limit=1, max_tokens=99)
    with scripted(HUMANEVAL_REPLIES) as engine:
        await run_evalplus(engine.url + "/", "secret", job, CollectingProgress())
    [(path, headers, body)] = engine.requests
    prompt = load_problems(HUMANEVAL, "humaneval").tasks["HumanEval/0"]["prompt"]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer secret"
    assert body["model"] == "coder" and body["max_tokens"] == 99
    assert body["temperature"] == 0 and body["n"] == 1
    assert body["messages"][-1]["content"] == f"{INSTRUCTION_PREFIX}\n```python\n{prompt.strip()}\n```"


REASONING = "Consider the edge cases one by one. " * 300 + block("def truncate_number(number):\n    return 0")


async def test_it_grades_the_answer_after_a_long_reasoning_and_counts_a_budget_hit_apart():
    replies = {
        # Wrong code in the reasoning, right code in the answer: graded from the answer.
        "has_close_elements": Reply(HUMANEVAL_REPLIES["has_close_elements"], REASONING),
        # Out of tokens while still reasoning: no answer at all.
        "truncate_number": Reply(None, REASONING, finish_reason="length"),
        "below_zero": HUMANEVAL_REPLIES["below_zero"],
        "mean_absolute_deviation": HUMANEVAL_REPLIES["mean_absolute_deviation"],
    }
    progress = CollectingProgress()
    job = EvalPlusJob(model="coder", dataset="humaneval", dataset_path=HUMANEVAL, max_tokens=4096,
                      thinking=True, reasoning_effort="high")
    with scripted(replies) as engine:
        summary = await run_evalplus(engine.url, None, job, progress)
    rows = [values for _, values in progress.samples]
    assert [r["budget_hit"] for r in rows] == [False, True, False, False]
    assert (summary["answered"], summary["budget_hit"], summary["passed_plus"]) == (3, 1, 2)
    assert summary["pass_at_1_plus"] == pytest.approx(2 / 3)  # over the problems answered
    assert summary["pass_at_1_plus_of_all"] == pytest.approx(2 / 4)
    assert summary["budget_hit_task_ids"] == ["HumanEval/2"] and summary["failed_task_ids"] == ["HumanEval/3"]
    body = engine.requests[0][2]
    assert body["chat_template_kwargs"] == {"enable_thinking": True} and body["reasoning_effort"] == "high"
    assert body["max_tokens"] == 4096


async def test_it_grades_mbpp_answers():
    progress = CollectingProgress()
    job = EvalPlusJob(model="coder", dataset="mbpp", dataset_path=MBPP)
    with scripted(MBPP_REPLIES) as engine:
        summary = await run_evalplus(engine.url, None, job, progress)
    rows = [values for _, values in progress.samples]
    assert progress.total == 4
    assert [(r["task_id"], r["passed_base"], r["passed_plus"]) for r in rows] == [
        ("Mbpp/2", True, True), ("Mbpp/3", False, False), ("Mbpp/4", True, True), ("Mbpp/17", True, True)
    ]
    assert (summary["passed_base"], summary["passed_plus"], summary["total"]) == (3, 3, 4)
    assert summary["pass_at_1_plus"] == 0.75 and summary["failed_task_ids"] == ["Mbpp/3"]


@pytest.mark.parametrize(("dataset", "path"), [("humaneval", HUMANEVAL), ("mbpp", MBPP)])
async def test_it_passes_every_canonical_solution(dataset, path):
    job = EvalPlusJob(model="oracle", dataset=dataset, dataset_path=path)
    with scripted(canonical_replies(path)) as engine:
        summary = await run_evalplus(engine.url, None, job, CollectingProgress())
    assert summary["passed_base"] == summary["passed_plus"] == summary["total"] == 4


@pytest.mark.parametrize(
    ("dataset", "path", "module", "loader"),
    [
        ("humaneval", HUMANEVAL, evalplus.data.humaneval, get_human_eval_plus),
        ("mbpp", MBPP, evalplus.data.mbpp, get_mbpp_plus),
    ],
)
def test_it_reads_the_fixtures_as_evalplus_own_loaders_do(dataset, path, module, loader, monkeypatch):
    name = "HUMANEVAL_OVERRIDE_PATH" if dataset == "humaneval" else "MBPP_OVERRIDE_PATH"
    monkeypatch.setattr(module, name, path)
    assert load_problems(path, dataset).tasks == loader()


async def test_it_runs_the_first_n_problems_against_the_simulator():
    progress = CollectingProgress()
    job = EvalPlusJob(model="sim", dataset="mbpp", dataset_path=MBPP, limit=2, max_tokens=24)
    with serve_in_thread(FAST) as sim:
        summary = await run_evalplus(sim.url, None, job, progress)
    assert progress.total == 2
    assert [(kind, v["task_id"]) for kind, v in progress.samples] == [
        ("question", "Mbpp/2"), ("question", "Mbpp/3")
    ]
    assert all(v["completion_tokens"] == 24 and not v["passed_base"] for _, v in progress.samples)
    assert (summary["total"], summary["passed_base"], summary["passed_plus"]) == (2, 0, 0)
    assert summary["pass_at_1_base"] == 0.0 and summary["failed_task_ids"] == ["Mbpp/2", "Mbpp/3"]


def fixture_lines(path):
    return Path(path).read_text().splitlines()


async def test_it_rejects_a_malformed_line_naming_it(tmp_path):
    bad = tmp_path / "broken.jsonl"
    bad.write_text(fixture_lines(HUMANEVAL)[0] + "\n\n{not json\n")
    progress = CollectingProgress()
    job = EvalPlusJob(model="m", dataset="humaneval", dataset_path=str(bad))
    with pytest.raises(ValueError, match=r"broken\.jsonl line 3: not valid JSON"):
        await run_evalplus("http://127.0.0.1:9", None, job, progress)
    assert progress.total is None


def test_it_rejects_a_line_without_an_evalplus_field(tmp_path):
    task = json.loads(fixture_lines(MBPP)[1])
    del task["plus_input"]
    bad = tmp_path / "mbpp.jsonl"
    bad.write_text(fixture_lines(MBPP)[0] + "\n" + json.dumps(task) + "\n")
    with pytest.raises(ValueError, match=r"mbpp\.jsonl line 2: field 'plus_input' is missing"):
        load_problems(str(bad), "mbpp")


def test_it_rejects_a_missing_file_and_an_unknown_dataset(tmp_path):
    with pytest.raises(ValueError, match=r"cannot read dataset file .*nowhere\.jsonl: No such file"):
        load_problems(str(tmp_path / "nowhere.jsonl"), "humaneval")
    with pytest.raises(ValueError, match="dataset must be one of"):
        EvalPlusJob(model="m", dataset="apps", dataset_path=HUMANEVAL)


async def test_it_names_a_dead_engine():
    port = free_port()
    job = EvalPlusJob(model="m", dataset="humaneval", dataset_path=HUMANEVAL)
    started = time.monotonic()
    with pytest.raises(EngineError, match=rf"cannot reach http://127\.0\.0\.1:{port}/v1: .*refused"):
        await run_evalplus(f"http://127.0.0.1:{port}", None, job, CollectingProgress())
    assert time.monotonic() - started < 20


async def test_it_names_an_http_error():
    job = EvalPlusJob(model="m", dataset="humaneval", dataset_path=HUMANEVAL)
    with serve_in_thread(SimProfile(fault="http-500")) as sim, pytest.raises(EngineHTTPError) as caught:
        await run_evalplus(sim.url, None, job, CollectingProgress())
    assert caught.value.status == 500
    assert str(caught.value).startswith(f"{sim.url}/v1/chat/completions answered HTTP 500: ")
    assert "simulated engine failure" in str(caught.value)


async def test_it_gives_up_on_an_engine_that_hangs():
    job = EvalPlusJob(model="m", dataset="humaneval", dataset_path=HUMANEVAL, request_timeout_s=0.5)
    with serve_in_thread(SimProfile(fault="hang")) as sim, pytest.raises(EngineError, match="timed out"):
        await run_evalplus(sim.url, None, job, CollectingProgress())


@pytest.fixture
async def llama_server(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [LLAMA_SERVER, "-m", GEMMA_270M, "--port", str(port), "-t", str(LLAMA_THREADS), "-c", "4096"]
    argv += ["--host", "127.0.0.1"]
    engine = ManagedEngine(argv, log_path=tmp_path / "llama-server.log")
    try:
        await engine.start()
        await engine.wait_healthy(url, 120)
        yield url
    finally:
        await engine.stop()


@requires_engine
@pytest.mark.timeout(600)
async def test_it_runs_humaneval_on_a_real_llama_server(llama_server):
    progress = CollectingProgress()
    job = EvalPlusJob(
        model="gemma3-270m", dataset="humaneval", dataset_path=HUMANEVAL, limit=2, max_tokens=128
    )
    summary = await run_evalplus(llama_server, None, job, progress)
    print(f"\nEvalPlus HumanEval+ on Gemma 3 270M: {summary}")
    for _, row in progress.samples:
        print(f"  {row['task_id']}: {row['base_status']}/{row['plus_status']} in {row['generation_s']} s, "
              f"{row['completion_tokens']} tokens; solution {row['solution'][:80]!r}")
    assert progress.total == summary["total"] == 2
    assert [v["task_id"] for _, v in progress.samples] == ["HumanEval/0", "HumanEval/2"]
    for _, row in progress.samples:
        assert row["base_status"] in ("pass", "fail", "timeout") and row["answer"]
        assert 0 < row["completion_tokens"] <= 128
    assert 0 <= summary["passed_plus"] <= summary["passed_base"] <= 2
