
import pytest

from engines.models import Engine, EngineSession
from tests.factories import EngineConfigFactory
from tests.real_engine import GEMMA_270M, free_port, requires_engine
from tests.runs.bench_helpers import bench, real_llama_config

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_sweeps_lookahead_on_a_relaunched_simulator(inprocess, capsys):
    EngineConfigFactory(
        name="sim-sweep",
        model="demo",
        max_tokens=24,
        engine__simulator=True,
        engine__launch=Engine.Launch.MANAGED,
        engine__base_url=f"http://127.0.0.1:{free_port()}",
        extra_flags="--decode-tps 300 --ttft-ms 5 --acceptance 0.9",
    )
    run = bench(capsys, "sim-sweep", "lookahead", "--lengths", "0,4,8", "--reps", "1", "--warmup", "0")
    assert run["status"] == "succeeded", run["error"]
    lengths = run["summary"]["lengths"]
    assert list(lengths) == ["0", "4", "8"]
    assert lengths["0"]["all"]["acceptance_rate"] is None
    assert (
        lengths["8"]["all"]["tokens_per_verification"]["pooled"]
        > lengths["4"]["all"]["tokens_per_verification"]["pooled"]
    )
    assert [s["lookahead"] for s in run["summary"]["engine_startups"]] == [0, 4, 8]
    assert EngineSession.objects.filter(run_id=run["id"], stopped__isnull=False).count() == 3
    assert run["provenance"]["engine_version"] == "sparkdash-simulator"


def test_it_refuses_a_sweep_on_an_external_engine_it_cannot_relaunch(inprocess, capsys):
    EngineConfigFactory(name="external", engine__base_url="http://127.0.0.1:9")
    with pytest.raises(Exception, match="relaunching the engine"):
        bench(capsys, "external", "lookahead", "--lengths", "0,4")


@requires_engine
@pytest.mark.timeout(600)
def test_it_sweeps_lookahead_on_the_real_llama_server_with_a_draft_model(inprocess, capsys):
    real_llama_config(
        "real-sweep", draft_model=str(GEMMA_270M), speculative_method="draft-simple", max_tokens=24
    )
    run = bench(capsys, "real-sweep", "lookahead", "--lengths", "0,4,8", "--reps", "1", "--warmup", "1")
    assert run["status"] == "succeeded", run["error"]
    lengths = run["summary"]["lengths"]
    print(
        "\nreal lookahead sweep:",
        {
            k: (
                round(v["all"]["decode_tps_client"]["median"], 2),
                v["all"]["acceptance_rate"] and round(v["all"]["acceptance_rate"]["pooled"], 3),
            )
            for k, v in lengths.items()
        },
    )
    assert lengths["0"]["all"]["acceptance_rate"] is None
    assert lengths["8"]["all"]["acceptance_rate"]["pooled"] >= 0.95
    assert (
        lengths["8"]["all"]["tokens_per_verification"]["pooled"]
        > lengths["4"]["all"]["tokens_per_verification"]["pooled"]
    )


def test_it_sweeps_lookahead_on_ollama_through_modelfile_aliases(inprocess, capsys):
    from engines.simulator import SimProfile, serve_in_thread

    with serve_in_thread(SimProfile(decode_tps=300, ttft_ms=5, acceptance=0.9)) as sim:
        EngineConfigFactory(
            name="ollama-sweep",
            model="qwen3:8b",
            max_tokens=24,
            engine__kind="ollama",
            engine__base_url=sim.url,
            engine__simulator=True,
        )
        run = bench(capsys, "ollama-sweep", "lookahead", "--lengths", "0,8", "--reps", "1", "--warmup", "0")
    assert run["status"] == "succeeded", run["error"]
    lengths = run["summary"]["lengths"]
    # Ollama exposes no acceptance; the alias's draft_num_predict shows in the speed of each length.
    assert lengths["0"]["all"]["acceptance_rate"] is None
    assert (
        lengths["8"]["all"]["decode_tps_client"]["median"]
        > 1.5 * lengths["0"]["all"]["decode_tps_client"]["median"]
    )
