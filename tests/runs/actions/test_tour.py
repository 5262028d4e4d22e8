"""The demo tour's action: which runs it queues, in what order, and when it refuses."""
from __future__ import annotations

from unittest import mock

import pytest

from engines.models import EngineConfig
from runs.actions.tour import TOUR_CONFIGS, TourUnavailable, start_tour, tour_runs
from runs.models import Run
from runs.worker import dispatch
from tests.factories import EngineConfigFactory, EngineFactory, RunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def handed(settings):
    """The run ids handed to machines' workers, in order (nothing runs)."""
    settings.SPARKDASH_WORKER = "inprocess"
    ids: list[int] = []
    with mock.patch.object(dispatch, "submit_in_process", side_effect=lambda m, r: ids.append(r)):
        yield ids


def demo_like(simulator: bool = True) -> list[EngineConfig]:
    """Configs named as the demo's: a managed llama-server simulator and an Ollama one."""
    llama = EngineFactory(kind="llama-server", simulator=simulator, launch="managed")
    ollama = EngineFactory(kind="ollama", simulator=simulator)
    return [
        EngineConfigFactory(name=TOUR_CONFIGS[0], engine=llama),
        EngineConfigFactory(name=TOUR_CONFIGS[1], engine=ollama),
    ]


def test_it_queues_each_configs_speed_run_before_any_sweep(handed, django_capture_on_commit_callbacks):
    configs = demo_like()
    with django_capture_on_commit_callbacks(execute=True):
        tour = start_tour(EngineConfig.objects.all())
    assert [r.config for r in tour.speed] == configs and [r.config for r in tour.sweeps] == configs
    assert {r.job for r in tour.speed} == {"speed"} and {r.job for r in tour.sweeps} == {"lookahead"}
    warnings = [(r.config, r.job) for r in tour.warnings]
    assert warnings == [(configs[0], "prefix-cache"), (configs[0], "agent-table")]
    assert handed == tour.ids
    assert tour.sweeps[0].params["lengths"] == [0, 2, 4, 8, 12]
    assert tour.compare_url == f"/compare/?runs={tour.speed[0].pk}%2C{tour.speed[1].pk}"


def test_it_refuses_without_the_demo_configs_and_queues_nothing(handed):
    EngineConfigFactory(name=TOUR_CONFIGS[0], engine=EngineFactory(simulator=True, launch="managed"))
    with pytest.raises(TourUnavailable, match=f"{TOUR_CONFIGS[1]} are not loaded: run `manage.py demo`"):
        start_tour(EngineConfig.objects.all())
    assert Run.objects.count() == 0 and handed == []


def test_it_refuses_demo_names_on_a_real_engine(handed):
    demo_like(simulator=False)
    with pytest.raises(TourUnavailable):
        start_tour(EngineConfig.objects.all())


def test_it_refuses_configs_the_user_cannot_see(handed):
    demo_like()
    with pytest.raises(TourUnavailable):
        start_tour(EngineConfig.objects.none())


def test_it_rebuilds_a_tour_from_its_ids_and_refuses_other_runs(handed):
    demo_like()
    tour = start_tour(EngineConfig.objects.all())
    again = tour_runs(Run.objects.all(), tour.ids)
    assert again is not None and again.ids == tour.ids
    for job in ("agent-table", "needle"):  # a tour job too many, or another job
        assert tour_runs(Run.objects.all(), [*tour.ids, RunFactory(job=job).pk]) is None
    assert tour_runs(Run.objects.all(), tour.ids[:-1]) is None
    assert tour_runs(Run.objects.all(), [*tour.ids, 999_999]) is None
    assert tour_runs(Run.objects.none(), tour.ids) is None
