from __future__ import annotations

from contextlib import ExitStack

import pytest

from engines.simulator import SimProfile
from runs.actions.runs import start_run
from runs.models import Run
from tests.runs.celery_helpers import celery_worker, overlaps, requires_celery, wait_until_finished

pytestmark = [requires_celery, pytest.mark.django_db(transaction=True)]

# Six requests of ~0.33 s each: a run lasts about 2 s.
PARAMS = {"reps": 1, "warmup": 0, "max_tokens": 12}
PROFILE = SimProfile(decode_tps=40, ttft_ms=50)


def test_it_never_overlaps_two_runs_on_one_machine_but_runs_two_machines_at_once(sim_config):
    a, b = sim_config(PROFILE, prefix="box-a"), sim_config(PROFILE, prefix="box-b")
    queue_a, queue_b = a.engine.machine.queue_name, b.engine.machine.queue_name
    with ExitStack() as workers:
        workers.enter_context(celery_worker(queue_a, name="box-a"))
        workers.enter_context(celery_worker(queue_b, name="box-b"))
        # A stray second worker on A's queue: only the claim in the database keeps A's runs apart.
        workers.enter_context(celery_worker(queue_a, name="box-a-stray", pool="prefork"))
        ids = [start_run(config, "speed", PARAMS).pk for config in (a, a, b, b)]
        runs = wait_until_finished(ids)

    assert [run.status for run in runs] == [Run.Status.SUCCEEDED] * 4, [run.error for run in runs]
    a1, a2, b1, b2 = runs
    assert not overlaps(a1, a2), (a1.started, a1.finished, a2.started, a2.finished)
    assert not overlaps(b1, b2), (b1.started, b1.finished, b2.started, b2.finished)
    assert any(overlaps(x, y) for x in (a1, a2) for y in (b1, b2))
