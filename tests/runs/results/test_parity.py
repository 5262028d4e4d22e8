from __future__ import annotations

import pytest
from django.urls import reverse

from runs.core.jobs.prompts import SPEED_PROMPTS, prompt_set_id
from runs.core.scoring.parity import NOT_RECORDED
from runs.results.parity import run_settings
from tests.factories import EngineConfigFactory
from tests.runs.compare_helpers import PROMPT_SET, speed_runs, speed_summary, succeeded

pytestmark = pytest.mark.django_db


def page(client, *configs):
    return client.get(reverse("runs:compare"), {"configs": ",".join(str(c.pk) for c in configs)})


def alert(response):
    html = response.content.decode()
    if 'role="alert" id="parity"' not in html:
        return None
    return html[html.index('role="alert" id="parity"'):html.index("</div>", html.index('id="parity"'))]


def test_it_shows_no_warning_for_runs_on_par(alice_client):
    a, b = (EngineConfigFactory(context_length=32768, parallel=4) for _ in range(2))
    speed_runs(a, 40.0, 41.0)
    speed_runs(b, 50.0, 51.0)
    response = page(alice_client, a, b)
    assert response.context["comparison"].mismatches == []
    assert alert(response) is None
    assert 'id="parity-ok"' in response.content.decode()


@pytest.mark.parametrize(
    ("field", "label", "b_config", "b_run", "shown"),
    [
        ("temperature", "temperature", {"temperature": 0.7}, {}, "b: 0.7"),
        ("max_tokens", "max tokens", {}, {"params": {"reps": 3, "max_tokens": 1024}}, "b: 1024"),
        ("context_length", "context length", {"context_length": 65536}, {}, "b: 65536"),
        ("parallel", "parallel slots", {"parallel": 1}, {}, "b: 1"),
        ("thinking", "thinking", {"thinking": "off"}, {}, "b: off"),
        ("thinking", "thinking", {"thinking": "budget", "thinking_budget": 4096}, {}, "b: budget 4096"),
        ("reasoning_effort", "reasoning effort", {"thinking": "", "reasoning_effort": "low"}, {}, "b: low"),
        ("prompt_set", "prompt set", {}, {"summary": speed_summary(50.0) | {"prompt_set": "0123456789ab"}},
         "b: 0123456789ab"),
    ],
)
def test_it_warns_of_each_mismatch_naming_the_field(alice_client, field, label, b_config, b_run, shown):
    a = EngineConfigFactory(name="a", context_length=32768, parallel=4)
    b = EngineConfigFactory(name="b", **({"context_length": 32768, "parallel": 4} | b_config))
    speed_runs(a, 40.0, 41.0)
    succeeded(b, "speed", b_run.pop("summary", speed_summary(50.0)), **b_run)
    response = page(alice_client, a, b)
    assert [m["field"] for m in response.context["comparison"].mismatches] == [field]
    warning = alert(response)
    assert f'<li data-field="{field}"><strong>{label}</strong> (speed runs): a: ' in warning
    assert shown in warning


def test_it_reads_the_settings_a_run_recorded_in_its_provenance():
    config = EngineConfigFactory(temperature=0.0, max_tokens=256, parallel=2)
    snapshot = {"temperature": 0.5, "top_p": 0.9, "top_k": 40, "seed": 3, "max_tokens": 300,
                "context_length": 8192, "parallel": 8}
    thinking = {"thinking": "budget", "thinking_budget": 2048, "reasoning_effort": "high"}
    summary = {"prompt_set": PROMPT_SET}
    run = succeeded(config, "speed", summary, provenance={"config": snapshot | thinking}, params={})
    assert run_settings(run, config) == snapshot | {"prompt_set": PROMPT_SET, "thinking": "budget 2048",
                                                    "reasoning_effort": "high"}


def test_it_leaves_out_the_thinking_of_a_run_from_before_it_was_recorded():
    config = EngineConfigFactory(thinking="on")
    run = succeeded(config, "speed", {}, provenance={"config": {"temperature": 0.0}}, params={})
    settings = run_settings(run, config)
    assert settings["thinking"] is NOT_RECORDED and settings["reasoning_effort"] is NOT_RECORDED


def test_it_takes_a_jobs_fixed_answer_length_as_its_max_tokens():
    config = EngineConfigFactory(max_tokens=256)
    run = succeeded(config, "concurrency", {}, params={"answer_tokens": 128, "levels": [1, 2]})
    settings = run_settings(run, config)
    assert settings["max_tokens"] == 128
    assert "prompt_set" not in settings


def test_it_records_the_prompt_set_a_speed_run_sent():
    # The digest changes with any prompt text.
    assert prompt_set_id(SPEED_PROMPTS) == PROMPT_SET
    assert prompt_set_id(SPEED_PROMPTS[:-1]) != PROMPT_SET
    assert len(PROMPT_SET) == 12
