"""Error pages with DEBUG off (as `make run` serves): a bad Host, an id too big for the database and
an unknown API id give no traceback and no setting; every /api/ error is JSON."""
from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.factories import UserFactory, team_world

OVERFLOW = "99999999999999999999999"
# What a debug page or a leaked setting would show.
SECRETS = ("Traceback", "SECRET_KEY", "DATABASES", "settings.py", "REDIS_URL", "DATABASE_URL")


def _leaks(response) -> list[str]:
    text = response.content.decode(errors="replace")
    found = [word for word in SECRETS if word in text]
    return found + [value for value in (settings.SECRET_KEY, str(settings.DATABASES["default"]["NAME"]))
                    if value and value in text]


def _routes(patterns: list, prefix: str = "") -> list[str]:
    routes = []
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            routes += _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern) and "<int:" in route:
            routes.append(route)
    return routes


def _overflowing(route: str) -> str:
    """The route with every int argument too big for the database (and `x` for a string)."""
    url = re.sub(r"<int:\w+>", OVERFLOW, route)
    return "/" + re.sub(r"<(?:str|slug):\w+>", "x", url)


@pytest.fixture
def admin_client(db) -> Client:
    """A superuser sees every team's objects: a 404 means there is no such object."""
    client = Client(raise_request_exception=False)
    client.force_login(UserFactory(username="root", is_superuser=True, is_staff=True))
    return client


ID_ROUTES = [route for route in _routes(get_resolver().url_patterns) if not route.startswith("admin/")]


@pytest.mark.parametrize("route", ID_ROUTES)
def test_it_answers_404_for_an_id_too_big_for_the_database_on_every_id_url(admin_client, route):
    url = _overflowing(route)
    response = admin_client.get(url)
    if response.status_code == 405:
        response = admin_client.post(url)
    assert response.status_code == 404, (url, response.status_code)
    assert not _leaks(response)


QUERIES = [
    f"/runs/?config={OVERFLOW}", f"/runs/?machine={OVERFLOW}", f"/tour/?runs={OVERFLOW}",
    f"/tour/?runs=1,{OVERFLOW}", f"/sweeps/new/?configs={OVERFLOW}", f"/compare/?runs=1,{OVERFLOW}",
    f"/compare/?configs={OVERFLOW}", f"/compare/?sweep_runs={OVERFLOW}",
    f"/compare/?configs=1&baseline={OVERFLOW}",
    f"/runs/?compare=selected&runs=1&runs={OVERFLOW}", f"/compare/configs/?a={OVERFLOW}&b=1",
    f"/runs/?page={OVERFLOW}", "/runs/?config=" + "9" * 5000, "/tour/?runs=" + "9" * 5000,
]


@pytest.mark.parametrize("url", QUERIES)
def test_it_never_fails_on_an_id_too_big_for_the_database_in_a_query(admin_client, url):
    response = admin_client.get(url)
    assert response.status_code in (200, 400, 404), response.status_code
    assert not _leaks(response)


def test_it_shows_no_run_for_a_config_filter_too_big_for_the_database(admin_client):
    world = team_world("alpha")
    assert world.run.config.name in admin_client.get("/runs/").content.decode()
    response = admin_client.get(f"/runs/?config={OVERFLOW}")
    assert response.status_code == 200
    assert world.run.config.name not in response.content.decode().split("<tbody", 1)[-1]


@pytest.mark.parametrize("url", [f"/tour/?runs={OVERFLOW}", "/tour/?runs=1," + "9" * 5000])
def test_it_answers_404_for_a_tour_of_runs_too_big_for_the_database(admin_client, url):
    response = admin_client.get(url)
    assert response.status_code == 404
    assert "these runs are not a demo tour" in response.content.decode()


def test_it_reads_the_samples_api_with_huge_numbers_as_json(admin_client):
    run = team_world("alpha").run
    for query in (f"?after={OVERFLOW}", "?max_points=" + "9" * 5000, "?after=" + "9" * 5000):
        response = admin_client.get(f"/api/runs/{run.pk}/samples{query}")
        assert response.status_code in (200, 400), (query, response.status_code)
        assert response["Content-Type"] == "application/json"
    traffic = admin_client.get(f"/machines/{run.machine_id}/traffic/records.json?since={OVERFLOW}")
    assert traffic.status_code in (200, 400)
    assert traffic["Content-Type"] == "application/json"


