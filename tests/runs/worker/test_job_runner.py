import pytest

from runs.worker.job_runner import job_config
from tests.factories import EngineConfigFactory, RunFactory

pytestmark = pytest.mark.django_db


def test_it_hands_the_job_the_configs_thinking_and_its_budget():
    config = EngineConfigFactory(thinking="budget", thinking_budget=4096, reasoning_effort="high")
    job = job_config(RunFactory(config=config))
    assert (job.sampling["thinking"], job.sampling["reasoning_effort"]) == (True, "high")
    assert job.thinking_budget == 4096 and job.answer_budget(2048) == 6144


def test_it_takes_the_answer_budget_of_thinking_without_a_budget_from_the_settings(settings):
    settings.SPARKDASH_THINKING_ANSWER_BUDGET = 24_576
    job = job_config(RunFactory(config=EngineConfigFactory(thinking="on")))
    assert job.thinking_budget is None and job.answer_budget(2048) == 24_576


def test_it_leaves_the_answer_budget_alone_when_thinking_is_off():
    job = job_config(RunFactory(config=EngineConfigFactory(thinking="off")))
    assert job.sampling["thinking"] is False and job.answer_budget(2048) == 2048
