import pytest

from engines.clients import EngineError, client_for
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.prefix_cache.loop import TTFT_FACTOR, PrefixCacheJob, run_prefix_cache
from runs.core.jobs.source_text import source_text
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free

# About 500 simulated tokens per step: 4 steps make a ~2,100-token conversation.
SMALL = {"steps": 4, "bytes_per_step": 2000, "answer_tokens": 8}




async def probe(kind, cache_tokens, progress=None, **fields):
    profile = SimProfile(decode_tps=1000, ttft_ms=5, prefill_tps=10_000, cache_tokens=cache_tokens)
    with serve_in_thread(profile) as sim:
        async with client_for(kind, sim.url) as client:
            job = PrefixCacheJob("demo", **(SMALL | fields))
            return await run_prefix_cache(client, job, progress or CollectingProgress())


async def test_it_detects_a_discard_when_the_cache_is_smaller_than_the_conversation():
    summary = await probe("llama-server", cache_tokens=1000)
    last, continuation = summary["last_grow"], summary["continuation"]
    assert summary["conversation_tokens"] > 2000
    assert last["new_share"] < 0.3
    assert continuation["cached_tokens"] == 0
    assert continuation["new_tokens"] == continuation["prompt_tokens"]
    assert (summary["cache_discard_detected"], summary["detected_by"]) == (True, "cached_tokens")
    # The product's own threshold: a busy CI box once added enough to the last step to give 2.84.
    assert summary["ttft_ratio"] > TTFT_FACTOR


@pytest.mark.parametrize("cache_tokens", [None, 100_000])
async def test_it_sees_no_discard_with_a_large_cache(cache_tokens):
    summary = await probe("llama-server", cache_tokens=cache_tokens)
    continuation = summary["continuation"]
    assert summary["cache_discard_detected"] is False
    assert continuation["new_tokens"] <= summary["expected_new_tokens"] + 5
    assert continuation["new_share"] < 0.02
    assert summary["new_input_share"] < 0.4


@pytest.mark.parametrize(("cache_tokens", "discarded"), [(1000, True), (None, False)])
async def test_it_judges_by_ttft_when_the_engine_hides_cached_tokens(cache_tokens, discarded):
    summary = await probe("ollama", cache_tokens=cache_tokens)
    assert summary["continuation"]["new_tokens"] is None
    assert summary["new_input_share"] is None
    assert (summary["cache_discard_detected"], summary["detected_by"]) == (discarded, "ttft")


async def test_it_reports_each_step_and_continues_growing_after_an_early_insertion():
    progress = CollectingProgress()
    summary = await probe("llama-server", None, progress, steps=3, insert_after=2, bytes_per_step=400)
    assert progress.total == 5
    assert [(kind, v["step"], v["label"]) for kind, v in progress.samples] == [
        ("step", 1, "grow"),
        ("step", 2, "grow"),
        ("step", 3, "inserted"),
        ("step", 4, "continuation"),
        ("step", 5, "grow"),
    ]
    assert summary["steps"] == 3
    assert summary["last_grow"]["step"] == 2
    assert progress.samples[-1][1]["cached_tokens"] > summary["continuation"]["prompt_tokens"]


@pytest.mark.parametrize("fields", [{"steps": 0}, {"insert_after": 5}, {"discard_share": 1.0}])
def test_it_rejects_an_impossible_probe(fields):
    with pytest.raises(ValueError):
        PrefixCacheJob("demo", **(SMALL | fields))


async def test_it_names_the_step_that_failed():
    with serve_in_thread(SimProfile(decode_tps=1000, ttft_ms=5, fault="http-500")) as sim:
        async with client_for("llama-server", sim.url) as client:
            with pytest.raises(EngineError, match=r"step 1 \(grow\): .*500"):
                await run_prefix_cache(client, PrefixCacheJob("demo", **SMALL), CollectingProgress())


def test_it_writes_exactly_the_bytes_asked_of_numbered_source_lines():
    text = source_text(6000, seed=3, first_line=41)
    assert len(text.encode()) == 6000
    assert text.startswith("   41  def ")
    assert text == source_text(6000, seed=3, first_line=41)
    assert text != source_text(6000, seed=4, first_line=41)


async def run_faulty(steps, every):
    profile = SimProfile(decode_tps=1000, ttft_ms=5, prefill_tps=10_000, fault="http-500", fault_every=every)
    progress = CollectingProgress()
    with serve_in_thread(profile) as sim:
        async with client_for("llama-server", sim.url) as client:
            job = PrefixCacheJob("demo", **(SMALL | {"steps": steps}))
            return await run_prefix_cache(client, job, progress), progress


async def test_it_keeps_probing_past_a_failed_grow_step_without_its_message():
    # Steps 1-5 grow, 6 is the insertion, 7 the continuation: the 4th request fails.
    summary, progress = await run_faulty(steps=5, every=4)
    rows = [values for _, values in progress.samples]
    assert [r.get("failed") for r in rows] == [None, None, None, "http 500", None, None, None]
    assert summary["outcomes"]["failed_by_reason"] == {"http 500": 1}
    assert summary["steps"] == 4
    # The failed step's message left the conversation: the next one sends no more than before it.
    step = rows[2]["prompt_tokens"] - rows[1]["prompt_tokens"]
    assert rows[4]["prompt_tokens"] - rows[2]["prompt_tokens"] < 1.5 * step


async def test_it_fails_when_the_insertion_it_judges_by_failed():
    with pytest.raises(EngineError, match=r"nothing to judge the cache by: step 4 \(inserted\): .*500"):
        await run_faulty(steps=3, every=4)
