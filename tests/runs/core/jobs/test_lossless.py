"""The lossless check: drafting on and off compared token for token, on a (lossy) simulator."""
from contextlib import asynccontextmanager

import pytest

from engines.clients import client_for
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.lossless.loop import (
    Answer,
    LosslessJob,
    first_divergence,
    run_lossless,
    summarize_lossless,
)
from runs.core.jobs.speed.loop import SpeedJob
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free

# Every draft accepted, except on Japanese prose (none are): the lossy drafter's wrong tokens land
# on every kind of answer but that one.
EVERY_DRAFT_BUT_JAPANESE_PROSE = {"tool-call": 1.0, "table": 1.0, "prose-en": 1.0, "prose-ja": 0.0}


def simulator_at_lookahead(started, **profile):
    @asynccontextmanager
    async def at(length):
        # A fresh simulator per length, as a relaunched engine would be.
        fields = {"decode_tps": 2000, "ttft_ms": 2, "acceptance_by_type": EVERY_DRAFT_BUT_JAPANESE_PROSE,
                  "acceptance_decay": 1.0} | profile
        with serve_in_thread(SimProfile(lookahead=length, **fields)) as sim:
            started.append(length)
            async with client_for("llama-server", sim.url) as client:
                yield client, "demo"

    return at


def lossless_job(lookahead=4):
    return LosslessJob(SpeedJob("ignored", reps=3, warmup=2, sampling={"max_tokens": 24, "temperature": 0.8}),
                       lookahead)


async def test_it_finds_every_answer_identical_when_the_drafter_is_lossless():
    started, progress = [], CollectingProgress()
    summary = await run_lossless(simulator_at_lookahead(started), lossless_job(), progress)
    assert started == [4, 0]
    assert progress.total == 12 and len(progress.samples) == 12  # one greedy pass per lookahead
    assert [v["draft_length"] for _, v in progress.samples] == [4] * 6 + [0] * 6
    assert summary["identical_share"] == 1.0 and summary["all_identical"] is True
    assert summary["unit"] == "token" and summary["lookahead"] == 4
    assert all(p["tokens_drafted"] == p["tokens_plain"] > 1 for p in summary["per_prompt"])
    assert not any("divergence" in p for p in summary["per_prompt"])


async def test_it_says_how_many_pairs_were_cut_at_max_tokens_and_what_the_engine_generated():
    summary = await run_lossless(simulator_at_lookahead([]), lossless_job(), CollectingProgress())
    # The simulator answers every prompt until max_tokens (24): every pair was cut there.
    assert summary["capped"] == summary["answers"] == 6
    pairs = summary["per_prompt"]
    assert all(p["capped"] and p["generated_drafted"] == p["generated_plain"] == 24 for p in pairs)


async def test_it_reports_where_a_lossy_drafter_changed_the_answer():
    lossy = simulator_at_lookahead([], lossy_drafter=3)
    summary = await run_lossless(lossy, lossless_job(), CollectingProgress())
    # Five of six answers took drafts; Japanese prose accepted none, so it stays identical.
    assert summary["identical"] == 1 and summary["identical_share"] == pytest.approx(1 / 6)
    assert summary["all_identical"] is False
    by_prompt = {p["prompt"]: p for p in summary["per_prompt"]}
    assert by_prompt["prose-ja"]["identical"] is True
    # Tokens 1-4 are the first draft, all accepted: the 3rd accepted draft token (word 3, "streams")
    # reads "lossy". The simulator's tokens are 4 characters: "the |simu|late|d en|gine| str|eams".
    expected = {"index": 5, "before": ["late", "d en", "gine"], "drafted": [" los", "sy p", "lain"],
                "plain": [" str", "eams", " pla"]}
    for name in ("tool-call-en", "tool-call-ja", "table-en", "table-ja", "prose-en"):
        assert by_prompt[name]["identical"] is False
        assert by_prompt[name]["divergence"] == expected


async def test_it_refuses_a_config_that_does_not_draft():
    with pytest.raises(ValueError, match="lookahead above 0"):
        await run_lossless(simulator_at_lookahead([]), lossless_job(lookahead=0), CollectingProgress())


def test_it_finds_the_first_divergence_or_where_one_answer_stops():
    a = [(1, "a"), (2, "b"), (3, "c")]
    assert first_divergence(a, list(a)) is None
    assert first_divergence(a, [(1, "a"), (9, "x"), (3, "c")]) == 1
    assert first_divergence(a, a[:2]) == 2  # the plain answer is a prefix: it stops at token 2


def test_it_compares_by_characters_when_one_side_could_not_be_tokenized():
    drafted = Answer("p", "abcd", [(7, "abcd")], "token")
    plain = Answer("p", "abXd", [(c, c) for c in "abXd"], "character")
    summary = summarize_lossless([drafted], [plain], 2)
    assert summary["unit"] == "character"
    assert summary["per_prompt"][0]["divergence"] == {
        "index": 2, "before": ["a", "b"], "drafted": ["c", "d"], "plain": ["X", "d"],
    }
