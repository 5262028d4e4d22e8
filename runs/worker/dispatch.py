"""Handing runs to their machine's worker: a Celery queue per machine, or in-process threads.

With a broker (SPARKDASH_WORKER=celery) each machine has its own queue, consumed by one
worker with concurrency 1. Without one (the embedded default) each machine gets one thread
in this process. Either way the claim in runs.worker.execution refuses a second job on a busy box.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from celery import current_app
from django.conf import settings
from django.db import close_old_connections, transaction

from runs.models import ConnectionCheck, Run
from runs.worker import connection, execution

log = logging.getLogger(__name__)

EXECUTE_RUN = "runs.tasks.execute_run"  # the Celery tasks, sent by name
CHECK_CONNECTION = "runs.tasks.check_connection"
_executors: dict[int, ThreadPoolExecutor] = {}
_lock = threading.Lock()
BUSY_RETRY_S = 2.0


def worker_argv(queue: str, loglevel: str = "info") -> list[str]:
    """`celery worker` arguments for one machine's queue: concurrency 1, named after the queue.

    The default (prefork) pool keeps the worker's main process free to answer the pages'
    presence broadcast while its one child runs a job.
    """
    name = f"{queue}@%h"
    return ["-m", "celery", "-A", "sparkdash", "worker", "-Q", queue, "-c", "1", "-n", name, "-l", loglevel]


def enqueue_on_commit(run: Run) -> None:
    """Queue the run once the transaction that created it commits (a worker never sees it early)."""
    run_id, machine = run.pk, run.machine
    if settings.SPARKDASH_WORKER == "celery":
        queue = machine.queue_name
        transaction.on_commit(lambda: current_app.send_task(EXECUTE_RUN, (run_id,), queue=queue))
    else:
        transaction.on_commit(lambda: submit_in_process(machine.pk, run_id))


def check_on_commit(check: ConnectionCheck) -> None:
    """Hand a connection check to its machine's worker once its row is committed (it waits
    behind a run that worker is busy with: one box, one thing at a time)."""
    check_id, machine = check.pk, check.machine
    if settings.SPARKDASH_WORKER == "celery":
        queue = machine.queue_name
        transaction.on_commit(lambda: current_app.send_task(CHECK_CONNECTION, (check_id,), queue=queue))
    else:
        transaction.on_commit(lambda: _executor(machine.pk).submit(_check_in_process, check_id))


def _check_in_process(check_id: int) -> None:
    try:
        connection.run_check(check_id)
    finally:
        close_old_connections()


def _executor(machine_id: int) -> ThreadPoolExecutor:
    with _lock:
        executor = _executors.get(machine_id)
        if executor is None:
            executor = ThreadPoolExecutor(1, thread_name_prefix=f"machine-{machine_id}")
            _executors[machine_id] = executor
    return executor


def submit_in_process(machine_id: int, run_id: int) -> Future:
    """Run the job on this machine's single worker thread in this process."""
    return _executor(machine_id).submit(process_in_process, run_id)


def process_in_process(run_id: int) -> str:
    """Claim and execute, waiting while another process runs a job on the same machine."""
    try:
        while (outcome := execution.claim(run_id)) == execution.BUSY:
            time.sleep(BUSY_RETRY_S)
        if outcome == execution.CLAIMED:
            execution.execute(run_id)
        return outcome
    except Exception:
        log.exception("in-process worker failed on run %s", run_id)
        raise
    finally:
        close_old_connections()