def test_it_answers_a_bad_host_with_a_plain_400_and_no_settings(db):
    response = Client(raise_request_exception=False).get("/runs/1/", HTTP_HOST="attacker.example")
    assert response.status_code == 400
    assert "Bad request (400)" in response.content.decode()
    assert not _leaks(response)


def test_it_answers_an_unknown_api_id_with_json_404(admin_client):
    response = admin_client.get("/api/runs/99999")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": "not found: no such object, or not one you may see"}


def test_it_answers_every_api_error_in_json(admin_client, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError(f"boom near {settings.SECRET_KEY}")

    monkeypatch.setattr("runs.views.api._get_run", crash)
    answers = {
        404: admin_client.get("/api/no-such-endpoint"),
        405: admin_client.post("/api/runs/1"),
        400: Client(raise_request_exception=False).get("/api/runs/1", HTTP_HOST="attacker.example"),
        500: admin_client.get("/api/runs/1"),
    }
    for status, response in answers.items():
        assert response.status_code == status
        assert response["Content-Type"] == "application/json", status
        assert response["X-Content-Type-Options"] == "nosniff" and "Content-Security-Policy" in response
        assert set(response.json()) == {"error"}
        assert not _leaks(response), status
    assert answers[405].json()["error"] == "method not allowed: use GET"


def test_it_shows_its_own_error_pages_without_a_traceback(admin_client, monkeypatch):
    missing = admin_client.get("/runs/99999/")
    monkeypatch.setattr("runs.views.run_page._get_run", lambda *a, **k: 1 / 0)
    crashed = admin_client.get("/runs/1/")
    assert crashed.status_code == 500
    assert "Server error (500)" in crashed.content.decode()
    assert missing.status_code == 404
    assert "Not found (404)" in missing.content.decode()
    assert not _leaks(crashed) and not _leaks(missing)
    assert "ZeroDivisionError" not in crashed.content.decode()


def test_it_sends_a_content_security_policy_and_a_permissions_policy_on_every_page(admin_client):
    for url in ("/", "/runs/", "/configs/", "/login/", "/runs/99999/"):
        response = admin_client.get(url)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy, url
        assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "camera=()" in response["Permissions-Policy"], url
        assert "geolocation=()" in response["Permissions-Policy"]


def test_it_names_the_form_limit_a_request_passed(alice):
    fields = {"username": "alice", "password": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)}
    # The CSRF check reads the form first, as it does for every browser's post.
    browser = Client(enforce_csrf_checks=True, raise_request_exception=False)
    browser.get("/login/")
    fields["csrfmiddlewaretoken"] = browser.cookies["csrftoken"].value
    page = browser.post("/login/", fields)
    assert page.status_code == 400
    limit = f"larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)"
    assert limit in page.content.decode()
    assert "_auth_user_id" not in browser.session
    browser.force_login(alice)
    api = browser.post("/api/runs/1", fields)
    assert api.status_code == 400
    assert api.json() == {"error": f"bad request: the form's fields are {limit}"}


def test_it_answers_a_refused_csrf_check_under_the_api_in_json(alice):
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(alice)
    response = client.post("/api/runs/1", {"a": "b"})
    assert response.status_code == 403
    assert response.json() == {"error": "forbidden"}


def test_it_refuses_ids_too_big_for_the_database_in_forms_as_invalid_choices(admin_client):
    world = team_world("alpha")
    posts = {
        "/sweeps/new/": {"name": "s", "configs": [OVERFLOW]},
        f"/sweeps/{world.sweep.pk}/edit/": {"name": "s", "configs": [str(world.config.pk), OVERFLOW]},
        f"/configs/{world.config.pk}/matrix/": {"lookaheads": "2", "engines": [OVERFLOW]},
        "/schedules/new/": {"sweep": OVERFLOW},
        f"/machines/{world.machine.pk}/traffic/conversations/{world.traffic.conversation}/replay/":
            {"config": OVERFLOW, "reps": "1"},
    }
    for url, data in posts.items():
        response = admin_client.post(url, data)
        assert response.status_code in (200, 400), (url, response.status_code)
        assert not _leaks(response)
    assert "is not a valid value" in admin_client.post("/sweeps/new/", posts["/sweeps/new/"]).content.decode()
