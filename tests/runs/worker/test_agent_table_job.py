
import pytest

from engines.simulator import SimProfile, serve_in_thread
from tests.factories import EngineConfigFactory
from tests.real_engine import requires_engine
from tests.runs.bench_helpers import bench, real_llama_config

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_grades_an_engine_that_answers_without_tools(inprocess, capsys):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        EngineConfigFactory(name="sim", engine__base_url=sim.url, engine__simulator=True)
        run = bench(capsys, "sim", "agent-table", "--fixture", "routes_12", "--max-steps", "5")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    assert (summary["rows"], summary["score"], summary["outcome"]) == (12, 0, "completed")
    assert (summary["f1"], summary["exact"]) == (0.0, False)


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
