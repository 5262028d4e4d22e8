from __future__ import annotations

import time
import uuid
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from engines.models import Engine, EngineSession
from engines.simulator import SimProfile, serve_in_thread
from runs.actions.runs import cancel_run
from runs.actions.sweeps import clean_jobs, start_sweep
from runs.core.scoring.figures import compare_rows, score_rows
from runs.models import Run, SweepExecution
from runs.results.sweep_grid import execution_grid
from runs.signals import execution_finished
from runs.worker import dispatch, execution
from tests.factories import (
    EngineConfigFactory,
    EngineFactory,
    MachineFactory,
    RunFactory,
    SweepExecutionFactory,
    SweepFactory,
)
from tests.real_engine import requires_engine
from tests.runs.bench_helpers import real_llama_config
from tests.runs.celery_helpers import celery_worker, requires_celery

SPEED = {"job": "speed", "params": {"reps": 1, "warmup": 0}}
CONCURRENCY = {"job": "concurrency", "params": {"levels": [1, 2]}}


@pytest.fixture
def dispatched(settings):
    """(machine id, run id) in the order runs are handed to their machine's worker."""
    settings.SPARKDASH_WORKER = "inprocess"
    handed: list[tuple[int, int]] = []
    with mock.patch.object(dispatch, "submit_in_process", side_effect=lambda m, r: handed.append((m, r))):
        yield handed


@pytest.fixture
def finished_signals():
    received = []

    def receiver(sender, execution, **kwargs):
        received.append((sender, execution.pk))

    execution_finished.connect(receiver)
    yield received
    execution_finished.disconnect(receiver)


def two_machines():
    """Box 1: engine "b-engine" with configs alpha and gamma, engine "a-engine" with beta; box 2: delta.

    By config name alone beta would sit between alpha and gamma, splitting b-engine's configs.
    """
    box1, box2 = MachineFactory(name="box-1"), MachineFactory(name="box-2")
    b_engine = EngineFactory(machine=box1, name="b-engine")
    a_engine = EngineFactory(machine=box1, name="a-engine")
    configs = [
        EngineConfigFactory(engine=b_engine, name="alpha"),
        EngineConfigFactory(engine=a_engine, name="beta"),
        EngineConfigFactory(engine=b_engine, name="gamma"),
        EngineConfigFactory(engine=EngineFactory(machine=box2, name="c-engine"), name="delta"),
    ]
    return box1, box2, configs


@pytest.mark.django_db
def test_it_queues_each_config_consecutively_and_the_configs_of_one_engine_together(
    dispatched, django_capture_on_commit_callbacks
):
    box1, box2, configs = two_machines()
    sweep = SweepFactory(configs=configs, jobs=[CONCURRENCY, SPEED], repetitions=2)
    with django_capture_on_commit_callbacks(execute=True):
        started = start_sweep(sweep)

    runs = Run.objects.select_related("config__engine").in_bulk([run_id for _, run_id in dispatched])
    order = {box.pk: [runs[r] for m, r in dispatched if m == box.pk] for box in (box1, box2)}
    cells = [(r.config.engine.name, r.config.name, r.job, r.repetition) for r in order[box1.pk]]
    assert cells == [
        (engine, config, job, rep)
        for engine, config in (("a-engine", "beta"), ("b-engine", "alpha"), ("b-engine", "gamma"))
        for job in ("speed", "concurrency")
        for rep in (1, 2)
    ]
    assert [(r.config.name, r.job, r.repetition) for r in order[box2.pk]] == [
        ("delta", job, rep) for job in ("speed", "concurrency") for rep in (1, 2)
    ]
    assert len(dispatched) == 16 and all(run.execution_id == started.pk for run in runs.values())
    assert runs[dispatched[0][1]].params == {"reps": 1, "warmup": 0}


