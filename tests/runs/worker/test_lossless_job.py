"""The lossless check through the worker: a relaunched (lossy) simulator, the real llama-server
drafting with itself, and the real vLLM with ngram drafting."""
import httpx
import pytest
from django.core.management.base import CommandError

from engines.models import Engine, EngineSession
from runs.core.jobs.prompts import SPEED_PROMPTS
from runs.models import Run
from runs.results.scorecard import scorecard
from tests.factories import EngineConfigFactory
from tests.real_engine import (
    GEMMA_270M,
    VLLM,
    free_port,
    llama_server_process,
    requires_engine,
    requires_vllm,
)
from tests.real_vllm import vllm_settings
from tests.runs.bench_helpers import bench, real_llama_config
from tests.runs.worker.real_runs import run_to_end
from tests.shared_engine import SharedEngine

pytestmark = pytest.mark.django_db(transaction=True)

# Every draft accepted but on Japanese prose, and every 3rd accepted draft token wrong.
LOSSY = "--decode-tps 2000 --ttft-ms 2 --acceptance-by-type tool-call=1,table=1,prose-en=1,prose-ja=0 " \
        "--acceptance-decay 1 --lossy-drafter 3"


def simulator_config(name, extra_flags, lookahead=4):
    return EngineConfigFactory(
        name=name, model="demo", max_tokens=24, lookahead=lookahead, extra_flags=extra_flags,
        engine__simulator=True, engine__launch=Engine.Launch.MANAGED,
        engine__base_url=f"http://127.0.0.1:{free_port()}",
    )


def shown(summary):
    """The comparison in a line, for the test log."""
    differ = {p["prompt"]: p["divergence"] for p in summary["per_prompt"] if not p["identical"]}
    return f"{summary['identical']} of {summary['answers']} identical by {summary['unit']}; differ: {differ}"


def test_it_reports_a_lossy_drafter_on_the_run_page_and_the_scorecard(inprocess, capsys, alice_client):
    config = simulator_config("sim-lossy", LOSSY)
    run = bench(capsys, "sim-lossy", "lossless")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    assert (summary["identical"], summary["answers"], summary["unit"]) == (1, 6, "token")
    assert {p["divergence"]["index"] for p in summary["per_prompt"] if not p["identical"]} == {5}
    assert [s["lookahead"] for s in summary["engine_startups"]] == [4, 0]
    assert EngineSession.objects.filter(run_id=run["id"], stopped__isnull=False).count() == 2
    page = alice_client.get(Run.objects.get(pk=run["id"]).get_absolute_url()).content.decode()
    assert "1 of 6 answers identical (17 %)" in page and "<code> los" in page and "<code> str" in page
    rows = {row["key"]: row for row in scorecard(config) if row["benchmark"] == "Lossless"}
    assert rows["identical_share"]["spread"]["median"] == pytest.approx(1 / 6)
    assert rows["all_identical"]["tally"] == {"count": 0, "n": 1}
    assert "identical answers" in alice_client.get(config.get_absolute_url()).content.decode()


def test_it_finds_every_answer_identical_on_a_lossless_simulator(inprocess, capsys):
    simulator_config("sim-lossless", "--decode-tps 2000 --ttft-ms 2 --acceptance 0.8")
    run = bench(capsys, "sim-lossless", "lossless", "--max-tokens", "16")
    assert run["status"] == "succeeded", run["error"]
    assert run["summary"]["identical_share"] == 1.0 and run["summary"]["all_identical"] is True


def test_it_refuses_a_config_that_does_not_draft_before_queueing_a_run(inprocess, capsys):
    simulator_config("sim-plain", "", lookahead=0)
    with pytest.raises(CommandError, match="Lossless check needs a config that drafts"):
        bench(capsys, "sim-plain", "lossless")
    assert not Run.objects.exists()


def real_self_draft(extra_flags=""):
    """Gemma 3 270M drafting for itself on the real llama-server, lookahead 8, 64 tokens."""
    real_llama_config("real-lossless", draft_model=str(GEMMA_270M), speculative_method="draft-simple",
                      lookahead=8, max_tokens=64, extra_flags=extra_flags)


