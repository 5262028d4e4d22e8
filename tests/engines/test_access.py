import pytest
from django.conf import settings
from django.shortcuts import resolve_url
from django.test import Client

from engines.access import visible
from engines.models import Engine, EngineConfig, Machine
from runs.models import Alert, Run, Sample, Schedule, Sweep, SweepExecution
from tests.access_walk import Endpoint, admin_status, call, logged_in, posts_without_token, url_names, url_of
from tests.factories import EngineConfigFactory, SweepFactory, UserFactory

# Every URL of the engines app; a URL added without a rule here fails the walk.
URLS = {
    "engines:config-create": Endpoint(),
    "engines:config-edit": Endpoint("config"),
    "engines:config-matrix": Endpoint("config"),
    "engines:machine-bandwidth-clear": Endpoint("machine", "POST", 403, admin_status=302),
    "engines:config-archive": Endpoint("config", "POST", 302),
    "engines:engine-create": Endpoint(member_status=403, admin_status=200, lists=False),
    "engines:engine-detail": Endpoint("engine"),
    "engines:engine-edit": Endpoint("engine", member_status=403, admin_status=200),
    "engines:engine-check": Endpoint("engine", "POST", 302),
    "engines:api-connection-check": Endpoint("check", api=True),
    "engines:machine-add": Endpoint("team", member_status=403, admin_status=200),
    "engines:machine-edit": Endpoint("team", member_status=403, admin_status=200,
                                     more=lambda w: {"machine_pk": w.machine.pk}),
}
# The project's own URLs: public on purpose (the admin has its own staff login); the login page
# has the language switcher and the scripts' catalogue too.
PUBLIC = {"login", "logout", "set_language", "javascript-catalog"}
# The account pages: a logged-in user's own password (tests/sparkdash/test_accounts.py).
ACCOUNT = {"password_change", "password_change_done"}
NAMES = url_names("engines")


def rule(name):
    if name not in URLS:
        pytest.fail(f"{name} has no access rule: add it to URLS in {__name__}")
    return URLS[name]


def test_it_has_a_rule_for_every_url():
    assert set(NAMES) == set(URLS)
    assert set(url_names("")) == PUBLIC | ACCOUNT


@pytest.mark.parametrize("name", sorted(ACCOUNT))
def test_it_sends_anonymous_users_from_the_account_pages_to_the_login_page(name):
    response = Client().get(resolve_url(name))
    assert response.status_code == 302
    assert response["Location"].startswith(resolve_url(settings.LOGIN_URL) + "?next=")


@pytest.mark.parametrize("name", NAMES)
def test_it_sends_anonymous_users_to_the_login_page(name, alpha):
    response = call(Client(), name, rule(name), alpha)
    if rule(name).api:
        assert response.status_code == 401
        assert response.json() == {"error": "login required"}
        return
    assert response.status_code == 302
    assert response["Location"].startswith(resolve_url(settings.LOGIN_URL) + "?next=")


@pytest.mark.parametrize("role", ["owner", "teammate"])
@pytest.mark.parametrize("name", NAMES)
def test_it_serves_the_owner_and_a_teammate(name, role, alpha, bravo):
    endpoint = rule(name)
    response = call(logged_in(getattr(alpha, role)), name, endpoint, alpha)
    assert response.status_code == endpoint.member_status
    assert posts_without_token(response) <= 0
    if endpoint.target is None and endpoint.method == "GET" and endpoint.lists:
        assert b"alpha-" in response.content
        assert b"bravo-" not in response.content


@pytest.mark.parametrize("name", NAMES)
def test_it_hides_another_teams_objects_from_an_outsider(name, alpha, bravo):
    endpoint = rule(name)
    response = call(logged_in(bravo.owner), name, endpoint, alpha)
    if endpoint.target is not None:
        assert response.status_code == 404
    elif endpoint.lists:
        assert response.status_code == 200
        assert b"bravo-" in response.content
        assert b"alpha-" not in response.content


