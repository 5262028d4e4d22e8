import pytest

from engines.clients import EngineError, client_for
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.concurrency.loop import ConcurrencyJob, run_concurrency
from runs.core.jobs.tokens import openai_tokenizer
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free


def modelled_total_tps(profile, c, n_tokens):
    step_s = (1 + profile.batch_cost * (c - 1)) / profile.decode_tps
    finish_s = profile.ttft_ms / 1000 + (n_tokens - 1) * step_s
    return c * n_tokens / finish_s, finish_s


def late_at_most(measured, modelled, late=0.15):
    """Within 3 % early and `late` late: the simulator keeps absolute deadlines, so a starved CPU
    (CI runs this beside a second suite on 2 cores) can only make replies later, never earlier."""
    return modelled * 0.97 <= measured <= modelled * (1 + late)


@pytest.mark.parametrize("kind", ["llama-server", "ollama"])
async def test_it_measures_the_simulators_batch_cost_model(kind):
    # 50 tok/s and 16-token answers: 1.2 s at 16 streams, with few chunks for this one process to
    # serve and read. Without the batch cost, 16 streams would total 800 tok/s, not 210.
    profile = SimProfile(decode_tps=50, ttft_ms=20, batch_cost=0.2)
    job = ConcurrencyJob("demo", levels=(1, 4, 16), answer_tokens=16)
    progress = CollectingProgress()
    with serve_in_thread(profile) as sim:
        async with client_for(kind, sim.url) as client:
            summary = await run_concurrency(client, job, progress)
    for c in (1, 4, 16):
        level = summary["levels"][str(c)]
        total, finish_s = modelled_total_tps(profile, c, 16)
        assert late_at_most(1 / level["total_tps"]["median"], 1 / total), (c, level["total_tps"], total)
        assert late_at_most(level["finish_s"]["median"], finish_s), (c, level["finish_s"], finish_s)
        assert level["short_answers"] == 0
    (total_1, finish_1), (total_16, finish_16) = (modelled_total_tps(profile, c, 16) for c in (1, 16))
    assert summary["scaling"] == pytest.approx(total_16 / total_1, rel=0.15)
    assert summary["finish_s_ratio"] == pytest.approx(finish_16 / finish_1, rel=0.15)


async def test_it_reports_every_request_then_each_level():
    job = ConcurrencyJob("demo", levels=(1, 2, 3), answer_tokens=4, reps=2, warmup=0)
    progress = CollectingProgress()
    with serve_in_thread(SimProfile(decode_tps=500, ttft_ms=5)) as sim:
        async with client_for("llama-server", sim.url) as client:
            summary = await run_concurrency(client, job, progress)
    kinds = [kind for kind, _ in progress.samples]
    assert progress.total == 12
    assert kinds == ["request"] * 2 + ["level"] + ["request"] * 4 + ["level"] + ["request"] * 6 + ["level"]
    requests = [v for kind, v in progress.samples if kind == "request"]
    assert [r["concurrency"] for r in requests] == [1] * 2 + [2] * 4 + [3] * 6
    assert all(r["output_tokens"] == 4 for r in requests)
    assert summary["levels"]["3"]["total_tps"]["n"] == 2
    assert (summary["baseline"], summary["max_concurrency"], summary["requests"]) == (1, 3, 12)


def test_it_asks_openai_compatible_engines_to_ignore_eos():
    job = ConcurrencyJob("demo", answer_tokens=100)
    assert job.request(ignore_eos=True).extra == {"ignore_eos": True}
    assert job.request(ignore_eos=False).extra == {}
    assert job.request(ignore_eos=True).max_tokens == 100


@pytest.mark.parametrize("levels", [(), (0, 2), (1, 257)])
def test_it_rejects_impossible_levels(levels):
    with pytest.raises(ValueError, match="levels"):
        ConcurrencyJob("demo", levels=levels)


async def test_it_names_the_level_and_request_that_failed():
    job = ConcurrencyJob("demo", levels=(2,), answer_tokens=4, warmup=0)
    with serve_in_thread(SimProfile(decode_tps=500, ttft_ms=5, fault="http-500")) as sim:
        async with client_for("llama-server", sim.url) as client:
            with pytest.raises(EngineError, match=r"level 2, repetition 1, request \d of 2: .*500"):
                await run_concurrency(client, job, CollectingProgress())


async def test_it_keeps_a_burst_whose_one_request_failed():
    progress = CollectingProgress()
    profile = SimProfile(decode_tps=500, ttft_ms=5, fault="http-500", fault_every=4)
    with serve_in_thread(profile) as sim:
        async with client_for("llama-server", sim.url) as client:
            job = ConcurrencyJob("demo", levels=(4,), answer_tokens=8, warmup=0)
            summary = await run_concurrency(client, job, progress)
    level = summary["levels"]["4"]
    assert level["requests"] == 3 and level["finish_s"]["n"] == 3
    assert level["outcomes"]["failed_by_reason"] == {"http 500": 1}
    assert summary["outcomes"]["attempted"] == 4 and summary["outcomes"]["succeeded"] == 3


async def test_it_sizes_every_prompt_and_lets_no_request_read_anothers_cache():
    job = ConcurrencyJob("demo", levels=(1, 2), answer_tokens=4, reps=2, prompt_tokens=400)
    progress = CollectingProgress()
    # With a prefill rate the simulator keeps a prompt cache, and says what it reused.
    with serve_in_thread(SimProfile(decode_tps=500, ttft_ms=5, prefill_tps=20_000)) as sim:
        async with client_for("llama-server", sim.url) as client:
            summary = await run_concurrency(client, job, progress, tokenizer=openai_tokenizer(client))
    requests = [v for kind, v in progress.samples if kind == "request"]
    assert len(requests) == 6 and summary["prompt_tokens"] == pytest.approx(400, rel=0.02)
    # The engine's count adds the system prompt and chat template to the sized question.
    assert all(400 <= r["prompt_tokens"] <= 460 for r in requests), [r["prompt_tokens"] for r in requests]
    # Only the system prompt's and the serial's first characters may come from the cache.
    assert max(r["cached_tokens"] or 0 for r in requests) < 40, [r["cached_tokens"] for r in requests]
    assert summary["levels"]["2"]["prompt_tokens"]["n"] == 4


async def test_it_reuses_the_one_short_prompt_without_prompt_tokens():
    job = ConcurrencyJob("demo", levels=(1,), answer_tokens=4, reps=3)
    progress = CollectingProgress()
    with serve_in_thread(SimProfile(decode_tps=500, ttft_ms=5)) as sim:
        async with client_for("llama-server", sim.url) as client:
            summary = await run_concurrency(client, job, progress)
    assert "prompt_tokens" not in summary and "prompt_tokens" not in summary["levels"]["1"]
    assert len({v["prompt_tokens"] for kind, v in progress.samples if kind == "request"}) == 1


def test_it_needs_the_tokenizer_and_a_length_in_range():
    with pytest.raises(ValueError, match="prompt_tokens"):
        ConcurrencyJob("demo", prompt_tokens=-1)
