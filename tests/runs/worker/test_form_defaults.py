"""Every job kind's form defaults run to completion on the simulator with the shipped samples: what a
new user gets by choosing a job and pressing Start (issue: MMLU-Pro's default 5 shots failed on the
shipped sample). The simulator is managed, so the lookahead sweep can relaunch it."""
from __future__ import annotations

import pytest

from engines.models import Engine
from runs.core import registry
from tests.factories import EngineConfigFactory
from tests.real_engine import free_port
from tests.runs.bench_helpers import bench

pytestmark = pytest.mark.django_db(transaction=True)

# What the form needs besides its defaults: the shipped sample where a job reads a dataset (a
# replay without a file sends its shipped sample session).
CHOSEN = {"mmlu-pro": ("--dataset", "sample"), "evalplus": ("--dataset", "sample")}


@pytest.mark.parametrize("job", [job for job, _label in registry.startable_choices()])
def test_it_runs_each_jobs_form_defaults_to_the_end(job, inprocess, capsys):
    EngineConfigFactory(
        name=f"defaults-{job}", model="demo", lookahead=4, speculative_method="draft-mtp",
        engine__simulator=True, engine__launch=Engine.Launch.MANAGED,
        engine__base_url=f"http://127.0.0.1:{free_port()}",
        extra_flags="--decode-tps 4000 --ttft-ms 2 --acceptance 0.8",
    )
    run = bench(capsys, f"defaults-{job}", job, *CHOSEN.get(job, ()))
    assert run["status"] == "succeeded", run["error"]
    assert run["progress"]["done"] == run["progress"]["total"] > 0
    if job == "mmlu-pro":  # the simulator answers each question with a letter: none runs out of tokens
        assert run["summary"]["budget_hit"] == 0 and run["summary"]["accuracy"] is not None
