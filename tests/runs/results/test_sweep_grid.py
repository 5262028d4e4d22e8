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
