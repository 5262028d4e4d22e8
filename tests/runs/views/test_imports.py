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
