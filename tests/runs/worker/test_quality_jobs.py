import re
import time

import pytest
from channels.db import database_sync_to_async

from runs.models import Run, Sample
from tests.factories import EngineConfigFactory
from tests.real_engine import requires_engine
from tests.runs.bench_helpers import bench, real_llama_config
from tests.runs.worker.test_live_jobs import assert_live, watch
from tests.scripted_openai import scripted_chat

pytestmark = pytest.mark.django_db(transaction=True)


def letter_b(body):
    """A model that always answers B, a little slowly, so answers arrive in several live batches."""
    time.sleep(0.15)
    return "Let's think step by step. The answer is (B)."


def scripted_config(name, url):
    return EngineConfigFactory(name=name, model="scripted", engine__kind="llama-server",
                               engine__base_url=url)


def test_it_runs_mmlu_pro_from_the_command_line_and_stores_each_question(inprocess, capsys):
    with scripted_chat(letter_b) as chat:
        scripted_config("scripted", chat.url)
        run = bench(capsys, "scripted", "mmlu-pro", "--dataset", "sample", "--num-fewshot", "0")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    # The shipped sample's answers are B for 3 of its 6 questions.
    assert (summary["correct"], summary["total"]) == (3, 6)
    assert run["progress"] == {"done": 6, "total": 6}
    stored = Sample.objects.filter(run_id=run["id"], kind="question").order_by("seq")
    assert [s.values["done"] for s in stored] == [1, 2, 3, 4, 5, 6]
    assert len(summary["questions"]) == 6 and summary["live_mismatches"] == 0
    assert all(body["model"] == "scripted" for body in chat.bodies)


def test_it_runs_the_forms_default_five_shots_with_what_the_shipped_sample_has(inprocess, capsys):
    with scripted_chat(letter_b) as chat:
        scripted_config("scripted", chat.url)
        run = bench(capsys, "scripted", "mmlu-pro", "--dataset", "sample")
    assert run["status"] == "succeeded", run["error"]
    # One validation example per category in the sample: one shot each, and the summary says so.
    assert (run["summary"]["num_fewshot"], run["summary"]["num_fewshot_asked"]) == (1, 5)
    assert run["summary"]["total"] == 6


def test_it_refuses_a_missing_dataset_or_an_unknown_suite(inprocess, capsys, settings, tmp_path):
    settings.SPARKDASH_DATA_DIRS = [tmp_path]
    EngineConfigFactory(name="sim")
    with pytest.raises(Exception, match=f"dataset: no such file or folder: {tmp_path}/nowhere"):
        bench(capsys, "sim", "mmlu-pro", "--dataset", str(tmp_path / "nowhere"))
    with pytest.raises(Exception, match="suite must be one of humaneval, mbpp, not 'apps'"):
        bench(capsys, "sim", "evalplus", "--suite", "apps")
    assert not Run.objects.exists()


def test_it_ends_a_run_on_a_malformed_dataset_with_the_line_named(inprocess, capsys, tmp_path, settings):
    settings.SPARKDASH_DATA_DIRS = [tmp_path]
    (tmp_path / "test.jsonl").write_text('{"question_id": 1}\n')
    (tmp_path / "validation.jsonl").write_text("")
    refused = pytest.raises(Exception, match=r"failed: \S+test.jsonl:1: not an MMLU-Pro")
    with scripted_chat(letter_b) as chat, refused:
        scripted_config("scripted", chat.url)
        bench(capsys, "scripted", "mmlu-pro", "--dataset", str(tmp_path))
    assert not chat.bodies


async def test_it_streams_mmlu_pro_answers_live(settings):
    settings.SPARKDASH_WORKER = "inprocess"
    with scripted_chat(letter_b) as chat:
        config = await database_sync_to_async(scripted_config)("live-mmlu", chat.url)
        received, run, seqs = await watch(config, "mmlu-pro", {"dataset": "sample", "num_fewshot": 0})
    assert_live(received, run, seqs)
    streamed = [s for _, m in received if m["type"] == "samples" for s in m["samples"]]
    live = [s["values"] for s in streamed if s["kind"] != "telemetry"]
    assert [v["done"] for v in live] == [1, 2, 3, 4, 5, 6]
    assert live[-1]["accuracy_so_far"] == pytest.approx(0.5)


@requires_engine
@pytest.mark.timeout(900)
def test_it_runs_mmlu_pro_and_evalplus_through_their_harnesses_on_the_real_llama_server(inprocess, capsys):
    real_llama_config("real", context_length=4096)
    mmlu = bench(capsys, "real", "mmlu-pro", "--dataset", "sample", "--limit", "3", "--num-fewshot", "1",
                 "--max-tokens", "64")
    assert mmlu["status"] == "succeeded", mmlu["error"]
    assert mmlu["summary"]["total"] == 3 and mmlu["progress"] == {"done": 3, "total": 3}
    assert {q["category"] for q in mmlu["summary"]["questions"]} == {"math", "biology", "computer science"}
    figures = [f"mmlu-pro {mmlu['summary']['correct']}/3 in {mmlu['summary']['task_s']:.1f} s"]
    for suite in ("humaneval", "mbpp"):
        run = bench(capsys, "real", "evalplus", "--suite", suite, "--dataset", "sample", "--limit", "2",
                    "--max-tokens", "128")
        assert run["status"] == "succeeded", run["error"]
        assert run["summary"]["total"] == 2 and run["progress"] == {"done": 2, "total": 2}
        stored = Sample.objects.filter(run_id=run["id"], kind="question")
        assert all(re.fullmatch(r"(HumanEval|Mbpp)/\d+", s.values["task_id"]) for s in stored)
        figures.append(f"{suite} plus {run['summary']['passed_plus']}/2 in {run['summary']['task_s']:.1f} s")
    print("\nreal llama-server quality runs: " + "; ".join(figures))
