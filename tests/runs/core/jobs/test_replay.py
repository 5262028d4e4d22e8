import json

import pytest

from engines.clients import EngineError, client_for
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.replay.loop import ReplayJob, normalize, parse_jsonl, run_replay, summarize_replay
from tests.runs.core.progress import CollectingProgress

pytestmark = pytest.mark.backend_free

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
ASK = [{"role": "user", "content": "Read it."}]
OPENAI = {"model": "agent", "messages": ASK, "max_tokens": 10, "tools": TOOLS}
OLLAMA = {"model": "agent", "messages": ASK, "options": {"num_predict": 20}}
WRAPPED = {"request": {"model": "agent", "messages": ASK, "max_tokens": 6}}




def jsonl(*bodies):
    return "\n".join(json.dumps(b) for b in bodies) + "\n"


def test_it_parses_openai_ollama_and_wrapped_lines_skipping_blank_ones():
    requests = parse_jsonl(jsonl(OPENAI, OLLAMA) + "\n" + jsonl(WRAPPED))
    assert requests == [OPENAI, OLLAMA, WRAPPED["request"]]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"messages": [', r"line 3: not JSON"),
        ("[1, 2]", r"line 3: a request must be a JSON object"),
        ('{"model": "m"}', r"line 3: no messages"),
        ('{"messages": []}', r"line 3: no messages"),
        ('{"messages": ["hi"]}', r"line 3: every message must be an object with a role"),
        ('{"messages": [{"role": "user"}], "max_tokens": "ten"}', r"line 3: max_tokens must be a whole"),
    ],
)
def test_it_names_the_line_of_a_bad_request(line, message):
    with pytest.raises(ValueError, match=message):
        parse_jsonl(jsonl(OPENAI) + "\n" + line + "\n")


def test_it_rejects_a_file_too_large_or_with_too_many_requests():
    with pytest.raises(ValueError, match=r"the file is \d+ bytes; the limit is 100"):
        parse_jsonl(jsonl(OPENAI, OPENAI), max_bytes=100)
    with pytest.raises(ValueError, match="line 3: more than 2 requests"):
        parse_jsonl(jsonl(OPENAI, OLLAMA, OPENAI), max_requests=2)
    with pytest.raises(ValueError, match="no requests"):
        parse_jsonl("\n \n")


def test_it_normalizes_both_styles_with_temperature_zero_unless_set():
    openai = normalize(OPENAI)
    assert (openai.model, openai.max_tokens, openai.temperature) == ("agent", 10, 0.0)
    assert openai.extra == {"tools": TOOLS}
    ollama = normalize(OLLAMA | {"options": {"num_predict": 20, "temperature": 0.6, "top_k": 20}}, "other")
    assert (ollama.model, ollama.max_tokens, ollama.temperature, ollama.top_k) == ("other", 20, 0.6, 20)
    assert ollama.extra == {}
    assert normalize({"model": "m", "messages": ASK}).max_tokens == 4096


def test_it_needs_a_model_from_the_request_or_the_override():
    body = {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ValueError, match="model override"):
        normalize(body)
    assert normalize(body, "mine").model == "mine"


@pytest.mark.parametrize("kind", ["llama-server", "ollama"])
async def test_it_replays_each_pass_in_order_and_totals_generation_time(kind):
    job = ReplayJob(parse_jsonl(jsonl(OPENAI, OLLAMA, WRAPPED)), reps=3)
    progress = CollectingProgress()
    with serve_in_thread(SimProfile(decode_tps=200, ttft_ms=10)) as sim:
        async with client_for(kind, sim.url) as client:
            summary = await run_replay(client, job, progress)
    rows = [values for _, values in progress.samples]
    assert progress.total == 9
    assert [(r["rep"], r["index"]) for r in rows] == [(rep, i) for rep in range(3) for i in range(3)]
    assert [r["output_tokens"] for r in rows[:3]] == [10, 20, 6]
    assert summary["output_tokens"]["median"] == 36
    # Read from the client's decode speed: beside a busy suite the simulator's late first token, then its
    # catching up with its schedule, makes a span a few % short (CI saw 0.174 s); a pass too many or too
    # few is 1/3 off.
    assert summary["generation_s"]["median"] == pytest.approx(36 / 200, rel=0.05)
    scheduled = 3 * 0.010 + (9 + 19 + 5) / 200
    # Plus localhost HTTP: about 10 ms a request on an idle machine, more beside a busy suite. The
    # bound still tells one pass (0.195 s) from two or a warm-up counted in (0.39 s and more).
    assert scheduled < summary["wall_s"]["median"] < scheduled + 0.1
    assert summary["wall_s"]["n"] == 3
    assert [p["output_tokens"] for p in summary["per_request"]] == [10, 20, 6]
    # 19 gaps at 200 tok/s are 95 ms: a 2 ms late token from the simulator's thread in a busy
    # process is 2 %. test_speed holds the clock to 1 % over longer answers.
    assert summary["per_request"][1]["decode_tps"] == pytest.approx(200, rel=0.05)


async def test_it_names_the_request_that_failed():
    job = ReplayJob([OPENAI, OLLAMA], reps=1, warmup=0)
    with serve_in_thread(SimProfile(decode_tps=500, ttft_ms=5, fault="http-500")) as sim:
        async with client_for("llama-server", sim.url) as client:
            with pytest.raises(EngineError, match=r"request 1 of 2, repetition 1: .*500"):
                await run_replay(client, job, CollectingProgress())


def test_it_keeps_the_engines_own_ttft_per_recorded_request():
    def row(index, rep, engine_ttft):
        return {"index": index, "rep": rep, "e2e_s": 1.0, "ttft_s": 0.2, "ttft_engine_s": engine_ttft,
                "output_tokens": 10, "decode_tps_client": 50.0, "decode_tps_engine": None,
                "finish_reason": "stop"}

    rows = [row(0, 0, 0.15), row(0, 1, 0.17), row(1, 0, None), row(1, 1, None)]
    per_request = summarize_replay(rows, [1.0, 1.1])["per_request"]
    assert [r["ttft_engine_s"] for r in per_request] == [pytest.approx(0.16), None]
