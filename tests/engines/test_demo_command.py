from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.management import CommandError, call_command

from engines.access import visible
from engines.management.commands.demo import demo_log_path
from engines.models import Engine, EngineConfig, Machine
from engines.recipes import render_config
from engines.simulator import SimProfile
from runs.management.commands.serve import external_simulator_config
from runs.worker.engine_session import simulator_flags, simulator_recipe
from runs.worker.provenance import roofline_for
from teams.models import DEFAULT_TEAM
from tests.factories import EngineConfigFactory, MachineFactory, RunFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_it_puts_the_demo_user_and_machine_in_the_default_team(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "demo")
    call_command("demo")
    user = get_user_model().objects.get(username="demo")
    machine = Machine.objects.get(name="demo-box")
    assert machine.team.name == DEFAULT_TEAM
    assert list(user.teams.values_list("name", flat=True)) == [DEFAULT_TEAM]
    teammate = UserFactory(username="guest")  # a user of the default team, not a superuser
    demo_configs = EngineConfig.objects.filter(engine__machine__name__in=["demo-box", "demo-box-2"])
    assert visible(teammate, EngineConfig).filter(pk__in=demo_configs).count() == 2


def test_it_refuses_a_demo_password_that_breaks_the_password_rules(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "demo")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "password")
    with pytest.raises(CommandError, match=r"DJANGO_SUPERUSER_PASSWORD refused: .*too short.*too common"):
        call_command("demo")
    assert not get_user_model().objects.filter(username="demo").exists()


def test_it_creates_the_demo_login_with_a_password_the_rules_accept(monkeypatch):
    monkeypatch.delenv("DJANGO_SUPERUSER_PASSWORD", raising=False)
    out = StringIO()
    call_command("demo", stdout=out)
    password = out.getvalue().split("with password ")[1].split("'")[1]
    validate_password(password)
    assert get_user_model().objects.get(username="admin").check_password(password)


def test_it_adds_an_existing_superuser_to_the_default_team():
    root = UserFactory(username="root", is_superuser=True, teams=[])
    call_command("demo")
    assert list(root.teams.values_list("name", flat=True)) == [DEFAULT_TEAM]


def profile_of(flags):
    """The SimProfile simengine would serve for these flags (only the sizing ones)."""
    names = {"--lookahead": ("lookahead", int), "--bandwidth-gbps": ("bandwidth_gbps", float),
             "--model-gb": ("model_gb", float), "--efficiency": ("efficiency", float),
             "--prefill-tps": ("prefill_tps", float), "--cache-tokens": ("cache_tokens", int)}
    pairs = dict(zip(flags[::2], flags[1::2], strict=True))
    return SimProfile(**{names[f][0]: names[f][1](v) for f, v in pairs.items()})


def test_it_loads_the_demo_machines_engines_and_configs_by_the_names_the_tour_uses():
    call_command("demo")
    call_command("demo")  # idempotent
    machines = sorted(Machine.objects.values_list("name", "bandwidth_gbps"))
    assert machines == [("demo-box", 273), ("demo-box-2", 273)]
    llama, ollama = Engine.objects.get(name="sim-llama"), Engine.objects.get(name="sim-ollama")
    assert (llama.kind, llama.managed, llama.machine.name) == ("llama-server", True, "demo-box")
    assert (ollama.kind, ollama.managed, ollama.machine.name) == ("ollama", False, "demo-box-2")
    assert ollama.log_path == str(demo_log_path())
    names = dict(EngineConfig.objects.values_list("name", "engine__name"))
    assert names == {"sim-moe-mtp8": "sim-llama", "sim-27b-q8-la12": "sim-ollama"}


def test_it_renders_a_valid_launch_recipe_for_every_demo_config():
    call_command("demo")
    for config in EngineConfig.objects.all():
        recipe, error = render_config(config)
        assert recipe is not None and error == "", f"{config.name}: {error}"
    moe = EngineConfig.objects.get(name="sim-moe-mtp8")
    assert "--spec-draft-n-max" in render_config(moe)[0].argv


@pytest.mark.parametrize(
    ("name", "ceiling", "decode"), [("sim-moe-mtp8", 47.07, 39.07), ("sim-27b-q8-la12", 9.545, 7.92)]
)
def test_it_sizes_each_demo_simulator_by_its_roofline(name, ceiling, decode):
    call_command("demo")
    config = EngineConfig.objects.select_related("engine__machine").get(name=name)
    profile = profile_of(simulator_flags(config, config.lookahead))
    assert profile.decode_tps == pytest.approx(decode, abs=0.01)
    assert profile.lookahead == config.lookahead
    shown = roofline_for(config, profile.decode_tps)
    assert shown["ceiling_tps"] == pytest.approx(ceiling, abs=0.01)
    assert shown["efficiency"] == pytest.approx(0.83)


def test_it_gives_the_managed_demo_a_prompt_cache_smaller_than_the_prefix_cache_probe():
    call_command("demo")
    config = EngineConfig.objects.select_related("engine__machine").get(name="sim-moe-mtp8")
    profile = profile_of(simulator_flags(config, 8))
    # The probe's default conversation: 30 steps x 6000 bytes = 45,000 of the simulator's tokens.
    assert profile.cache_tokens is not None and 1_000 < profile.cache_tokens < 45_000
    argv = simulator_recipe(settings_of(config), config).argv
    assert argv[argv.index("--port") + 1] == "11501"


def settings_of(config):
    from engines.recipes import settings_from_config

    return settings_from_config(config)


def test_it_sizes_the_served_simulator_as_the_external_demo_engine():
    call_command("demo")
    config = external_simulator_config(11500)
    assert config is not None and config.name == "sim-27b-q8-la12"
    assert external_simulator_config(11999) is None


def test_it_removes_the_older_demos_unused_configs_and_keeps_used_ones_valid():
    call_command("demo")
    old_engine = Engine.objects.get(name="sim-llama")
    used = EngineConfigFactory(name="sim-lookahead-4", engine=old_engine, speculative_method="draft-simple",
                               lookahead=4)
    RunFactory(config=used)
    EngineConfigFactory(name="sim-ollama", engine=Engine.objects.get(name="sim-ollama"))
    call_command("demo")
    assert not EngineConfig.objects.filter(name="sim-ollama").exists()
    used.refresh_from_db()
    assert used.speculative_method == "draft-mtp" and "older demo" in used.notes
    assert render_config(used)[1] == ""


def test_it_loads_into_the_default_team_beside_another_teams_demo_box():
    lab = MachineFactory(name="demo-box", team=TeamFactory(name="lab"), notes="lab's own")
    call_command("demo", stdout=StringIO())
    lab.refresh_from_db()
    assert lab.notes == "lab's own" and not lab.engines.exists()
    assert Machine.objects.get(name="demo-box", team__name="default").engines.exists()