@pytest.mark.parametrize("name", NAMES)
def test_it_shows_a_superuser_everything(name, alpha, bravo):
    admin = UserFactory(username="root", is_superuser=True, is_staff=True, teams=[])
    response = call(logged_in(admin), name, rule(name), alpha)
    assert response.status_code == admin_status(rule(name))
    if rule(name).target is None and rule(name).lists:
        assert b"alpha-" in response.content and b"bravo-" in response.content


@pytest.mark.parametrize("name", [*NAMES, *sorted(PUBLIC), "password_change"])
def test_it_refuses_a_post_without_the_csrf_token(name, alpha):
    client = logged_in(alpha.owner, enforce_csrf_checks=True)
    endpoint = URLS.get(name, Endpoint())
    response = client.post(url_of(name, endpoint, alpha))
    assert response.status_code == 403


def test_it_keeps_the_admin_for_staff(alpha):
    response = logged_in(alpha.owner).get("/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_it_hides_another_teams_scorecard_export(alpha, bravo):
    url = url_of("runs:config-detail", Endpoint("config"), alpha, "?format=csv")
    assert logged_in(alpha.teammate).get(url).status_code == 200
    assert logged_in(bravo.owner).get(url).status_code == 404


def test_it_refuses_a_config_on_another_teams_engine(alpha, bravo):
    data = {"name": "stolen", "engine": alpha.engine.pk, "model": "m", "lookahead": 0, "temperature": 0,
            "seed": 0, "max_tokens": 16}
    client = logged_in(bravo.owner)
    response = client.post(url_of("engines:config-create", URLS["engines:config-create"], bravo), data)
    assert response.status_code == 400
    assert "engine" in response.context["form"].errors
    assert not EngineConfig.objects.filter(name="stolen").exists()
    ok = client.post(url_of("engines:config-create", URLS["engines:config-create"], bravo),
                     data | {"engine": bravo.engine.pk})
    assert ok.status_code == 302
    assert EngineConfig.objects.get(name="stolen").engine == bravo.engine


def test_it_refuses_moving_a_config_to_another_teams_engine(alpha, bravo):
    form = {"name": bravo.config.name, "engine": alpha.engine.pk, "model": "m", "lookahead": 0,
            "temperature": 0, "seed": 0, "max_tokens": 16}
    url = url_of("engines:config-edit", URLS["engines:config-edit"], bravo)
    response = logged_in(bravo.owner).post(url, form)
    assert response.status_code == 400
    bravo.config.refresh_from_db()
    assert bravo.config.engine == bravo.engine


MODELS = [Machine, Engine, EngineConfig, Run, Sample, Sweep, SweepExecution, Schedule, Alert]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_it_scopes_every_model_to_the_users_teams(model, alpha, bravo):
    mine = set(visible(alpha.teammate, model).values_list("pk", flat=True))
    theirs = set(visible(bravo.owner, model).values_list("pk", flat=True))
    assert mine and theirs
    assert not mine & theirs
    admin = UserFactory(username="root", is_superuser=True, teams=[])
    assert set(visible(admin, model).values_list("pk", flat=True)) == mine | theirs
    assert not visible(UserFactory(username="loner", teams=[]), model).exists()


def test_it_hides_a_sweep_that_mixes_in_another_teams_config(alpha, bravo):
    mixed = SweepFactory(name="mixed", configs=[alpha.config, bravo.config])
    assert mixed not in visible(alpha.owner, Sweep)
    assert mixed not in visible(bravo.owner, Sweep)
    both = UserFactory(username="both", teams=[alpha.team, bravo.team])
    assert mixed in visible(both, Sweep)
    assert SweepFactory(name="empty", configs=[]) in visible(bravo.owner, Sweep)


def test_it_shows_a_teams_new_config_to_the_whole_team_only(alpha, bravo):
    config = EngineConfigFactory(engine=alpha.engine, name="alpha-new")
    assert config in visible(alpha.teammate, EngineConfig)
    assert config not in visible(bravo.teammate, EngineConfig)
