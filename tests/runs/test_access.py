import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.shortcuts import resolve_url
from django.test import Client

from runs.models import MetricsToken, Schedule, Sweep
from runs.routing import websocket_urlpatterns
from sparkdash.asgi import application
from tests.access_walk import Endpoint, admin_status, call, logged_in, posts_without_token, url_names, url_of
from tests.factories import UserFactory, team_world
from traffic.models import RelayToken

# Every URL of the runs app; a URL added without a rule here fails the walk.
URLS = {
    "runs:home": Endpoint(),
    "runs:config-list": Endpoint(),
    "runs:config-detail": Endpoint("config"),
    "runs:config-start-run": Endpoint("config", "POST", 302),
    "runs:list": Endpoint(),
    "runs:results": Endpoint(),
    "runs:import": Endpoint(),
    "runs:config-tools": Endpoint("config"),
    "runs:llmd": Endpoint("run"),
    "runs:detail": Endpoint("run"),
    "runs:cancel": Endpoint("run", "POST", 302),
    "runs:again": Endpoint("run", "POST", 302),
    "runs:log": Endpoint("run"),
    "runs:api-run": Endpoint("run", api=True),
    "runs:api-samples": Endpoint("run", api=True),
    "runs:tour": Endpoint(lists=False),
    "runs:compare": Endpoint(),
    "runs:compare-configs": Endpoint(),
    "runs:metrics": Endpoint(scrape=True),
    "runs:metrics-tokens": Endpoint("team", member_status=403, admin_status=200),
    "runs:metrics-token-revoke": Endpoint("team", "POST", 403, admin_status=302, more=lambda w: {
        "token_pk": MetricsToken.issue(MetricsToken.PREFIX, team=w.team, name="walk")[0].pk}),
    "runs:sweep-list": Endpoint(),
    "runs:sweep-new": Endpoint(),
    "runs:sweep-detail": Endpoint("sweep"),
    "runs:sweep-edit": Endpoint("sweep"),
    "runs:sweep-start": Endpoint("sweep", "POST", 302),
    "runs:sweep-run": Endpoint("execution"),
    "runs:api-sweep-run": Endpoint("execution", api=True),
    "runs:schedule-list": Endpoint(),
    "runs:schedule-create": Endpoint(),
    "runs:schedule-edit": Endpoint("schedule"),
    "runs:schedule-delete": Endpoint("schedule"),
    "runs:alert-list": Endpoint(),
    "runs:alert-resolve": Endpoint("alert", "POST", 302),
    # A machine's real traffic (the traffic app: another app's URLs, the same access rules).
    "traffic:page": Endpoint("machine"),
    "traffic:records": Endpoint("machine", api=True),
    # Team admins only (teams.roles): a member gets 403.
    "traffic:capture": Endpoint("machine", "POST", 403, admin_status=302),
    "traffic:tokens": Endpoint("machine", member_status=403, admin_status=200),
    "traffic:revoke_token": Endpoint("machine", "POST", 403, admin_status=302, more=lambda w: {
        "token_pk": RelayToken.issue_for(w.machine, "walk")[0].pk}),
    "traffic:conversations": Endpoint("machine"),
    "traffic:conversation": Endpoint("machine", more=lambda world: {"key": world.traffic.conversation}),
    # Posted without a config: the form's error, on the conversation's page.
    "traffic:replay": Endpoint("machine", "POST", 400, more=lambda w: {"key": w.traffic.conversation}),
}
NAMES = url_names("runs") + url_names("traffic")
# Downloads of list pages: an outsider's holds none of another team's rows.
EXPORTS = [
    ("runs:list", "?format=json"), ("runs:list", "?format=csv"), ("runs:alert-list", "?format=json&show=all"),
    ("runs:alert-list", "?format=csv&show=all"), ("runs:results", "?format=json"),
    ("runs:results", "?format=csv"), ("runs:results", "?format=md"),
]


def rule(name):
    if name not in URLS:
        pytest.fail(f"{name} has no access rule: add it to URLS in {__name__}")
    return URLS[name]


def test_it_has_a_rule_for_every_url():
    assert set(NAMES) == set(URLS)


@pytest.mark.parametrize("name", NAMES)
def test_it_refuses_anonymous_users(name, alpha):
    endpoint = rule(name)
    response = call(Client(), name, endpoint, alpha)
    if endpoint.api or endpoint.scrape:
        assert response.status_code == 401
        assert alpha.config.name not in response.content.decode()
        if endpoint.api:
            assert response.json() == {"error": "login required"}
    else:
        assert response.status_code == 302
        assert response["Location"].startswith(resolve_url(settings.LOGIN_URL) + "?next=")


@pytest.mark.parametrize("role", ["owner", "teammate"])
@pytest.mark.parametrize("name", NAMES)
def test_it_serves_the_owner_and_a_teammate(name, role, alpha, bravo):
    endpoint = rule(name)
    response = call(logged_in(getattr(alpha, role)), name, endpoint, alpha)
    assert response.status_code == endpoint.member_status
    assert posts_without_token(response) <= 0
    if endpoint.target is None and endpoint.lists:
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


