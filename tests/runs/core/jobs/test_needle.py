"""The needle job: prompt sizing, scoring, the simulator and a real llama-server."""
import math
import re
import time

import pytest

from engines.clients import EngineError, client_for
from engines.clients.base import Chunk, EngineClient, EngineFigures, now
from engines.lifecycle import ManagedEngine
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.needle.loop import (
    NEEDLE,
    Needle,
    NeedleJob,
    found_in,
    run_needle,
    size_prompt,
)
from runs.core.jobs.tokens import ollama_calibrator, openai_tokenizer
from tests.real_engine import GEMMA_270M, LLAMA_SERVER, LLAMA_THREADS, free_port, requires_engine
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free

FAST = SimProfile(decode_tps=2000, ttft_ms=2)


async def sim_tokens(text):
    """The simulator's own count: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


def counting(rate):
    """A fake tokenizer of `rate` tokens per word that records how often it was asked."""

    async def count(text):
        count.calls += 1
        return round(len(text.split()) * rate)

    count.calls = 0
    return count


@pytest.mark.parametrize("rate", [0.8, 1.3, 2.5])
@pytest.mark.parametrize("target", [1000, 32768, 65536])
async def test_it_sizes_a_prompt_within_two_percent_in_a_few_counts(rate, target):
    count = counting(rate)
    prompt = await size_prompt(count, Needle("calm-harbor", "1234567", 0.5), target, 0.02)
    assert abs(prompt.tokens - target) <= 0.02 * target
    assert prompt.tokens == await count(prompt.text)
    assert count.calls <= 6


async def test_it_starts_from_a_good_guess_and_counts_twice():
    count = counting(1.3)
    first = await size_prompt(count, Needle("calm-harbor", "1234567", 0.1), 32768, 0.02)
    count.calls = 0
    second = await size_prompt(count, Needle("brisk-kettle", "7654321", 0.9), 32768, 0.02, first.sentences)
    assert abs(second.tokens - 32768) <= 0.02 * 32768
    assert count.calls == 2  # the question alone, then the guess


async def test_it_refuses_a_target_shorter_than_the_question():
    with pytest.raises(EngineError, match="too short"):
        await size_prompt(sim_tokens, Needle("calm-harbor", "1234567", 0.5), 20, 0.02)


async def test_it_gives_up_when_no_length_fits_the_tolerance():
    async def coarse(text):  # every filler sentence is 1,000 tokens
        return 100 + 1000 * (text.count(". ") - 2)  # two in the opening line

    with pytest.raises(EngineError, match="closest filler length counted"):
        await size_prompt(coarse, Needle("calm-harbor", "1234567", 0.5), 5500, 0.02)


@pytest.mark.parametrize(("depth", "before"), [(0.0, 0), (0.5, 50), (1.0, 100)])
def test_it_puts_the_needle_at_its_depth(depth, before):
    text = Needle("calm-harbor", "1234567", depth, start=3).prompt(100)
    context = text.split("\n")[1]
    sentences = re.split(r"(?<=\.) ", context)
    assert len(sentences) == 101
    assert sentences[before] == NEEDLE.format(key="calm-harbor", value="1234567")
    assert text.endswith("What is the special magic number for calm-harbor mentioned in the provided text?")


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("The special magic number for calm-harbor is 1234567.", True),
        ("1234567", True),
        ("It is 12345678.", False),
        ("It is 1,234,567.", False),
        ("I could not find it.", False),
    ],
)
def test_it_scores_only_the_exact_value(answer, found):
    assert found_in(answer, "1234567") is found


async def test_it_runs_the_default_grid_on_the_simulator():
    progress = CollectingProgress()
    with serve_in_thread(FAST) as sim:
        async with client_for("llama-server", sim.url) as client:
            summary = await run_needle(client, NeedleJob("demo"), progress, sim_tokens)
    rows = [values for kind, values in progress.samples if kind == "request"]
    assert progress.total == len(rows) == 6
    assert [(r["length"], r["depth"]) for r in rows] == [
        (n, d) for n in (32768, 65536) for d in (0.1, 0.5, 0.9)
    ]
    for row in rows:
        assert row["prompt_tokens"] == row["haystack_tokens"]  # the simulator counts as sim_tokens does
        assert abs(row["prompt_tokens"] - row["length"]) <= 0.02 * row["length"]
        assert row["found"] is False and row["ttft_s"] > 0 and row["e2e_s"] >= row["ttft_s"]
        assert re.fullmatch(r"\d{7}", row["value"])
    assert summary["score"] == 0 and summary["total"] == 6
    assert summary["by_length"] == {"32768": {"found": 0, "total": 3}, "65536": {"found": 0, "total": 3}}
    assert summary["length_error_max"] == max(abs(r["length_error"]) for r in rows) <= 0.02


class EchoClient(EngineClient):
    """An engine that answers with the needle's value, except at the depths it is told to miss."""

    kind = "echo"

    def __init__(self, miss_depths=()):
        super().__init__("http://echo.invalid")
        self.prompts, self.miss = [], miss_depths

    async def stream(self, request):
        prompt = request.messages[0]["content"]
        self.prompts.append(prompt)
        value = re.search(r"magic numbers for \S+ is: (\d+)\.", prompt).group(1)
        sentences = prompt.split("\n")[1].split(". ")
        needle_at = next(i for i, s in enumerate(sentences) if "is: " in s) / len(sentences)
        missed = any(abs(needle_at - d) < 0.05 for d in self.miss)
        yield Chunk(now(), "I do not know." if missed else f"The special magic number is {value}.")
        yield EngineFigures(output_tokens=8, prompt_tokens=await sim_tokens(prompt))

    async def version(self):
        return None

    async def model_info(self, model):
        return {"id": model}