@pytest.mark.django_db
def test_it_dispatches_nothing_before_the_sweep_run_commits(dispatched):
    sweep = SweepFactory(configs=[EngineConfigFactory()], jobs=[SPEED])
    start_sweep(sweep)
    assert dispatched == []  # the on_commit callbacks of a test transaction never run


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([{"job": "speed", "params": {"reps": 99}}], "speed: reps must be between 1 and 50, not 99"),
        ([{"job": "speed", "params": {"rpes": 1}}], "speed: unknown parameter 'rpes' for job speed"),
        ([{"job": "concurrency", "params": {"levels": "1,x"}}], "concurrency: levels item must be a whole"),
        ([{"job": "needle", "params": {"depths": [2]}}], "needle: depths must be fractions between 0 and 1"),
        ([{"job": "speedy"}], "speedy: not a job"),
        ([SPEED, {"job": "speed"}], "speed: listed twice"),
        ([{"job": "speed", "params": [1]}], "speed: params must be a JSON object"),
        ([], "jobs: choose at least one job"),
    ],
)
def test_it_names_the_job_and_field_in_clean_jobs_errors(jobs, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        clean_jobs(jobs)


def test_it_fills_in_defaults_and_orders_jobs_like_run_job():
    assert clean_jobs([CONCURRENCY, SPEED]) == [
        {"job": "speed", "params": {"reps": 1, "warmup": 0}},
        {"job": "concurrency", "params": {"levels": [1, 2], "answer_tokens": 256, "reps": 1, "warmup": 1,
                                            "split_from": 32, "prompt_tokens": 0, "processes": 0}},
    ]


@pytest.mark.django_db
def test_it_queues_nothing_when_a_job_is_bad(dispatched):
    bad = {"job": "concurrency", "params": {"levels": [0]}}
    sweep = SweepFactory(configs=[EngineConfigFactory()], jobs=[SPEED, bad])
    with pytest.raises(ValueError, match="concurrency: levels item must be between 1 and 256, not 0"):
        start_sweep(sweep)
    assert not Run.objects.exists() and not SweepExecution.objects.exists()


@pytest.mark.django_db
def test_it_queues_nothing_when_a_config_cannot_run_a_job(dispatched, django_capture_on_commit_callbacks):
    # The second config is an external llama-server: a lookahead sweep needs a relaunch. Its
    # refusal comes after the first config's runs were created; they are rolled back.
    managed = EngineConfigFactory(
        name="a-managed", engine__name="a-engine", engine__launch=Engine.Launch.MANAGED, engine__binary="x"
    )
    external = EngineConfigFactory(
        name="b-external", engine__name="b-engine", engine__machine=managed.engine.machine
    )
    sweep = SweepFactory(configs=[managed, external], jobs=[{"job": "lookahead"}])
    refused = pytest.raises(ValueError, match=r"^b-external, lookahead: a lookahead sweep sets the length")
    with django_capture_on_commit_callbacks(execute=True), refused:
        start_sweep(sweep)
    assert not Run.objects.exists() and not SweepExecution.objects.exists()
    assert dispatched == []


def execution_with(*statuses):
    sweep_run = SweepExecutionFactory()
    runs = [RunFactory(execution=sweep_run, repetition=i + 1, status=s) for i, s in enumerate(statuses)]
    return sweep_run, runs


@pytest.mark.django_db
def test_it_finishes_a_sweep_run_once_and_signals_once(finished_signals, django_capture_on_commit_callbacks):
    sweep_run, (first, second) = execution_with(Run.Status.SUCCEEDED, Run.Status.RUNNING)
    with django_capture_on_commit_callbacks(execute=True):
        assert SweepExecution.finish_if_done(first.pk) is False
    sweep_run.refresh_from_db()
    assert sweep_run.finished is None and finished_signals == []

    Run.objects.filter(pk=second.pk).update(status=Run.Status.FAILED)
    with django_capture_on_commit_callbacks(execute=True):
        results = [SweepExecution.finish_if_done(second.pk), SweepExecution.finish_if_done(first.pk)]
    sweep_run.refresh_from_db()
    assert results == [True, False]
    assert sweep_run.finished is not None
    assert finished_signals == [(SweepExecution, sweep_run.pk)]


@pytest.mark.django_db
def test_it_ignores_runs_outside_any_sweep(finished_signals):
    assert SweepExecution.finish_if_done(RunFactory(status=Run.Status.SUCCEEDED).pk) is False
    assert SweepExecution.finish_if_done(123456) is False


@pytest.mark.django_db
def test_it_counts_a_cancelled_run_as_ended(finished_signals, django_capture_on_commit_callbacks):
    sweep_run, (_, queued) = execution_with(Run.Status.SUCCEEDED, Run.Status.QUEUED)
    with django_capture_on_commit_callbacks(execute=True):
        assert cancel_run(queued)
    sweep_run.refresh_from_db()
    assert sweep_run.finished is not None
    assert finished_signals == [(SweepExecution, sweep_run.pk)]


@pytest.mark.django_db
def test_it_counts_a_lost_run_as_ended(settings, finished_signals, django_capture_on_commit_callbacks):
    settings.SPARKDASH_LOST_RUN_S = 60
    sweep_run, (_, lost) = execution_with(Run.Status.SUCCEEDED, Run.Status.RUNNING)
    Run.objects.filter(pk=lost.pk).update(heartbeat=timezone.now() - timedelta(minutes=5))
    with django_capture_on_commit_callbacks(execute=True):
        assert execution.reap_lost_runs(lost.machine_id) == 1
    sweep_run.refresh_from_db()
    assert sweep_run.finished is not None
    assert finished_signals == [(SweepExecution, sweep_run.pk)]


@pytest.mark.django_db(transaction=True)
def test_it_finishes_a_sweep_run_on_the_in_process_worker(sim_config, inprocess, finished_signals):
    config = sim_config(SimProfile(decode_tps=400, ttft_ms=5), prefix="sweep-inproc")
    sweep = SweepFactory(configs=[config], jobs=[{"job": "speed", "params": {"reps": 1, "warmup": 0,
                                                                            "max_tokens": 4}}])
    started = start_sweep(sweep)
    deadline = timezone.now() + timedelta(seconds=60)
    # The signal goes out just after the sweep run is marked finished, from the worker's thread.
    while timezone.now() < deadline and not (SweepExecution.objects.get(pk=started.pk).finished
                                             and finished_signals):
        time.sleep(0.1)

    runs = list(started.runs.order_by("repetition"))
    assert [(r.status, r.repetition) for r in runs] == [(Run.Status.SUCCEEDED, 1), (Run.Status.SUCCEEDED, 2)]
    assert SweepExecution.objects.get(pk=started.pk).finished >= max(r.finished for r in runs)
    assert finished_signals == [(SweepExecution, started.pk)]


def wait_for_sweep_run(pk: int, timeout_s: float) -> SweepExecution:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        sweep_run = SweepExecution.objects.get(pk=pk)
        if sweep_run.finished:
            return sweep_run
        time.sleep(0.2)
    states = list(Run.objects.filter(execution_id=pk).values_list("config__name", "repetition", "status"))
    raise AssertionError(f"sweep run {pk} not finished within {timeout_s} s: {states}")


SIM = SimProfile(decode_tps=80, ttft_ms=30)
QUICK_SPEED = {"job": "speed", "params": {"reps": 1, "warmup": 0, "max_tokens": 16}}


def sweep_llama_and_simulator() -> tuple[SweepExecution, float]:
    """Both configs x speed x 3 on one machine, through a real Celery worker; (sweep run, wall s)."""
    box = MachineFactory(name=f"sweep-accept-{uuid.uuid4().hex[:10]}")
    llama = real_llama_config("sweep-llama", engine__machine=box, engine__name="a-llama", max_tokens=16)
    with serve_in_thread(SIM) as sim:
        engine = EngineFactory(machine=box, name="b-sim", base_url=sim.url, simulator=True)
        simulated = EngineConfigFactory(engine=engine, name="sweep-sim", max_tokens=16)
        sweep = SweepFactory(configs=[llama, simulated], baseline=simulated, repetitions=3,
                             jobs=[QUICK_SPEED])
        began = time.monotonic()
        with celery_worker(box.queue_name, name="sweep-accept") as worker:
            started = start_sweep(sweep)
            try:
                wait_for_sweep_run(started.pk, 110)
            except AssertionError:
                print(worker.log())
                raise
        return started, time.monotonic() - began


def print_figures(started: SweepExecution, wall_s: float, table: list, cell: dict) -> None:
    print(f"\nsweep run #{started.pk}: 2 configs x speed x 3 reps through Celery in {wall_s:.1f} s")
    for row in table:
        print(f"  {row['label']:>16}: llama {row['b']['text']} vs sim {row['a']['text']}: "
              f"{row['delta_text']} ({row['delta_pct_text']}) {row['verdict']}")
    print(f"  grid cell llama: {cell['text']}, delta {cell['delta_text']} ({cell['delta_pct_text']}) "
          f"{cell['verdict']}")


@requires_celery
@requires_engine
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(180)
def test_it_runs_a_small_sweep_through_celery_on_the_real_llama_server_and_the_simulator():
    started, wall_s = sweep_llama_and_simulator()

    runs = list(Run.objects.filter(execution=started).select_related("config").order_by("started"))
    assert [r.status for r in runs] == [Run.Status.SUCCEEDED] * 6, [r.error for r in runs]
    # One machine, one queue: the llama config's three runs, then the simulator's.
    assert [(r.config.name, r.repetition) for r in runs] == [
        (c, rep) for c in ("sweep-llama", "sweep-sim") for rep in (1, 2, 3)
    ]
    grid = execution_grid(started)
    (column,), (llama_row, sim_row) = grid["columns"], grid["rows"]
    assert column["job"] == "speed" and (sim_row["baseline"], llama_row["baseline"]) == (True, False)
    llama_cell, sim_cell = llama_row["cells"][0], sim_row["cells"][0]
    assert llama_cell["spread"]["n"] == sim_cell["spread"]["n"] == 3
    assert grid["progress"] == {"total": 6, "done": 6, "running": 0, "failed": 0, "queued": 0}
    assert 2 <= llama_cell["spread"]["median"] <= 300, llama_cell["text"]
    assert sim_cell["spread"]["median"] == pytest.approx(SIM.decode_tps, rel=0.15), sim_cell["text"]

    sim_runs, llama_runs = ([(r.pk, r.job, r.summary) for r in runs if r.config.name == name]
                            for name in ("sweep-sim", "sweep-llama"))
    table = compare_rows(score_rows(sim_runs), score_rows(llama_runs))
    decode = next(row for row in table if row["key"] == "decode_tps_client")
    assert (decode["a"]["spread"], decode["b"]["spread"]) == (sim_cell["spread"], llama_cell["spread"])
    assert (decode["delta"], decode["verdict"]) == (llama_cell["delta"], llama_cell["verdict"])
    assert llama_cell["delta_text"] == decode["delta_text"]
    llama_engine = runs[0].config.engine_id
    assert EngineSession.objects.filter(engine_id=llama_engine).count() == 3  # started once per run
    print_figures(started, wall_s, table, llama_cell)
