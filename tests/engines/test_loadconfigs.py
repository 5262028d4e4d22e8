import time

import pytest
from django.core.management import CommandError, call_command

from engines.models import Engine, EngineConfig, Machine
from teams.models import AuditEvent, Team

pytestmark = pytest.mark.django_db

CONTRACT = """
machines: [{name: spark-1, bandwidth_gbps: 273, memory_gb: 121}]
engines:  [{name: sim, machine: spark-1, kind: ollama, url: "http://127.0.0.1:11500"}]
configs:  [{name: sim-default, engine: sim, model: demo, lookahead: 4}]
"""


def load(tmp_path, text):
    path = tmp_path / "configs.yaml"
    path.write_text(text)
    call_command("loadconfigs", str(path))


def test_it_loads_the_contract_file_idempotently(tmp_path):
    load(tmp_path, CONTRACT)
    load(tmp_path, CONTRACT)
    assert Machine.objects.get().bandwidth_gbps == 273
    assert Engine.objects.get().kind == "ollama"
    config = EngineConfig.objects.get()
    assert (config.name, config.lookahead, config.engine.machine.name) == ("sim-default", 4, "spark-1")


def test_it_updates_existing_entries_by_name(tmp_path):
    load(tmp_path, CONTRACT)
    load(tmp_path, CONTRACT.replace("lookahead: 4", "lookahead: 12"))
    assert EngineConfig.objects.get().lookahead == 12


def test_it_records_what_a_load_created_and_changed_as_the_systems(tmp_path):
    load(tmp_path, CONTRACT)
    load(tmp_path, CONTRACT)  # nothing changed: nothing recorded
    load(tmp_path, CONTRACT.replace("lookahead: 4", "lookahead: 12"))
    events = AuditEvent.objects.order_by("id")
    assert [(e.action, e.object_type, e.object_name) for e in events] == [
        ("created", "machine", "spark-1"), ("created", "engine", "sim"),
        ("created", "engineconfig", "sim-default"), ("changed", "engineconfig", "sim-default")]
    assert events.last().detail == {"via": "loadconfigs", "fields": ["lookahead"]}
    assert {(e.actor_name, e.team_name) for e in events} == {("system", Machine.objects.get().team.name)}


def test_it_loads_the_shipped_example_files(settings, monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", "secret-from-env")
    call_command("loadconfigs", str(settings.BASE_DIR / "examples" / "configs.yaml"))
    call_command("loadconfigs", str(settings.BASE_DIR / "examples" / "demo.yaml"))
    assert EngineConfig.objects.filter(engine__simulator=True).count() == 2
    assert Engine.objects.get(name="spark-1-vllm").api_key == "secret-from-env"


def test_it_rejects_an_api_key_variable_that_is_not_set(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(CommandError, match=r"engines\[0\] \(sim\)\.api_key_env: NO_SUCH_KEY is not set"):
        load(tmp_path, CONTRACT.replace('url: "http', 'api_key_env: NO_SUCH_KEY, url: "http'))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("lookahead: 4", "lookahead: 65"), r"configs\[0\] \(sim-default\)\.lookahead"),
        (("kind: ollama", "kind: tgi"), r"engines\[0\] \(sim\)\.kind"),
        (("model: demo", "model: demo, colour: red"), r"configs\[0\]: unknown key 'colour'"),
        (("machine: spark-1", "machine: spark-9"), r"engines\[0\]: no machine named 'spark-9'"),
        (("memory_gb: 121", "memory_gb: -1"), r"machines\[0\] \(spark-1\)\.memory_gb"),
        (("lookahead: 4", "lookahead: 4, thinking: budget"),
         r"configs\[0\] \(sim-default\)\.thinking_budget: thinking 'on, with a token budget' needs a budget"),
        (("lookahead: 4", "lookahead: 4, thinking: budget, thinking_budget: 9"),
         r"configs\[0\] \(sim-default\)\.thinking_budget: .*greater than or equal to 16"),
    ],
)
def test_it_rejects_bad_entries_naming_the_field_and_writes_nothing(tmp_path, change, message):
    with pytest.raises(CommandError, match=message):
        load(tmp_path, CONTRACT.replace(*change))
    assert not Machine.objects.exists()


def test_it_loads_a_configs_thinking(tmp_path):
    load(tmp_path, CONTRACT.replace("lookahead: 4", "lookahead: 4, thinking: budget, thinking_budget: 8192, "
                                    "reasoning_effort: medium"))
    config = EngineConfig.objects.get()
    assert (config.thinking, config.thinking_budget, config.reasoning_effort) == ("budget", 8192, "medium")


def test_it_rejects_text_that_is_not_yaml(tmp_path):
    with pytest.raises(CommandError, match="not valid YAML"):
        load(tmp_path, "machines: [unclosed")


