import asyncio
import socket

import pytest
from asgiref.sync import async_to_sync

from engines.lifecycle import EngineStartError
from engines.models import EngineSession
from runs.models import Run
from runs.worker.engine_session import MachineBusy, RunEngine
from tests.factories import RunFactory
from tests.real_engine import free_port

pytestmark = pytest.mark.django_db(transaction=True)

DISCARD = "srv  update: - prompt state size 812.000 MiB exceeds cache size limit 512.000 MiB, skipping"
ACCEPTANCE = (
    "slot print_timing: id  0 | task 7 | draft acceptance = 0.75000 (   30 accepted /    40 generated), "
    "mean len =  4.00"
)


def watch(run, during):
    async def scenario():
        async with RunEngine(run) as engine_side:
            await asyncio.sleep(0.3)
            await asyncio.to_thread(during)
            await asyncio.sleep(0.6)
        return engine_side

    return async_to_sync(scenario)()


def test_it_tails_an_external_engines_log_file_and_flags_a_cache_discard(tmp_path):
    log = tmp_path / "ollama.log"
    log.write_text("an old line from before the run\n")
    run = RunFactory(config__engine__log_path=str(log))

    def engine_writes():
        with log.open("a") as handle:
            handle.write(f"{ACCEPTANCE}\n{DISCARD}\n")

    engine_side = watch(run, engine_writes)
    run = Run.objects.get(pk=run.pk)
    assert "an old line" not in run.engine_log
    assert DISCARD in run.engine_log
    assert [w["kind"] for w in run.warnings] == ["cache-discard"]
    assert "--cache-ram" in run.warnings[0]["message"]
    assert engine_side.acceptance == [{"rate": 0.75, "accepted": 30, "generated": 40, "mean_len": 4.0}]


def test_it_reads_an_external_engines_log_from_a_command():
    run = RunFactory(config__engine__log_command=f"printf '%s\\n' '{DISCARD}'")
    watch(run, lambda: None)
    run = Run.objects.get(pk=run.pk)
    assert run.engine_log == DISCARD
    assert run.warnings[0]["kind"] == "cache-discard"


def managed_vllm_run(port, model):
    return RunFactory(
        config__engine__kind="vllm", config__engine__launch="managed", config__engine__binary="/bin/false",
        config__engine__base_url=f"http://127.0.0.1:{port}", config__model=model, status=Run.Status.RUNNING,
    )  # fmt: skip


def enter(run):
    async def scenario():
        async with RunEngine(run):
            pass

    async_to_sync(scenario)()


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    """tmp_path as this machine's only model directory."""
    monkeypatch.setenv("SPARKDASH_MODEL_DIRS", str(tmp_path))
    return tmp_path


def test_it_refuses_a_managed_engine_whose_model_folder_is_missing_before_starting_it(model_dir):
    run = managed_vllm_run(free_port(), str(model_dir / "no-such-model"))
    with pytest.raises(EngineStartError, match="no-such-model: no such file or folder on this machine"):
        enter(run)
    assert not EngineSession.objects.filter(run_id=run.pk).exists()  # nothing was started


def test_it_refuses_a_managed_engine_whose_port_is_in_use(model_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        run = managed_vllm_run(taken.getsockname()[1], str(model_dir))
        with pytest.raises(MachineBusy, match=f"port {taken.getsockname()[1]} is already taken"):
            enter(run)
    session = EngineSession.objects.get(run_id=run.pk)
    assert (session.exit_status, session.stopped is not None) == ("port busy", True)
