"""The Claims pages: the list and its forms (members add, viewers read), a claim's page, refusals."""

from __future__ import annotations

from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from claims.models import Check, Claim, ClaimedFigure, ClaimSchedule
from runs.worker import dispatch
from teams.models import Role, Team
from teams.roles import set_role
from tests.claims.pages_helpers import CLAIM_YAML, finished_check, make_claim
from tests.factories import EngineConfigFactory, UserFactory

pytestmark = pytest.mark.django_db

RECIPE = """\
recipe_version: "2"
model: google/gemma-3-270m
runtime: llama-cpp
defaults: {}
benchmark: {pp: [128], tg: [16], concurrency: [1, 2]}
"""
TABLE = """\
| concurrency | decode (t/s) | TTFT (ms) |
|---|---|---|
| c1 | 37.3 ± 0.2 | 856 |
| c2 | 30.1 | 1,200 |
"""


@pytest.fixture
def viewer(alpha):
    user = UserFactory(username="alpha_viewer", teams=[alpha.team])
    set_role(user, alpha.team, Role.VIEWER)
    return user


def post_file(client, text, **extra):
    return client.post(reverse("claims:list"), {"way": "file", "file-text": text, **extra})


def test_it_stores_a_pasted_claim_file_for_a_member(client, alpha):
    client.force_login(alpha.owner)
    response = post_file(client, CLAIM_YAML, **{"file-team": alpha.team.pk})
    claim = Claim.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("claims:detail", args=[claim.pk])
    assert claim.team == alpha.team and claim.figures.count() == 3


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (CLAIM_YAML.replace("  figures:\n", "  figurez:\n"), "claim.figures: Field required"),
        (CLAIM_YAML.replace("metric: ttft_ms", "metric: speed"), "claim.figures.2.metric"),
        (CLAIM_YAML.replace("value: 56.0", "value: -3"), "claim.figures.0.value"),
        ("claim: [unclosed", "is not YAML"),
    ],
)
def test_it_refuses_a_malformed_claim_naming_the_field_and_stores_nothing(client, alpha, text, field):
    client.force_login(alpha.owner)
    response = post_file(client, text, **{"file-team": alpha.team.pk})
    assert response.status_code == 400
    assert field in response.content.decode()
    assert not Claim.objects.exists() and not ClaimedFigure.objects.exists()


def test_it_refuses_a_viewer_and_stores_nothing(client, alpha, viewer):
    client.force_login(viewer)
    page = client.get(reverse("claims:list")).content.decode()
    assert 'id="claim-file-form"' not in page and 'data-claims="seeds"' not in page
    assert post_file(client, CLAIM_YAML, **{"file-team": alpha.team.pk}).status_code == 403
    assert not Claim.objects.exists()


def test_it_refuses_a_team_the_user_is_not_a_member_of(client, alpha, bravo):
    client.force_login(alpha.owner)
    response = post_file(client, CLAIM_YAML, **{"file-team": bravo.team.pk})
    assert response.status_code == 400 and not Claim.objects.exists()


def test_it_refuses_oversized_and_hostile_fields(client, alpha):
    client.force_login(alpha.owner)
    big = SimpleUploadedFile("c.yaml", b"#" * (1024 * 1024 + 1))
    response = client.post(
        reverse("claims:list"), {"way": "file", "file-team": alpha.team.pk, "file-file": big}
    )
    assert response.status_code == 400 and "the limit is 1024 KiB" in response.content.decode()
    hostile = CLAIM_YAML.replace("https://example.org/post", "javascript:alert(1)")
    assert "claim.source.url" in post_file(client, hostile, **{"file-team": alpha.team.pk}).content.decode()
    tagged = "claim: !!python/object/apply:os.system ['true']\n"
    assert post_file(client, tagged, **{"file-team": alpha.team.pk}).status_code == 400
    named = CLAIM_YAML.replace("figures:", "recipe: ../../etc/passwd\n  figures:")
    assert "claim.recipe" in post_file(client, named, **{"file-team": alpha.team.pk}).content.decode()
    assert not Claim.objects.exists()


def test_it_reads_a_recipe_with_its_measured_table_into_figures(client, alpha):
    client.force_login(alpha.owner)
    response = client.post(
        reverse("claims:list"),
        {
            "way": "recipe",
            "recipe-team": alpha.team.pk,
            "recipe-title": "Gemma recipe",
            "recipe-recipe_text": RECIPE,
            "recipe-table": TABLE,
            "recipe-runs": 5,
            "recipe-bandwidth_gbps": 273,
        },
    )
    assert response.status_code == 302
    claim = Claim.objects.get()
    figures = {(f.metric, f.concurrency): (f.value, f.spread, f.runs) for f in claim.figures.all()}
    assert figures == {
        ("decode_tps", 1): (37.3, 0.2, 5),
        ("decode_tps", 2): (30.1, None, 5),
        ("ttft_ms", 1): (856.0, None, 5),
        ("ttft_ms", 2): (1200.0, None, 5),
    }
    assert (
        claim.origin == "recipe"
        and claim.engine_kind == "llama-server"
        and claim.concurrency_levels == [1, 2]
    )