async def test_it_counts_the_needles_found_per_length_and_depth():
    client = EchoClient(miss_depths=(0.9,))
    job = NeedleJob("demo", lengths=(2000, 4000), depths=(0.1, 0.5, 0.9), seed=7)
    summary = await run_needle(client, job, CollectingProgress(), sim_tokens)
    assert (summary["score"], summary["total"]) == (4, 6)
    assert summary["by_length"] == {"2000": {"found": 2, "total": 3}, "4000": {"found": 2, "total": 3}}
    assert summary["by_depth"]["0.9"] == {"found": 0, "total": 2}
    # Each prompt begins with a different filler sentence, so none reuses another's cached prefix.
    assert len({p.split("\n")[1][:40] for p in client.prompts}) == 6


async def test_it_draws_the_same_needles_from_the_same_seed():
    async def values(seed):
        progress = CollectingProgress()
        await run_needle(EchoClient(), NeedleJob("demo", (2000,), seed=seed), progress, sim_tokens)
        return [(v["key"], v["value"]) for _, v in progress.samples]

    assert await values(3) == await values(3) != await values(4)


async def test_it_names_the_request_that_failed():
    with serve_in_thread(SimProfile(decode_tps=1000, ttft_ms=5, fault="http-500")) as sim:
        async with client_for("llama-server", sim.url) as client:
            with pytest.raises(EngineError, match=r"request 1 of 6 \(32768 tokens, depth 0.1\): .*500"):
                await run_needle(client, NeedleJob("demo"), CollectingProgress(), sim_tokens)


async def test_it_calibrates_ollama_from_prompt_eval_count():
    progress = CollectingProgress()
    with serve_in_thread(FAST) as sim:
        async with client_for("ollama", sim.url) as client:
            count = ollama_calibrator(client, "demo")
            text = "x" * 40_000
            assert await count(text) == pytest.approx(10_000, rel=0.01)
            job = NeedleJob("demo", lengths=(4096, 16384), depths=(0.5,))
            summary = await run_needle(client, job, progress, count)
    assert summary["length_error_max"] <= 0.02
    assert [v["prompt_tokens"] for _, v in progress.samples] == [
        pytest.approx(4096, rel=0.02),
        pytest.approx(16384, rel=0.02),
    ]


@pytest.mark.parametrize(
    "fields", [{"lengths": ()}, {"lengths": (0,)}, {"depths": (1.5,)}, {"tolerance": 0}, {"answer_tokens": 0}]
)
def test_it_rejects_an_impossible_job(fields):
    with pytest.raises(ValueError):
        NeedleJob("demo", **fields)


def describe(row):
    return (
        f"  target {row['length']}, depth {row['depth']}: engine {row['prompt_tokens']} tokens, "
        f"tokenizer {row['haystack_tokens']}, error {row['length_error']:+.2%}, "
        f"prefill {row['prefill_s']:.1f} s ({row['prefill_tps']:.0f} tok/s), ttft {row['ttft_s']:.1f} s, "
        f"found {row['found']}: {row['answer'][:60]!r}"
    )


@requires_engine
@pytest.mark.timeout(600)
async def test_it_sizes_prompts_with_a_real_llama_server_tokenizer():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [LLAMA_SERVER, "-m", GEMMA_270M, "-c", "8192", "-t", str(LLAMA_THREADS), "-np", "1",
            "--port", str(port)]
    job = NeedleJob(str(GEMMA_270M), lengths=(2048,), depths=(0.1, 0.9))
    progress = CollectingProgress()
    async with ManagedEngine(argv) as engine:
        await engine.wait_healthy(url, 120)
        async with client_for("llama-server", url) as client:
            started = time.monotonic()
            summary = await run_needle(client, job, progress, openai_tokenizer(client))
    took = time.monotonic() - started
    print(f"\nneedle on Gemma 3 270M: {summary['score']}/{summary['total']} found in {took:.0f} s")
    for _, row in progress.samples:
        print(describe(row))
        assert abs(row["prompt_tokens"] - row["length"]) <= 0.02 * row["length"]
        assert row["cached_tokens"] < 100  # only the opening line is shared between prompts
    assert summary["length_error_max"] <= 0.02
    assert 0 <= summary["score"] <= summary["total"] == 2


def test_it_asks_each_needle_request_for_the_configs_thinking():
    request = NeedleJob("m", thinking=False, reasoning_effort="low").request("find the key")
    assert (request.thinking, request.reasoning_effort) == (False, "low")
    assert NeedleJob("m").request("find the key").thinking is None
