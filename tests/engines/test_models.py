import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from engines.models import Engine, EngineConfig
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, TeamFactory

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


# --- Names are unique per team, not across teams ------------------------------------------------


def config_form(engine, name="qwen", **values):
    data = {"name": name, "engine": engine.pk, "model": "qwen3-8b", "lookahead": 0, "temperature": 0,
            "seed": 0, "max_tokens": 256}
    return data | values


def post_config(user, engine, name="qwen"):
    client = Client()
    client.force_login(user)
    return client.post(reverse("engines:config-create"), config_form(engine, name))


def test_it_saves_a_config_of_the_same_name_in_two_teams_through_the_form(alpha, bravo):
    for world in (alpha, bravo):
        response = post_config(world.teammate, world.engine)
        assert response.status_code == 302, response.content.decode()[:2000]
    saved = EngineConfig.objects.filter(name="qwen")
    assert sorted(c.engine.machine.team.name for c in saved) == ["alpha-team", "bravo-team"]


def test_it_refuses_a_name_taken_in_the_own_team_without_a_word_of_other_teams(alpha, bravo):
    response = post_config(bravo.teammate, bravo.engine, name=alpha.config.name)  # alpha's name: fine
    assert response.status_code == 302
    taken = post_config(bravo.teammate, bravo.engine, name=alpha.config.name)  # now bravo's own
    html = taken.content.decode()
    assert taken.status_code == 400
    assert f"a config named {alpha.config.name} already exists in team bravo-team" in html
    assert "alpha-team" not in html and "alpha-box" not in html
    assert EngineConfig.objects.filter(name=alpha.config.name).count() == 2  # nothing more written


def test_it_keeps_engine_names_unique_per_team():
    team_a, team_b = TeamFactory(name="a"), TeamFactory(name="b")
    EngineFactory(name="llama", machine=MachineFactory(team=team_a))
    EngineFactory.build(name="llama", machine=MachineFactory(team=team_b)).full_clean()
    with pytest.raises(ValidationError, match="an engine named llama already exists in team a"):
        EngineFactory.build(name="llama", machine=MachineFactory(team=team_a)).full_clean()


# --- Machine names are unique per team; each machine has a queue of its own ------------------------


def test_it_gives_machines_of_one_name_in_two_teams_queues_of_their_own():
    default = MachineFactory(name="spark-1")
    # Team names that slugify alike must not merge queues either.
    others = [MachineFactory(name="spark-1", team=TeamFactory(name=name)) for name in ("Team A", "team-a")]
    queues = [m.queue_name for m in (default, *others)]
    assert queues[0] == "machine.spark-1"  # the default team keeps the queue of older installs
    assert queues[1:] == [f"machine.team-{m.team_id}.spark-1" for m in others]
    assert len(set(queues)) == 3


def test_it_refuses_a_machine_name_or_queue_taken_in_the_own_team_only():
    team_a, team_b = TeamFactory(name="a"), TeamFactory(name="b")
    MachineFactory(name="Spark 1", team=team_a)
    MachineFactory.build(name="Spark 1", team=team_b).full_clean()
    with pytest.raises(ValidationError, match="a machine named Spark 1 already exists in team a"):
        MachineFactory.build(name="Spark 1", team=team_a).full_clean()
    shared = r"spark-1 would share the worker queue machine.team-\d+.spark-1 with machine Spark 1 of team a"
    with pytest.raises(ValidationError, match=shared):
        MachineFactory.build(name="spark-1", team=team_a).full_clean()
