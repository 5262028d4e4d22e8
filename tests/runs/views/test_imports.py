"""The import page: a member uploads a result file; a viewer and a hostile file get a clear refusal."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from runs.models import Run
from teams.models import TeamRole
from tests.factories import EngineConfigFactory, UserFactory
from tests.runs.actions.test_imports import encoded, vllm_result

pytestmark = pytest.mark.django_db


def member_of(config, role="member"):
    user = UserFactory()
    TeamRole.objects.create(user=user, team=config.machine.team, role=role)
    return user


def post(client, config, data: bytes, name="vllm.json"):
    return client.post(reverse("runs:import"), {"config": config.pk, "file": SimpleUploadedFile(name, data)})


def test_it_imports_an_uploaded_file_and_links_its_runs(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    page = post(client, config, encoded(vllm_result()))
    run = Run.objects.get()
    assert page.status_code == 200
    assert f'href="{run.get_absolute_url()}"' in page.content.decode()
    assert run.provenance["imported_from"]["by"] == run.created_by.username
    detail = client.get(run.get_absolute_url()).content.decode()
    assert "Imported from vLLM bench serve" in detail and "again-form" not in detail
    assert 'class="badge tool-badge"' in client.get(reverse("runs:list")).content.decode()


def test_it_says_what_it_expected_of_an_unknown_file_and_stores_nothing(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    page = post(client, config, b"name,value\nx,1\n", name="other.csv")
    assert page.status_code == 400
    assert "other.csv is not a result file SparkDash knows: expected" in page.content.decode()
    assert not Run.objects.exists()


def test_it_refuses_a_viewer(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config, role="viewer"))
    page = post(client, config, encoded(vllm_result()))
    assert page.status_code == 400 and "needs the member role" in page.content.decode()
    assert not Run.objects.exists()


def test_it_downloads_an_imported_runs_llmd_report(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    post(client, config, encoded(vllm_result()))
    response = client.get(reverse("runs:llmd", args=[Run.objects.get().pk]))
    assert response.status_code == 200 and response.json()["version"] == "0.2.1"
    assert "attachment" in response["Content-Disposition"]


def test_it_makes_a_config_on_the_engine_chosen_when_no_config_is(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    page = client.post(reverse("runs:import"), {"engine": config.engine.pk,
                                                "file": SimpleUploadedFile("v.json", encoded(vllm_result()))})
    run = Run.objects.get()
    assert page.status_code == 200 and run.config != config and run.config.engine == config.engine
    assert run.config.name == f"vLLM bench serve: {EngineConfigFactory.model}"


def test_it_asks_for_a_config_or_an_engine(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    page = client.post(reverse("runs:import"), {"file": SimpleUploadedFile("v.json", encoded(vllm_result()))})
    assert page.status_code == 400
    assert "choose the config the tool measured, or its engine" in page.content.decode()


def upload(client, config, data: bytes, name="vllm.json", **fields):
    return client.post(reverse("runs:import"),
                       {"config": config.pk, "file": SimpleUploadedFile(name, data), **fields})


def test_it_refuses_a_file_of_another_model_naming_both_and_offers_the_box(client):
    config = EngineConfigFactory(name="sim-like", model="/models/sim-moe-80b-a3b-Q4_K_M.gguf")
    client.force_login(member_of(config))
    page = upload(client, config, encoded(vllm_result(model="google/gemma-3-270m")))
    text = page.content.decode()
    assert page.status_code == 400 and not Run.objects.exists()
    assert ("the file&#x27;s model is google/gemma-3-270m; config sim-like serves "
            "/models/sim-moe-80b-a3b-Q4_K_M.gguf on ") in text
    assert 'name="accept_mismatch"' in text


def test_it_imports_a_mismatched_file_when_the_box_is_ticked_and_labels_the_run(client):
    config = EngineConfigFactory(model="/models/sim-moe-80b-a3b-Q4_K_M.gguf")
    user = member_of(config)
    client.force_login(user)
    page = upload(client, config, encoded(vllm_result(model="gemma-3-270m")), accept_mismatch="on")
    run = Run.objects.get()
    assert page.status_code == 200
    (accepted,) = run.provenance["imported_from"]["accepted_mismatch"]
    assert (accepted["what"], accepted["file"], accepted["config"]) == ("model", "gemma-3-270m", config.model)
    detail = client.get(run.get_absolute_url()).content.decode()
    assert 'id="accepted-mismatch"' in detail and 'data-mismatch="model"' in detail
    assert f"and {user.username} imported it anyway" in detail


@pytest.mark.parametrize("box, says", [
    ("", "does not match the config"), ("false", "false is neither"), ("0", "0 is neither"),
    ("<b>yes</b>", "&lt;b&gt;yes&lt;/b&gt; is neither"), ("x" * 5000, "x" * 40 + " is neither"),
])
def test_it_reads_only_a_ticked_box_as_accepted_and_refuses_a_hostile_value(client, box, says):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    page = upload(client, config, encoded(vllm_result(model="gemma-3-270m")), accept_mismatch=box)
    assert page.status_code == 400 and not Run.objects.exists()
    assert says in page.content.decode()


def test_it_escapes_a_hostile_model_name_in_the_refusal_and_on_the_run_page(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    page = upload(client, config, encoded(vllm_result(model=hostile)))
    assert page.status_code == 400 and "<script>alert(1)" not in page.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.content.decode()
    upload(client, config, encoded(vllm_result(model=hostile)), accept_mismatch="on")
    detail = client.get(Run.objects.get().get_absolute_url()).content.decode()
    assert "<script>alert(1)" not in detail and "onerror=alert(2)>" not in detail


def test_it_refuses_an_impossible_figure_on_the_page_naming_the_level_and_field(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    page = upload(client, config, encoded(vllm_result(ttfts=(-0.005, 0.02, 0.03))), name="neg.json")
    assert page.status_code == 400 and not Run.objects.exists()
    assert "neg.json, level concurrency 1, ttft_s (min): -0.005 is below 0, impossible for TTFT" in (
        page.content.decode())


def test_it_flags_an_accepted_mismatch_in_the_cross_tool_view_and_in_compare(client):
    config = EngineConfigFactory()
    client.force_login(member_of(config))
    upload(client, config, encoded(vllm_result(model="gemma-3-270m")), accept_mismatch="on")
    upload(client, config, encoded(vllm_result(concurrency=4)), name="matching.json")
    odd, fine = Run.objects.order_by("pk")
    tools = client.get(reverse("runs:config-tools", args=[config.pk])).content.decode()
    one, four = tools.split('id="level-1"')[1].split('id="level-4"')
    assert 'class="mismatch" data-mismatch title' in one and "data-mismatch" not in four
    assert f"#{odd.pk}</a>: model: gemma-3-270m ≠ {config.model}" in one
    compare = client.get(reverse("runs:compare") + f"?runs={odd.pk},{fine.pk}").content.decode()
    assert 'class="mismatch" data-mismatch' in compare and f"#{odd.pk}: model: gemma-3-270m" in compare
    plain = client.get(reverse("runs:compare") + f"?runs={fine.pk}").content.decode()
    assert "data-mismatch" not in plain
