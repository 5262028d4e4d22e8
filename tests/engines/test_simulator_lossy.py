"""The simulator's lossy drafter (SimProfile.lossy_drafter) and the /tokenize the lossless check reads."""
from __future__ import annotations

import json
from unittest import mock

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from engines.simulator import SimProfile, plan, serve_in_thread
from engines.simulator.cache import tokenize
from engines.simulator.wire import text

pytestmark = pytest.mark.backend_free

EVERY_DRAFT = {"decode_tps": 2000.0, "ttft_ms": 2.0, "acceptance": 1.0}
BODY = {"model": "sim", "messages": [{"role": "user", "content": "Say something."}], "max_tokens": 12}


def answer(profile: SimProfile, stream: bool) -> str:
    with serve_in_thread(profile) as sim:
        response = httpx.post(f"{sim.url}/v1/chat/completions", json=BODY | {"stream": stream}, timeout=10)
    response.raise_for_status()
    if not stream:
        return response.json()["choices"][0]["message"]["content"]
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: {")]
    deltas = [json.loads(line)["choices"] for line in lines]
    return "".join(c[0]["delta"].get("content") or "" for c in deltas if c)


def test_it_knows_which_tokens_were_accepted_drafts():
    sched = plan(SimProfile(lookahead=4, acceptance=1.0), 12)
    # token 0 from prefill; each verification: 4 accepted drafts, then the target's own token
    assert sched.accepted_draft_tokens() == [1, 2, 3, 4, 6, 7, 8, 9]
    assert sched.lossy_tokens(3) == {3, 7}
    assert sched.lossy_tokens(0) == frozenset()


@pytest.mark.parametrize("stream", [True, False])
def test_it_changes_every_nth_accepted_draft_token_of_a_lossy_drafter(stream):
    wrong = answer(SimProfile(lookahead=4, lossy_drafter=3, **EVERY_DRAFT), stream)
    assert wrong.split() == [*text(0, 3).split(), "lossy", *text(4, 3).split(), "lossy", *text(8, 4).split()]


@pytest.mark.parametrize("profile", [
    SimProfile(lookahead=0, lossy_drafter=3, **EVERY_DRAFT),  # no drafting: nothing to get wrong
    SimProfile(lookahead=4, **EVERY_DRAFT),  # a lossless drafter
])
def test_it_leaves_the_answer_as_plain_decoding_gives_it_without_drafting_or_lossy_drafts(profile):
    assert answer(profile, stream=True) == text(0, 12)


def test_it_refuses_a_negative_lossy_drafter():
    with pytest.raises(ValueError, match="lossy_drafter must be >= 0"):
        SimProfile(lossy_drafter=-1)
    with pytest.raises(CommandError, match="--lossy-drafter"):
        call_command("simengine", "--port", "0", "--lossy-drafter", "-2")


@mock.patch("engines.management.commands.simengine.serve_forever", autospec=True)
def test_it_serves_a_lossy_drafter_from_its_flag(serve_forever):
    call_command("simengine", "--port", "9", "--lookahead", "4", "--lossy-drafter", "5")
    assert serve_forever.call_args.args[0].lossy_drafter == 5


def test_it_tokenizes_four_characters_a_token_with_ids_read_from_them():
    ids = tokenize("the simulated engine")
    assert len(ids) == 5 and ids == tokenize("the simulated engine")
    assert tokenize("the simulated ENGINE")[:3] == ids[:3] and tokenize("the simulated ENGINE")[3:] != ids[3:]
    assert [t["piece"] for t in tokenize("the simulated", with_pieces=True)] == ["the ", "simu", "late", "d"]


def test_it_answers_tokenize_with_pieces_as_llama_server_does():
    with serve_in_thread(SimProfile(**EVERY_DRAFT)) as sim:
        plain = httpx.post(f"{sim.url}/tokenize", json={"content": "abcdefgh"}).json()
        pieces = httpx.post(f"{sim.url}/tokenize", json={"content": "abcdefgh", "with_pieces": True}).json()
    assert plain["tokens"] == tokenize("abcdefgh")
    ids = plain["tokens"]
    assert pieces["tokens"] == [{"id": ids[0], "piece": "abcd"}, {"id": ids[1], "piece": "efgh"}]