@requires_engine
@pytest.mark.timeout(900)
def test_it_finds_the_real_llama_server_self_draft_lossless_with_one_token_micro_batches(inprocess, capsys):
    # -ub 1: a verification runs the target with plain decoding's kernels (docs/metrics.md).
    real_self_draft("-ub 1")
    run = bench(capsys, "real-lossless", "lossless")
    assert run["status"] == "succeeded", run["error"]
    print("\nllama-server lossless check, -ub 1:", shown(run["summary"]))
    assert run["summary"]["unit"] == "token" and run["summary"]["answers"] == 6
    assert run["summary"]["identical_share"] == 1.0, shown(run["summary"])


@requires_engine
@pytest.mark.timeout(900)
def test_it_traces_each_batched_llama_server_divergence_to_the_targets_runner_up(inprocess, capsys):
    real_self_draft()
    run = bench(capsys, "real-lossless", "lossless")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    print("\nllama-server lossless check:", shown(summary))
    assert summary["unit"] == "token" and summary["answers"] == 6
    # Where a batched verification changed an answer, the drafted token must be the plain
    # engine's second choice; a drafter that made tokens up would fail here.
    with llama_server_process() as (url, _):
        for entry in (p for p in summary["per_prompt"] if not p["identical"]):
            index, drafted = entry["divergence"]["index"], entry["divergence"]["drafted"][0]
            top = plain_top_tokens(url, entry["prompt"], index)
            print(f"{entry['prompt']} token {index}: drafted {drafted!r}, plain engine's top 3 {top}")
            assert top[0][0] == entry["divergence"]["plain"][0], top  # the plain run's own choice
            assert top[1][0] == drafted, top


def as_text(piece):
    """A vLLM tokenizer piece as its logprobs write it (SentencePiece's word mark is a space)."""
    return piece.replace("\u2581", " ")


def plain_top_tokens(url, prompt_name, index, model=None):
    """The plain engine's three best tokens (and log-probabilities) at answer token `index`, greedy."""
    prompt = next(p for p in SPEED_PROMPTS if p.name == prompt_name)
    body = {"messages": prompt.messages(), "temperature": 0, "max_tokens": index + 1, "logprobs": True,
            "top_logprobs": 3} | ({"model": model} if model else {})
    answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=600).json()
    at = answer["choices"][0]["logprobs"]["content"][index]
    return [(t["token"], t["logprob"]) for t in at["top_logprobs"]]


@pytest.mark.engines
@requires_vllm
@pytest.mark.timeout(1800)
def test_it_checks_the_real_vllm_with_ngram_drafting_and_traces_any_divergence_to_a_near_tie(tmp_path):
    engine = {"engine__kind": "vllm", "engine__launch": Engine.Launch.MANAGED, "engine__binary": str(VLLM),
              "engine__base_url": f"http://127.0.0.1:{free_port()}"}
    config = EngineConfigFactory(**engine, **vllm_settings(speculative_method="ngram", lookahead=4))
    run = run_to_end(config, {"max_tokens": 64}, job="lossless")
    assert run.status == Run.Status.SUCCEEDED, run.error
    summary = run.summary
    print("\nvLLM lossless check:", shown(summary))
    assert summary["unit"] == "token" and summary["answers"] == 6
    # vLLM promises lossless drafting only "up to the precision limits of hardware numerics": on
    # this CPU build a verification's batched kernels have (rarely) flipped a near-tie. Where an
    # answer changed, the drafted token must be one of the plain engine's own top choices there
    # (and the plain run's token its first); a drafter that made tokens up would fail here.
    differ = [p for p in summary["per_prompt"] if not p["identical"]]
    if not differ:
        return
    plain = SharedEngine("vllm", VLLM, lambda **fields: vllm_settings(**fields), tmp_path / "plain.log")
    try:
        for entry in differ:
            index, drafted = entry["divergence"]["index"], entry["divergence"]["drafted"][0]
            top = plain_top_tokens(plain.url, entry["prompt"], index, model=config.model)
            print(f"{entry['prompt']} token {index}: drafted {drafted!r}, plain engine's top 3 {top}")
            assert top[0][0] == as_text(entry["divergence"]["plain"][0]), top
            assert as_text(drafted) in [token for token, _ in top[1:]], top
    finally:
        plain.stop()
