"""Revisions on the pages: a run keeps its settings, run again repeats them, clone and change
starts from them, and the config's page shows each revision's scorecard and what changed."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from engines.models import EngineConfig
from runs.models import Run
from tests.engines.test_views import _form_data
from tests.factories import EngineConfigFactory, RunFactory
from tests.runs.actions.test_alerts import speed_summary

pytestmark = pytest.mark.django_db


@pytest.fixture
def edited(alice_client) -> tuple[EngineConfig, Run, Run]:
    """A config that ran with lookahead 4, was edited through its form to 8, and ran again."""
    config = EngineConfigFactory(lookahead=4, engine__simulator=True)
    first = RunFactory(config=config, status=Run.Status.SUCCEEDED, summary=speed_summary(100.0),
                       params={"reps": 1, "warmup": 0})
    edit_url = reverse("engines:config-edit", args=[config.pk])
    edit = alice_client.post(edit_url, _form_data(config, lookahead=8))
    assert edit.status_code == 302
    second = RunFactory(config=config, status=Run.Status.SUCCEEDED, summary=speed_summary(50.0))
    return config, first, second


def test_it_shows_an_old_run_with_its_own_settings_and_what_changed_since(alice_client, edited):
    _, first, second = edited
    page = alice_client.get(first.get_absolute_url()).content.decode()
    assert "revision <a" in page and ">r1</a>" in page
    assert re.search(r'(&quot;|")lookahead(&quot;|"): 4,', page)  # the config snapshot, before any provenance
    changed = page[page.index('id="run-changed-since"'):]
    assert "lookahead</strong>: 4 → 8" in changed[:800]
    assert 'id="run-changed-since"' not in alice_client.get(second.get_absolute_url()).content.decode()


def test_it_shows_two_revisions_with_their_scorecards_and_the_diff(alice_client, edited):
    config, _, _ = edited
    page = alice_client.get(config.get_absolute_url()).content.decode()
    assert re.findall(r'<section class="revision-scorecard" data-revision="(\d+)"', page) == ["2", "1"]
    r2 = page[page.index('data-revision="2"'):page.index('data-revision="1"')]
    assert "lookahead</strong>: 4 → 8" in r2 and "50.0" in r2 and "100.0" not in r2
    history = page[page.index('id="revisions"'):]
    assert re.findall(r'<tr data-revision="(\d+)">', history) == ["2", "1"]
    assert "first revision" in history


def test_it_runs_a_run_again_with_its_revision(alice_client, edited):
    _, first, _ = edited
    response = alice_client.post(reverse("runs:again", args=[first.pk]))
    again = Run.objects.latest("pk")
    assert response.status_code == 302 and response.url == again.get_absolute_url()
    assert (again.revision_id, again.job, again.params) == (first.revision_id, first.job, first.params)
    assert again.revision.settings["lookahead"] == 4


def test_it_refuses_run_again_to_a_viewer(edited, bravo):
    _, first, _ = edited
    client = Client()
    client.force_login(bravo.owner)
    assert client.post(reverse("runs:again", args=[first.pk])).status_code == 404


def test_it_clones_a_runs_revision_and_saves_a_new_config_with_one_change(alice_client, edited):
    config, _, _ = edited
    url = f"{reverse('engines:config-create')}?from={config.pk}&revision=1"
    form = alice_client.get(url)
    assert form.status_code == 200
    html = form.content.decode()
    lookahead = re.search(r'<input[^>]*name="lookahead"[^>]*>', html)
    assert lookahead is not None
    assert 'data-source="4"' in lookahead.group() and 'value="4"' in lookahead.group()
    assert f"{config.name} (copy)" in html
    posted = alice_client.post(url, _form_data(config, name="tried-6", lookahead=6))
    assert posted.status_code == 302
    clone = EngineConfig.objects.get(name="tried-6")
    assert (clone.lookahead, clone.engine_id, clone.model) == (6, config.engine_id, config.model)
    assert [r.number for r in clone.revisions.all()] == [1]
    config.refresh_from_db()
    assert config.lookahead == 8


def test_it_groups_the_recent_runs_under_the_revision_each_ran_with(alice_client, edited):
    config, first, second = edited
    alice_client.post(reverse("runs:again", args=[first.pk]))  # the newest run, of the older revision
    again = Run.objects.latest("pk")
    page = alice_client.get(config.get_absolute_url()).content.decode()
    recent = page[page.index("Recent runs"):]
    assert re.findall(r'<section class="revision-runs" data-revision="(\d+)"', recent) == ["2", "1"]
    r2, r1 = recent.split('<section class="revision-runs" data-revision="1"')
    runs_of = lambda part: re.findall(r'href="/runs/(\d+)/">#', part)  # noqa: E731
    assert runs_of(r2) == [str(second.pk)]
    assert runs_of(r1) == [str(again.pk), str(first.pk)]
    assert "lookahead</strong>: 4 → 8" in r2 and "Revision r1" in r1
