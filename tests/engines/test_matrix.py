"""The config matrix (engines/matrix.py): combinations of a base config's axes, named predictably."""
from __future__ import annotations

import pytest

from engines import matrix
from engines.matrix import Axes, ModelFile
from engines.models import EngineConfig
from engines.recipes import render_config
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, TeamFactory

pytestmark = pytest.mark.django_db

QUANTS = [ModelFile("Q4_K_M", "/models/qwen3-Q4_K_M.gguf"), ModelFile("Q8_0", "/models/qwen3-Q8_0.gguf")]


@pytest.fixture
def base() -> EngineConfig:
    engine = EngineFactory(name="llama", kind="llama-server")
    return EngineConfigFactory(engine=engine, name="qwen3", speculative_method="draft-mtp", lookahead=4,
                               temperature=0.3, max_tokens=512, notes="the field report's base")


@pytest.fixture
def ollama(base):
    return EngineFactory(name="Ollama Box", kind="ollama", machine=base.engine.machine)


def test_it_makes_one_config_per_combination_of_two_engines_lookaheads_and_quantizations(base, ollama):
    axes = Axes(lookaheads=[4, 8], model_files=QUANTS, engines=[base.engine, ollama])
    plan = matrix.plan(base, axes)
    assert [c.name for c in plan] == [
        "qwen3-la4-q4_k_m-llama", "qwen3-la4-q4_k_m-ollama-box", "qwen3-la4-q8_0-llama",
        "qwen3-la4-q8_0-ollama-box", "qwen3-la8-q4_k_m-llama", "qwen3-la8-q4_k_m-ollama-box",
        "qwen3-la8-q8_0-llama", "qwen3-la8-q8_0-ollama-box",
    ]
    assert {c.state for c in plan} == {"new"} and not EngineConfig.objects.exclude(pk=base.pk).exists()
    made = matrix.create(plan)
    assert len(made) == 8 and EngineConfig.objects.count() == 9
    eight = EngineConfig.objects.get(name="qwen3-la8-q8_0-ollama-box")
    assert (eight.engine, eight.lookahead, eight.quantization, eight.model) == (
        ollama, 8, "Q8_0", "/models/qwen3-Q8_0.gguf")
    assert (eight.speculative_method, eight.temperature, eight.max_tokens, eight.notes) == (
        "draft-mtp", 0.3, 512, "the field report's base")
    assert all(render_config(config)[0] is not None for config in made)
    assert EngineConfig.objects.get(pk=base.pk).name == "qwen3"


def test_it_skips_names_that_already_exist(base):
    taken = EngineConfigFactory(name="qwen3-la8", lookahead=2)
    plan = matrix.plan(base, Axes(lookaheads=[0, 8]))
    assert [(c.name, c.state) for c in plan] == [("qwen3-la0", "new"), ("qwen3-la8", "exists")]
    assert plan[1].existing == taken and "exists" in plan[1].reason
    matrix.create(plan)
    taken.refresh_from_db()
    assert taken.lookahead == 2 and EngineConfig.objects.filter(name="qwen3-la0").exists()


def test_it_makes_a_name_that_only_another_team_has(base):
    elsewhere = EngineFactory(machine=MachineFactory(team=TeamFactory(name="other")))
    EngineConfigFactory(name="qwen3-la8", engine=elsewhere)
    plan = matrix.plan(base, Axes(lookaheads=[8]))
    assert [(c.name, c.state, c.existing) for c in plan] == [("qwen3-la8", "new", None)]
    matrix.create(plan)
    assert EngineConfig.objects.filter(name="qwen3-la8").count() == 2


def test_it_refuses_a_combination_with_no_launch_recipe(base, ollama):
    plan = matrix.plan(base, Axes(methods=["draft-mtp", "ngram"], engines=[ollama]))
    states = {c.name: (c.state, c.reason) for c in plan}
    assert states["qwen3-draft-mtp-ollama-box"] == ("new", "")
    state, reason = states["qwen3-ngram-ollama-box"]
    assert state == "refused"
    # The config's own check says it first (an external engine's method must be one its kind has).
    assert reason.startswith("Speculative method: 'ngram' means nothing to Ollama")
    made = matrix.create(plan)
    assert [c.name for c in made] == ["qwen3-draft-mtp-ollama-box"]


def test_it_refuses_a_combination_the_config_form_would_refuse(base):
    plan = matrix.plan(base, Axes(lookaheads=[65], methods=["none"]))
    assert plan[0].name == "qwen3-la65-none" and plan[0].state == "refused"
    assert plan[0].reason.startswith("Lookahead: Ensure this value is less than or equal to 64")


def test_it_turns_speculative_decoding_off_for_the_method_none(base):
    (combination,) = matrix.plan(base, Axes(methods=["none"]))
    assert combination.config.speculative_method == "" and combination.name == "qwen3-none"


def test_it_refuses_two_combinations_of_one_name(base):
    same = [ModelFile("Q4 K M", "/a.gguf"), ModelFile("q4-k-m", "/b.gguf")]
    plan = matrix.plan(base, Axes(model_files=same))
    assert [(c.name, c.state) for c in plan] == [("qwen3-q4-k-m", "refused")] * 2
    assert "same name" in plan[0].reason


def test_it_refuses_no_axis_and_too_many_combinations(base):
    with pytest.raises(ValueError, match="choose at least one lookahead"):
        matrix.plan(base, Axes())
    with pytest.raises(ValueError, match="65 combinations; the most one matrix makes is 64"):
        matrix.plan(base, Axes(lookaheads=list(range(65))))


def test_it_reuses_a_config_whose_settings_a_combination_has_under_another_name(base):
    no_draft = EngineConfigFactory(engine=base.engine, name="plain", speculative_method="", lookahead=0,
                                   model=base.model, quantization=base.quantization, temperature=0.3,
                                   max_tokens=512)
    plan = matrix.plan(base, Axes(lookaheads=[0, 4]))
    assert [(c.name, c.state) for c in plan] == [("qwen3-la0", "new"), ("qwen3-la4", "exists")]
    assert plan[1].existing == base and "qwen3 has these settings already" in plan[1].reason
    (off,) = matrix.plan(base, Axes(lookaheads=[0], methods=[matrix.NO_METHOD]))
    assert (off.name, off.state, off.existing) == ("qwen3-la0-none", "exists", no_draft)
