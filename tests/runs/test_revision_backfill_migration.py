"""runs/migrations/0017: old runs get the revision their provenance says they ran with."""
from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from engines.models import ConfigRevision
from runs.models import Run
from tests.factories import EngineConfigFactory, RunFactory

pytestmark = pytest.mark.django_db

backfill = importlib.import_module("runs.migrations.0017_backfill_revisions").backfill


def ran_with(config, **changed) -> dict:
    """The provenance a run stored before revisions existed, with some settings other than now."""
    snapshot = config.snapshot() | changed
    snapshot.pop("preheat_s")  # a setting older snapshots did not have
    return {"config": snapshot}


def test_it_gives_old_runs_the_revisions_they_ran_with_and_the_config_its_current_one(alice_client):
    config = EngineConfigFactory(lookahead=8, engine__machine__team__name="alpha")
    first = RunFactory(config=config, provenance=ran_with(config, lookahead=4), status=Run.Status.SUCCEEDED)
    second = RunFactory(config=config, provenance=ran_with(config, lookahead=4))
    third = RunFactory(config=config, provenance=ran_with(config))
    queued = RunFactory(config=config)
    Run.objects.update(revision=None)
    ConfigRevision.objects.all().delete()
    backfill(apps, None)
    numbers = {run.pk: run.revision.number for run in Run.objects.select_related("revision")}
    assert numbers == {first.pk: 1, second.pk: 1, third.pk: 2, queued.pk: 2}
    old, now = config.revisions.all()
    assert (old.settings["lookahead"], now.settings["lookahead"]) == (4, 8)
    assert old.settings["preheat_s"] == now.settings["preheat_s"]  # the field's default
    assert alice_client.get(first.get_absolute_url()).status_code == 200
