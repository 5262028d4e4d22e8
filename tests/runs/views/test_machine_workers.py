from __future__ import annotations

import uuid

import pytest
from django.core.cache import cache
from django.urls import reverse

from runs.actions.workers import CACHE_KEY
from runs.models import Run
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, RunFactory
from tests.runs.celery_helpers import celery_worker, requires_celery


@pytest.fixture(autouse=True)
def _fresh_presence_cache(settings):
    # A worker on 2 busy cores (CI's Postgres pass) once took over the default 1 s to answer.
    settings.SPARKDASH_WORKER_INSPECT_TIMEOUT_S = 5.0
    cache.delete(CACHE_KEY)
    yield
    cache.delete(CACHE_KEY)


@pytest.fixture
def queued(transactional_db) -> Run:
    """A queued run on a machine whose queue is new to the broker."""
    machine = MachineFactory(name=f"spark-{uuid.uuid4().hex[:10]}")
    config = EngineConfigFactory(engine=EngineFactory(machine=machine))
    return RunFactory(config=config, status=Run.Status.QUEUED)


def presence_line(html: str, machine_pk: int) -> str:
    start = html.index(f'<p class="worker-presence" data-machine="{machine_pk}"')
    return html[start : html.index("</p>", start)]


def pages(client, run: Run) -> dict[str, str]:
    urls = {"home": reverse("runs:home"), "config": run.config.get_absolute_url(),
            "run": run.get_absolute_url()}
    return {name: client.get(url).content.decode() for name, url in urls.items()}


def test_it_shows_the_in_process_worker_of_the_embedded_default(alice_client, queued, settings):
    settings.SPARKDASH_WORKER = "inprocess"
    shown = pages(alice_client, queued)

    for name in ("home", "config"):
        line = presence_line(shown[name], queued.machine_id)
        assert 'data-listening="yes"' in line and "in-process worker" in line, name
        assert "1 run waiting" in line, name
    assert 'data-warning="no-worker"' not in shown["run"]


@requires_celery
def test_it_says_on_every_page_when_no_worker_listens_on_the_machines_queue(alice_client, queued):
    machine = queued.machine
    shown = pages(alice_client, queued)

    for name in ("home", "config"):
        line = presence_line(shown[name], machine.pk)
        assert 'data-listening="no"' in line, name
        assert f"no worker listens on queue <code>{machine.queue_name}</code>" in line, name
        assert f"make worker MACHINE={machine.name}" in line and "1 run waiting" in line, name
    assert 'data-warning="no-worker"' in shown["run"]
    hint = f"start one with make worker MACHINE={machine.name}"
    assert f"no worker listens on queue {machine.queue_name}: {hint}" in shown["run"]


@requires_celery
def test_it_shows_the_listening_worker_and_no_warning_on_the_run_page(alice_client, queued):
    with celery_worker(queued.machine.queue_name, name="pages") as worker:
        # Consumes nothing: the run was stored without a message on the queue.
        shown = pages(alice_client, queued)

    line = presence_line(shown["home"], queued.machine_id)
    assert 'data-listening="yes"' in line and f"{worker.name}@" in line
    assert 'data-warning="no-worker"' not in shown["run"]


@requires_celery
def test_it_drops_the_warning_once_the_run_is_no_longer_queued(alice_client, queued):
    Run.objects.filter(pk=queued.pk).update(status=Run.Status.CANCELLED)
    assert 'data-warning="no-worker"' not in alice_client.get(queued.get_absolute_url()).content.decode()
