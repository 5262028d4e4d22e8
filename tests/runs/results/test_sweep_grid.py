from __future__ import annotations

import pytest
from django.urls import reverse

from runs.models import Run
from runs.results.sweep_grid import execution_grid
from tests.factories import EngineConfigFactory, RunFactory, SweepExecutionFactory, throttled_warning

pytestmark = pytest.mark.django_db


def test_it_marks_the_cell_of_a_run_that_throttled(alice_client):
    execution = SweepExecutionFactory()
    hot, cool = EngineConfigFactory(name="hot-box"), EngineConfigFactory(name="cool-box")
    summary = {"decode_tps_client": {"median": 40.0, "min": 40.0, "max": 40.0, "n": 1}}
    RunFactory(config=hot, execution=execution, status=Run.Status.SUCCEEDED, summary=summary,
               warnings=[throttled_warning(7.5)])
    RunFactory(config=cool, execution=execution, status=Run.Status.SUCCEEDED, summary=summary)
    cells = {row["config"]["name"]: row["cells"][0] for row in execution_grid(execution)["rows"]}
    assert cells["hot-box"]["throttle_text"] == "throttled 7.5 s"
    assert cells["cool-box"]["throttle_text"] == ""
    html = alice_client.get(reverse("runs:sweep-run", args=[execution.pk])).content.decode()
    assert "\u26a0 throttled 7.5 s</span>" in html


def test_it_gives_each_revision_of_a_config_edited_during_the_sweep_run_a_row_of_its_own(alice_client):
    base = EngineConfigFactory(name="base", lookahead=4)
    execution = SweepExecutionFactory(sweep__baseline=base)
    other = EngineConfigFactory(name="other")

    def ran(config, tps):
        summary = {"decode_tps_client": {"median": tps, "min": tps, "max": tps, "n": 1}}
        RunFactory(config=config, execution=execution, status=Run.Status.SUCCEEDED, summary=summary)

    ran(base, 40.0)
    ran(other, 30.0)
    base.lookahead = 8
    base.save()  # a new revision, while the sweep run goes
    ran(base, 60.0)
    ran(base, 62.0)
    rows = execution_grid(execution)["rows"]
    shown = [(r["config"]["name"], r["config"]["revision"], r["baseline"], r["cells"][0]["spread"]["n"])
             for r in rows]
    assert sorted(shown) == [("base", 1, False, 1), ("base", 2, True, 2), ("other", 1, False, 1)]
    r1 = next(r for r in rows if r["config"]["revision"] == 1 and r["config"]["name"] == "base")
    assert r1["cells"][0]["spread"]["median"] == 40.0  # never pooled with r2's 60 and 62
    html = alice_client.get(reverse("runs:sweep-run", args=[execution.pk])).content.decode()
    assert html.count(">r2</small>") == 1 and f'data-cell="{base.pk}-r1-speed"' in html