@pytest.mark.parametrize("name", NAMES)
def test_it_refuses_a_post_without_the_csrf_token(name, alpha):
    client = logged_in(alpha.owner, enforce_csrf_checks=True)
    response = client.post(url_of(name, rule(name), alpha))
    assert response.status_code == 403


@pytest.mark.parametrize(("name", "query"), EXPORTS)
def test_it_exports_only_the_users_teams_rows(name, query, alpha, bravo):
    url = url_of(name, rule(name), alpha, query)
    mine = logged_in(bravo.teammate).get(url)
    assert mine.status_code == 200
    assert b"bravo-" in mine.content
    assert b"alpha-" not in mine.content


@pytest.mark.parametrize(
    ("name", "target", "query"),
    [("runs:detail", "run", ""), ("runs:sweep-run", "execution", "?format=json"),
     ("runs:sweep-run", "execution", "?format=csv")],
)
def test_it_hides_another_teams_downloads(name, target, query, alpha, bravo):
    url = url_of(name, Endpoint(target), alpha, query)
    assert logged_in(alpha.teammate).get(url).status_code == 200
    assert logged_in(bravo.owner).get(url).status_code == 404


@pytest.mark.parametrize("param", ["runs", "configs", "sweep_runs"])
def test_it_compares_only_the_users_teams_objects(param, alpha, bravo):
    ids = {"runs": alpha.run.pk, "configs": alpha.config.pk, "sweep_runs": alpha.execution.pk}
    url = url_of("runs:compare", rule("runs:compare"), alpha, f"?{param}={ids[param]}&format=json")
    assert logged_in(alpha.teammate).get(url).status_code == 200
    response = logged_in(bravo.owner).get(url)
    assert response.status_code == 400
    assert "there is no" in response.content.decode()
    assert b"alpha-" not in response.content


def test_it_compares_configs_of_the_users_teams_only(alpha, bravo):
    query = f"?a={bravo.config.pk}&b={alpha.config.pk}"
    url = url_of("runs:compare-configs", rule("runs:compare-configs"), bravo, query)
    response = logged_in(bravo.owner).get(url)
    assert response.status_code == 400
    assert f"there is no config with id {alpha.config.pk}" in response.content.decode()
    assert b"alpha-" not in response.content


def test_it_filters_the_run_list_by_another_teams_config_to_nothing(alpha, bravo):
    url = url_of("runs:list", rule("runs:list"), alpha, f"?config={alpha.config.pk}&format=json")
    assert len(logged_in(alpha.owner).get(url).json()["rows"]) == 1
    assert logged_in(bravo.owner).get(url).json()["rows"] == []


def test_it_refuses_a_sweep_of_another_teams_config(alpha, bravo):
    data = {"name": "stolen", "configs": [alpha.config.pk], "repetitions": 1, "noise_floor_pct": 3,
            "job_speed": "on"}
    response = logged_in(bravo.owner).post(url_of("runs:sweep-new", rule("runs:sweep-new"), bravo), data)
    assert response.status_code == 400
    assert "configs" in response.context["form"].errors
    assert not Sweep.objects.filter(name="stolen").exists()


def test_it_refuses_a_schedule_of_another_teams_sweep(alpha, bravo):
    data = {"sweep": alpha.sweep.pk, "cron": "0 3 * * *", "time_zone": "UTC", "enabled": "on"}
    client = logged_in(bravo.owner)
    response = client.post(url_of("runs:schedule-create", rule("runs:schedule-create"), bravo), data)
    assert response.status_code == 400
    assert "sweep" in response.context["form"].errors
    assert Schedule.objects.filter(sweep=alpha.sweep).count() == 1
    ok = client.post(url_of("runs:schedule-create", rule("runs:schedule-create"), bravo),
                     data | {"sweep": bravo.sweep.pk})
    assert ok.status_code == 302


async def connect(run_id, user):
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run_id}/")
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    return communicator, connected, code


@pytest.mark.django_db(transaction=True)
async def test_it_lets_only_the_team_and_superusers_on_the_run_socket():
    alpha, bravo = await sync_to_async(team_world)("alpha"), await sync_to_async(team_world)("bravo")
    root = await sync_to_async(UserFactory)(username="root", is_superuser=True, teams=[])
    for user in (alpha.owner, alpha.teammate, root):
        communicator, connected, _ = await connect(alpha.run.pk, user)
        assert connected
        assert (await communicator.receive_json_from())["run"]["config"] == "alpha-config"
        await communicator.disconnect()
    for user, refused in ((bravo.owner, 4404), (AnonymousUser(), 4401)):
        _, connected, code = await connect(alpha.run.pk, user)
        assert (connected, code) == (False, refused)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("origin", [b"http://evil.example", b"http://testserver.evil.example", b"null"])
async def test_it_refuses_a_socket_from_a_foreign_origin(origin):
    world = await sync_to_async(team_world)("alpha")
    path = f"/ws/runs/{world.run.pk}/"
    host = (b"host", b"testserver")
    foreign = WebsocketCommunicator(application, path, headers=[(b"origin", origin), host])
    connected, _ = await foreign.connect()
    assert not connected
    # The same socket from the site's own origin gets past the check (to the login check: 4401).
    own = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://testserver"), host])
    connected, code = await own.connect()
    assert (connected, code) == (False, 4401)

