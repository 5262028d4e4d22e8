import pytest

from engines.forms import EngineConfigForm
from tests.factories import EngineFactory, UserFactory

pytestmark = pytest.mark.django_db


def form_data(engine, **values):
    data = {"name": "qwen3-thinking", "engine": engine.pk, "model": "qwen3-8b", "lookahead": 0,
            "temperature": 0, "seed": 0, "max_tokens": 256}
    return data | values


def test_it_saves_a_configs_thinking_budget():
    engine = EngineFactory()
    data = form_data(engine, thinking="budget", thinking_budget=4096, reasoning_effort="high")
    form = EngineConfigForm(data, user=UserFactory())
    assert form.is_valid(), form.errors
    config = form.save()
    assert (config.thinking, config.thinking_budget, config.reasoning_effort) == ("budget", 4096, "high")


def test_it_leaves_thinking_to_the_engine_when_left_blank():
    form = EngineConfigForm(form_data(EngineFactory()), user=UserFactory())
    assert form.is_valid(), form.errors
    assert form.save().thinks is None


def test_it_shows_a_budget_without_budget_mode_as_an_error_on_its_field():
    data = form_data(EngineFactory(), thinking="on", thinking_budget=512)
    form = EngineConfigForm(data, user=UserFactory())
    assert not form.is_valid()
    assert "thinking is not 'on, with a token budget'" in form.errors["thinking_budget"][0]
