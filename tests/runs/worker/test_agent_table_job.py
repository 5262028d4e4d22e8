"""The agent-table job through the worker path: on the simulator's scripted agent and a real model."""
from __future__ import annotations

import pytest

from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.agent_table.watchdog import NOTE_AT, WITHDRAW_AT
from runs.models import Run
from tests.factories import EngineConfigFactory
from tests.real_engine import requires_engine
from tests.runs.bench_helpers import bench, real_llama_config

pytestmark = pytest.mark.django_db(transaction=True)


# The simulator's scripted agent (engines/simulator/agent.py): a search, then read_file on the same
# file until the watchdog withdraws the tools at read 20, then the table of the routes it read.
SCRIPTED_STEPS = 21


def test_it_ends_a_run_that_reaches_the_step_limit_as_a_loop(inprocess, capsys):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        EngineConfigFactory(name="sim", engine__base_url=sim.url, engine__simulator=True)
        run = bench(capsys, "sim", "agent-table", "--fixture", "routes_12", "--max-steps", "5")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    assert (summary["outcome"], summary["stop_reason"], summary["steps"]) == ("loop", "step limit", 5)
    assert (summary["rows"], summary["score"], summary["f1"], summary["read_loop"]) == (12, 0, 0.0, None)


@pytest.mark.parametrize("kind", ["llama-server", "ollama"])
def test_it_rescues_the_simulators_read_loop_on_both_apis(inprocess, capsys, alice_client, kind):
    with serve_in_thread(SimProfile(decode_tps=2000, ttft_ms=2)) as sim:
        EngineConfigFactory(name="sim", engine__kind=kind, engine__base_url=sim.url, engine__simulator=True)
        run = bench(capsys, "sim", "agent-table", "--fixture", "routes_12")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    assert (summary["outcome"], summary["stop_reason"]) == ("rescued", "answered")
    assert summary["steps"] == SCRIPTED_STEPS
    assert (summary["max_reads"], summary["tools_withdrawn"]) == (WITHDRAW_AT, True)
    assert summary["read_loop"] == {"file": "server.js", "note_at": NOTE_AT, "noted_at_step": NOTE_AT,
                                    "withdraw_at": WITHDRAW_AT, "withdrawn_at_step": WITHDRAW_AT}
    # The table is made from the lines it read, so it is graded like any model's.
    assert (summary["answer_rows"], summary["precision"], summary["f1"]) == (summary["score"], 1.0, 1.0)
    steps = {s.values["step"]: s.values for s in Run.objects.get(pk=run["id"]).samples.filter(kind="step")}
    tools = [steps[n]["tool"] for n in (1, 2, WITHDRAW_AT, SCRIPTED_STEPS)]
    assert tools == ["search", "read_file", "read_file", None]
    assert steps[NOTE_AT]["calls"][0]["note"].startswith(f"Note: you have read server.js {NOTE_AT} times")
    assert not steps[WITHDRAW_AT]["calls"][0]["executed"] and not steps[SCRIPTED_STEPS]["tools_offered"]
    page = alice_client.get(Run.objects.get(pk=run["id"]).get_absolute_url()).content.decode()
    assert 'data-warning="read-loop"' in page
    assert (f"noted the read loop at read {NOTE_AT} (step {NOTE_AT}) and withdrew the tools at read "
            f"{WITHDRAW_AT} (step {WITHDRAW_AT}); outcome rescued") in page


def test_it_refuses_a_fixture_folder_without_a_truth_table(inprocess, capsys, tmp_path, settings):
    settings.SPARKDASH_DATA_DIRS = [tmp_path]
    (tmp_path / "server.py").write_text("print('no routes')\n")
    EngineConfigFactory(name="sim")
    with pytest.raises(Exception, match=r"fixture: .*truth\.csv"):
        bench(capsys, "sim", "agent-table", "--fixture", str(tmp_path))


@requires_engine
@pytest.mark.timeout(900)
def test_it_classifies_the_real_270m_model_on_the_agent_task(inprocess, capsys):
    real_llama_config("real", context_length=16384)
    # A 12-route table fits in 384 tokens; the model's longest answers (~50 s at 2,048) add nothing.
    run = bench(
        capsys, "real", "agent-table", "--fixture", "routes_12", "--max-steps", "4",
        "--answer-tokens", "384",
    )
    # A 270M model will likely score badly or loop: that is an outcome to classify, not a crash.
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    print(
        f"\nreal 270M agent task: outcome {summary['outcome']}, score {summary['score']}/{summary['rows']}, "
        f"F1 {summary['f1']:.2f}, "
        f"steps {summary['steps']}, {summary['task_s']:.1f} s, stop {summary.get('stop_reason')}"
    )
    # One reply may hold a dozen reads, so even 4 steps can end "rescued".
    assert summary["outcome"] in ("completed", "rescued", "loop", "error")
    assert summary["rows"] == 12 and 0 <= summary["score"] <= 12
    assert 1 <= summary["steps"] <= 4
