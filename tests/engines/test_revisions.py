"""Config revisions: a settings change makes one, a run keeps the one it ran with."""
from __future__ import annotations

import pytest

from engines import revisions
from engines.simulator import SimProfile, serve_in_thread
from runs.actions.runs import start_run
from runs.models import Run
from tests.factories import EngineConfigFactory, RunFactory
from tests.runs.worker.test_execution import run_to_end

pytestmark = pytest.mark.django_db


def test_it_makes_a_revision_for_a_settings_change_and_none_for_a_rename_or_notes():
    config = EngineConfigFactory(lookahead=4)
    assert [r.number for r in config.revisions.all()] == [1]
    config.name, config.notes = "renamed", "a note"
    config.save()
    assert config.revisions.count() == 1
    config.lookahead = 8
    config.save()
    first, second = config.revisions.all()
    assert (first.settings["lookahead"], second.settings["lookahead"]) == (4, 8)
    assert second.changes_from(first) == [("lookahead", 4, 8)]


def test_it_diffs_two_configs_settings_in_the_forms_order():
    one = revisions.settings_of(EngineConfigFactory(lookahead=4, temperature=0.0))
    two = revisions.settings_of(EngineConfigFactory(lookahead=8, temperature=0.7))
    assert revisions.diff(one, two) == [("lookahead", 4, 8), ("temperature", 0.0, 0.7)]


def test_it_keeps_an_old_runs_revision_when_the_config_changes():
    config = EngineConfigFactory(lookahead=4)
    old = start_run(config, "speed", {"reps": 1})
    config.lookahead = 8
    config.save()
    new = start_run(config, "speed", {"reps": 1})
    assert (old.revision.number, new.revision.number) == (1, 2)
    assert old.revision.settings["lookahead"] == 4
    assert Run.objects.get(pk=old.pk).to_dict()["revision"] == 1


def test_it_refuses_a_revision_of_another_config():
    other = EngineConfigFactory()
    with pytest.raises(ValueError, match="another config"):
        start_run(EngineConfigFactory(), "speed", {"reps": 1}, revision=revisions.record(other))


@pytest.mark.django_db(transaction=True)
def test_it_runs_a_run_again_with_its_revisions_settings_after_the_config_changed():
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        config = EngineConfigFactory(max_tokens=8, lookahead=4, engine__base_url=sim.url,
                                     engine__kind="llama-server", engine__simulator=True)
        first = RunFactory(config=config, params={"reps": 1, "warmup": 0})
        config.lookahead = 2
        config.save()
        again = run_to_end(RunFactory(config=config, params=first.params, revision=first.revision))
    again.refresh_from_db()
    assert again.status == Run.Status.SUCCEEDED, again.error
    assert again.revision_id == first.revision_id
    assert again.provenance["config"]["lookahead"] == 4
    config.refresh_from_db()
    assert config.lookahead == 2  # the config itself is left as it is
