
import pytest

from engines.simulator import SimProfile, serve_in_thread
from tests.factories import EngineConfigFactory
from tests.real_engine import requires_engine
from tests.runs.bench_helpers import bench, real_llama_config

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("kind", ["llama-server", "ollama"])
def test_it_sizes_haystacks_with_the_engines_tokenizer_on_the_simulator(inprocess, capsys, kind):
    with serve_in_thread(SimProfile(decode_tps=2000, ttft_ms=5)) as sim:
        EngineConfigFactory(name="sim", engine__kind=kind, engine__base_url=sim.url, engine__simulator=True)
        run = bench(capsys, "sim", "needle", "--lengths", "2000,8000", "--depths", "0.2,0.8")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    assert summary["total"] == 4
    assert summary["length_error_max"] <= 0.02
    assert run["progress"] == {"done": 4, "total": 4}


def test_it_rejects_depths_outside_the_haystack(inprocess, capsys):
    EngineConfigFactory(name="sim")
    with pytest.raises(Exception, match="depths must be fractions between 0 and 1"):
        bench(capsys, "sim", "needle", "--depths", "0.5,1.5")


@requires_engine
@pytest.mark.timeout(600)
def test_it_hides_a_needle_in_a_real_llama_server_haystack_of_the_asked_length(inprocess, capsys):
    real_llama_config("real", context_length=8192)
    run = bench(capsys, "real", "needle", "--lengths", "4096", "--depths", "0.5")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    print(
        f"\nreal needle at 4096: found {summary['score']}/{summary['total']}, "
        f"length error {summary['length_error_max']:.4f}"
    )
    # The engine's own count of the prompt is within 2 % of the target; finding it is the model's job.
    assert summary["length_error_max"] <= 0.02
    assert summary["total"] == 1
