"""The idle session timeout, through the login page: a session ends SESSION_COOKIE_AGE after its
last use, each use extends it, and a burst of requests does not write the session each time."""
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.hashers import make_password
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.test import AsyncClient, Client
from django.urls import reverse
from django.utils import timezone

from sparkdash import idle
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

RIGHT = "orbit-lantern-7-quay"


@pytest.fixture
def client(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.SESSION_COOKIE_AGE = 60
    user = UserFactory(username="bob")
    user.set_password(RIGHT)
    user.save()
    client = Client()
    response = client.post(reverse("login"), {"username": "bob", "password": RIGHT})
    assert response.status_code == 302
    return client


def left(session: Session) -> timedelta:
    return session.expire_date - timezone.now()


def test_it_ends_a_session_left_idle_for_the_timeout(client):
    assert client.cookies["sessionid"]["max-age"] == 60
    assert timedelta(seconds=55) < left(Session.objects.get()) <= timedelta(seconds=60)
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))  # 60 s without a request
    response = client.get(reverse("runs:home"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def idle_for(seconds: int, session_key: str) -> None:
    """As if the session's last use were `seconds` ago (out of the 60 s timeout)."""
    session = SessionStore(session_key=session_key)
    session[idle.SEEN_KEY] -= seconds
    session.save()
    Session.objects.update(expire_date=timezone.now() + timedelta(seconds=60 - seconds))


def test_it_extends_the_session_each_time_it_is_used(client):
    idle_for(55, client.session.session_key)
    response = client.get(reverse("runs:home"))
    assert response.status_code == 200
    assert response.cookies["sessionid"]["max-age"] == 60
    assert left(Session.objects.get()) > timedelta(seconds=55)


def test_it_does_not_write_the_session_again_within_the_refresh_interval(client, settings):
    settings.SESSION_COOKIE_AGE = 1200  # a minute's refresh interval, for a slow box
    assert idle.refresh_interval() == 60
    before = Session.objects.get().expire_date
    response = client.get(reverse("runs:home"))
    assert response.status_code == 200
    assert "sessionid" not in response.cookies
    assert Session.objects.get().expire_date == before


def test_it_refreshes_an_eight_hour_session_every_five_minutes_at_most(settings):
    settings.SESSION_COOKIE_AGE = 8 * 3600
    assert idle.refresh_interval() == 300
    settings.SESSION_COOKIE_AGE = 10
    assert idle.refresh_interval() == 1


@pytest.mark.django_db(transaction=True)
async def test_it_extends_the_session_when_served_over_asgi_too(settings):
    settings.SESSION_COOKIE_AGE = 60
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    await sync_to_async(UserFactory)(username="carol", password=make_password(RIGHT))
    client = AsyncClient()
    assert (await client.post(reverse("login"), {"username": "carol", "password": RIGHT})).status_code == 302
    await sync_to_async(idle_for)(55, client.cookies["sessionid"].value)
    response = await client.get(reverse("runs:home"))
    assert response.status_code == 200
    assert response.cookies["sessionid"]["max-age"] == 60
    assert await sync_to_async(lambda: left(Session.objects.get()))() > timedelta(seconds=55)
