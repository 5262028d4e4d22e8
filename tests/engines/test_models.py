import pytest
from django.core.exceptions import ValidationError

from engines.models import Engine
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory

pytestmark = pytest.mark.django_db


def engine_on(host, url, launch=Engine.Launch.EXTERNAL):
    return EngineFactory.build(machine=MachineFactory(host=host), base_url=url, launch=launch)


@pytest.mark.parametrize(
    ("host", "url"),
    [("", "http://127.0.0.1:8080"), ("", "http://localhost:11434/"), ("", "http://[::1]:8000"),
     ("spark-1.lan", "http://spark-1.lan:8080"), ("spark-1.lan", "http://SPARK-1.lan:8080"),
     ("10.0.0.7", "http://10.0.0.7:8000"), ("spark-1.lan", "http://127.0.0.1:8080")],
)
def test_it_accepts_an_engine_on_its_machines_host_or_loopback(host, url):
    engine_on(host, url).full_clean()


@pytest.mark.parametrize(
    ("host", "url"),
    [("", "http://spark-1.lan:8080"), ("spark-1.lan", "http://spark-2.lan:8080"),
     ("spark-1.lan", "http://169.254.169.254/latest/meta-data"), ("10.0.0.7", "http://10.0.0.8:8000")],
)
def test_it_rejects_an_engine_url_off_its_machine(host, url):
    with pytest.raises(ValidationError) as raised:
        engine_on(host, url).full_clean()
    assert "base_url" in raised.value.message_dict
    assert "the host must be the machine's" in raised.value.message_dict["base_url"][0]


def test_it_rejects_a_managed_engine_off_its_machine():
    with pytest.raises(ValidationError):
        engine_on("spark-1.lan", "http://example.org:8080", Engine.Launch.MANAGED).full_clean()


def config_with(**thinking):
    return EngineConfigFactory.build(engine=EngineFactory(), **thinking)


@pytest.mark.parametrize(
    ("thinking", "expected"),
    [({}, None), ({"thinking": "off"}, False), ({"thinking": "on"}, True),
     ({"thinking": "budget", "thinking_budget": 4096}, True)],
)
def test_it_asks_every_request_for_the_configs_thinking(thinking, expected):
    config = config_with(**thinking)
    config.full_clean()
    assert config.thinks is expected
    assert config.sampling().get("thinking") is expected


def test_it_sends_the_reasoning_effort_with_the_sampling():
    config = config_with(thinking="on", reasoning_effort="high")
    config.full_clean()
    assert config.sampling()["reasoning_effort"] == "high"
    assert "reasoning_effort" not in config_with().sampling()


@pytest.mark.parametrize(
    ("thinking", "field", "message"),
    [({"thinking": "budget"}, "thinking_budget", "needs a budget (16-131072 tokens)"),
     ({"thinking": "on", "thinking_budget": 512}, "thinking_budget",
      "thinking is not 'on, with a token budget'"),
     ({"thinking": "budget", "thinking_budget": 8}, "thinking_budget", "greater than or equal to 16"),
     ({"thinking": "budget", "thinking_budget": 200_000}, "thinking_budget", "less than or equal to 131072"),
     ({"thinking": "off", "reasoning_effort": "low"}, "reasoning_effort", "set, but thinking is off"),
     ({"thinking": "maybe"}, "thinking", "not a valid choice")],
)
def test_it_refuses_thinking_settings_that_do_not_fit(thinking, field, message):
    with pytest.raises(ValidationError) as raised:
        config_with(**thinking).full_clean()
    assert message in " ".join(raised.value.message_dict[field])
