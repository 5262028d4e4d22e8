import asyncio

import pytest
from asgiref.sync import async_to_sync

from runs.models import Run
from runs.worker.engine_session import RunEngine
from tests.factories import RunFactory

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