def test_it_refuses_a_yaml_bomb_quickly_and_writes_nothing(tmp_path):
    # "Billion laughs": each level repeats the one before nine times through aliases.
    levels = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    bomb = "\n".join(levels) + "\nmachines: *a9\n"
    started = time.monotonic()
    with pytest.raises(CommandError, match=r"not valid YAML: aliases \(\*name\) are not allowed"):
        load(tmp_path, bomb)
    assert time.monotonic() - started < 1.0
    assert not Machine.objects.exists()


def test_it_refuses_a_file_over_the_size_limit(tmp_path):
    with pytest.raises(CommandError, match="larger than 1000000 bytes"):
        load(tmp_path, CONTRACT + "\n# " + "x" * 1_000_000)
    assert not Machine.objects.exists()


def test_it_puts_a_new_machine_in_the_named_team_or_the_default_one(tmp_path):
    load(tmp_path, CONTRACT)
    assert Machine.objects.get().team.name == "default"
    load(tmp_path, "machines: [{name: spark-1, team: lab, host: x.lan, bandwidth_gbps: 1, memory_gb: 1}]")
    machines = {m.team.name: m for m in Machine.objects.all()}  # names are unique per team: two now
    assert sorted(machines) == ["default", "lab"]
    assert (machines["lab"].host, machines["default"].host) == ("x.lan", "")
    assert machines["lab"].queue_name != machines["default"].queue_name


def test_it_updates_the_one_machine_of_a_name_and_asks_for_the_team_when_two_have_it(tmp_path):
    load(tmp_path, "team: lab\n" + CONTRACT)
    load(tmp_path, CONTRACT.replace("bandwidth_gbps: 273", "bandwidth_gbps: 300"))  # no team: the only one
    assert [(m.team.name, m.bandwidth_gbps) for m in Machine.objects.all()] == [("lab", 300)]
    load(tmp_path, "team: ops\n" + CONTRACT)
    with pytest.raises(CommandError, match=r"machines\[0\]: more than one team has machines named 'spark-1'.*"
                                           "team: NAME"):
        load(tmp_path, CONTRACT.replace("bandwidth_gbps: 273", "bandwidth_gbps: 1"))
    assert not Machine.objects.filter(bandwidth_gbps=1).exists()


def test_it_rejects_an_engine_url_off_its_machine_and_writes_nothing(tmp_path):
    text = CONTRACT.replace("name: spark-1,", "name: spark-1, team: lab,")
    text = text.replace("127.0.0.1", "169.254.169.254")
    with pytest.raises(CommandError, match=r"engines\[0\] \(sim\)\.base_url: the host must be the machine's"):
        load(tmp_path, text)
    assert not Machine.objects.exists()
    assert not Team.objects.exists()


def test_it_sets_an_engines_system_message_merge_and_keeps_it_when_left_out(tmp_path):
    load(tmp_path, CONTRACT.replace('kind: ollama,', 'kind: ollama, merge_system_messages: true,'))
    assert Engine.objects.get().merge_system_messages
    load(tmp_path, CONTRACT)
    assert Engine.objects.get().merge_system_messages


def team_file(team, machine):
    """CONTRACT for one team: its own machine, and an engine and a config with the same names as
    every other team's."""
    return f"team: {team}\n" + CONTRACT.replace("spark-1", machine).replace("name: sim-default", "name: qwen")


def test_it_loads_a_config_of_the_same_name_for_two_teams(tmp_path):
    load(tmp_path, team_file("alpha", "alpha-box"))
    load(tmp_path, team_file("bravo", "bravo-box"))
    load(tmp_path, team_file("alpha", "alpha-box").replace("lookahead: 4", "lookahead: 8"))
    configs = {c.engine.machine.team.name: c for c in EngineConfig.objects.filter(name="qwen")}
    assert sorted(configs) == ["alpha", "bravo"]
    assert (configs["alpha"].lookahead, configs["bravo"].lookahead) == (8, 4)  # upserted in its team only
    assert configs["alpha"].engine.machine.name == "alpha-box"
    assert Engine.objects.filter(name="sim").count() == 2


def test_it_looks_up_names_in_the_files_team_only(tmp_path):
    load(tmp_path, team_file("alpha", "alpha-box"))
    bravo_config = "team: bravo\nconfigs: [{name: qwen, engine: sim, model: demo}]\n"
    with pytest.raises(CommandError, match=r"configs\[0\]: no engine named 'sim'"):
        load(tmp_path, bravo_config)
    assert EngineConfig.objects.count() == 1


def test_it_asks_which_team_when_a_name_is_in_two(tmp_path):
    load(tmp_path, team_file("alpha", "alpha-box"))
    load(tmp_path, team_file("bravo", "bravo-box"))
    asked = r"configs\[0\]: more than one team has engines named 'sim'.*team: NAME"
    with pytest.raises(CommandError, match=asked):
        load(tmp_path, "configs: [{name: new, engine: sim, model: demo}]\n")
    assert not EngineConfig.objects.filter(name="new").exists()