def test_it_refuses_a_table_cell_that_is_not_a_number(client, alpha):
    client.force_login(alpha.owner)
    response = client.post(
        reverse("claims:list"),
        {
            "way": "recipe",
            "recipe-team": alpha.team.pk,
            "recipe-title": "x",
            "recipe-recipe_text": RECIPE,
            "recipe-table": TABLE.replace("30.1", "fast"),
        },
    )
    assert response.status_code == 400
    assert "row 2, column decode (t/s): fast is not a number above 0" in response.content.decode()
    assert not Claim.objects.exists()


def test_it_shows_a_claim_with_its_verdicts_diff_and_exports(client, alpha):
    claim = make_claim(alpha.team)
    check = finished_check(claim, verdicts={"decode_tps@2": "inconclusive"})
    check.results.filter(figure__concurrency=2).update(runs_needed=12)
    client.force_login(alpha.owner)
    page = client.get(reverse("claims:detail", args=[claim.pk])).content.decode()
    assert 'data-verdict="reproduced"' in page and "12 runs would narrow the interval" in page
    assert 'id="claim-chart-data"' in page and 'id="check-form"' in page
    assert '<tr data-prov="engine_version" class="differs">' in page  # b11434 claimed, b12000 ran
    assert '<tr data-prov="quantization">' in page  # Q4_K_M both
    assert reverse("claims:report", args=[claim.pk, check.pk, "md"]) in page


def test_it_lists_each_claims_latest_verdicts(client, alpha, viewer):
    claim = make_claim(alpha.team)
    finished_check(claim, verdicts={"ttft_ms@1": "lower"})
    client.force_login(viewer)
    page = client.get(reverse("claims:list")).content.decode()
    assert f'data-claim="{claim.pk}"' in page
    assert "reproduced \u00d7 2" in page and "lower \u00d7 1" in page


def test_it_hides_another_teams_claims(client, alpha, bravo):
    claim = make_claim(bravo.team)
    client.force_login(alpha.owner)
    assert client.get(reverse("claims:detail", args=[claim.pk])).status_code == 404
    assert f'data-claim="{claim.pk}"' not in client.get(reverse("claims:list")).content.decode()


def test_it_starts_a_check_and_a_nightly_schedule_for_a_member_only(client, alpha, viewer, monkeypatch):
    claim = make_claim(alpha.team)
    started = []
    monkeypatch.setattr(
        "claims.actions.start_check",
        lambda *a, **k: started.append((a, k)) or finished_check(claim, config=alpha.config),
    )
    form = {"engine": alpha.engine.pk, "config": alpha.config.pk, "runs": 2, "nightly": "on", "hour": 3}
    client.force_login(viewer)
    assert client.post(reverse("claims:detail", args=[claim.pk]), form).status_code == 403
    assert not started and not ClaimSchedule.objects.exists()
    client.force_login(alpha.owner)
    response = client.post(reverse("claims:detail", args=[claim.pk]), form)
    assert response.status_code == 302 and "?check=" in response["Location"]
    ((args, kwargs),) = started
    assert args == (claim, alpha.engine) and kwargs["repetitions"] == 2 and kwargs["config"] == alpha.config
    schedule = ClaimSchedule.objects.get()
    assert (schedule.engine, schedule.hour, schedule.repetitions) == (alpha.engine, 3, 2)


def test_it_refuses_a_config_of_another_engine(client, alpha):
    claim = make_claim(alpha.team)
    other = EngineConfigFactory(engine__machine=alpha.machine)
    client.force_login(alpha.owner)
    response = client.post(
        reverse("claims:detail", args=[claim.pk]), {"engine": alpha.engine.pk, "config": other.pk, "runs": 3}
    )
    assert (
        response.status_code == 400 and "this config is not of the engine chosen" in response.content.decode()
    )
    assert not Check.objects.exists()


def test_it_refuses_a_check_id_that_is_not_one(client, alpha):
    claim = make_claim(alpha.team)
    client.force_login(alpha.owner)
    assert client.get(reverse("claims:detail", args=[claim.pk]), {"check": "1;drop"}).status_code == 404


def test_it_checks_the_seed_claims_on_the_demos_simulator_labelled_simulator(client, settings):
    """The tour's "Published claims" leads here: each seed claim stored and checked on a simulated
    engine of its kind, or listed with why it cannot be (no worker runs: dispatch is a no-op here)."""
    call_command("demo")
    user = UserFactory(username="seed_member", teams=[Team.default()])
    set_role(user, Team.default(), Role.MEMBER)
    client.force_login(user)
    settings.SPARKDASH_WORKER = "inprocess"
    with mock.patch.object(dispatch, "submit_in_process"):
        page = client.post(reverse("claims:list"), {"way": "seeds"}).content.decode()
    checks = Check.objects.select_related("engine", "claim")
    assert {c.engine.name for c in checks} == {"sim-ollama", "sim-llama"}
    assert all(c.engine.simulator for c in checks) and checks.count() >= 3
    assert Claim.objects.count() >= checks.count()  # the recipe-only seeds are stored, not checked
    assert "no simulated engine of this kind in the demo" in page
    assert "simulator" in page
