"""Accounts through the login page: lockout per user and per address, the log of failed logins,
lifting a lockout, the password rules and changing one's password (the idle timeout: test_idle.py)."""
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.management import call_command
from django.test import AsyncClient, Client, RequestFactory, override_settings
from django.urls import reverse
from django.utils import timezone

from sparkdash.accounts import client_address
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

RIGHT = "orbit-lantern-7-quay"
WRONG = "not-the-password-%d"
LIMIT = 10  # settings.AXES_FAILURE_LIMIT's default


@pytest.fixture(autouse=True)
def fast_hashes(settings):
    """MD5 hashes: a login checks a hash, and these tests log in dozens of times."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def bob():
    user = UserFactory(username="bob")
    user.set_password(RIGHT)
    user.save()
    return user


def log_in(client, username, password, address="10.0.0.1", **headers):
    return client.post(reverse("login"), {"username": username, "password": password},
                       REMOTE_ADDR=address, **headers)


def logged_in_as(client):
    return client.session.get("_auth_user_id")


def fail(client, times, username="bob", address="10.0.0.1"):
    return [log_in(client, username, WRONG % i, address).status_code for i in range(times)]


def test_it_refuses_the_right_password_after_twelve_wrong_ones(bob, caplog):
    client = Client()
    statuses = fail(client, 12)
    assert statuses == [200] * (LIMIT - 1) + [429] * (12 - LIMIT + 1)
    response = log_in(client, "bob", RIGHT)
    assert response.status_code == 429
    assert logged_in_as(client) is None
    page = response.content.decode()
    assert "Too many failed logins" in page
    assert "Try again after" in page and "ask an admin to lift it" in page
    assert 0 < int(response["Retry-After"]) <= settings.AXES_COOLOFF_TIME.total_seconds()


def test_it_logs_each_failed_login_with_username_and_address_never_the_password(bob, caplog):
    client = Client()
    fail(client, 12, address="10.0.0.7")
    log_in(client, "bob", RIGHT, "10.0.0.7")
    security = [r.getMessage() for r in caplog.records if r.name == "sparkdash.security"]
    failed = [line for line in security if line.startswith("failed login")]
    assert len(failed) == 13
    assert all("username='bob'" in line and "address=10.0.0.7" in line for line in failed)
    assert "locked_out=True" in failed[LIMIT - 1] and "locked_out=False" in failed[LIMIT - 2]
    assert any(line.startswith("login locked out: username='bob'") for line in security)
    assert "not-the-password" not in caplog.text and RIGHT not in caplog.text
    attempt = AccessAttempt.objects.get(username="bob")
    assert (attempt.ip_address, attempt.failures_since_start) == ("10.0.0.7", LIMIT)
    assert "not-the-password" not in attempt.post_data
    assert AccessFailureLog.objects.filter(username="bob", ip_address="10.0.0.7").count() == LIMIT


def test_it_lets_the_right_password_in_once_the_lockout_ends(bob):
    client = Client()
    fail(client, LIMIT)
    assert log_in(client, "bob", RIGHT).status_code == 429
    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)  # the cool-off has passed since the last failure
    response = log_in(client, "bob", RIGHT)
    assert response.status_code == 302
    assert logged_in_as(client) == str(bob.pk)


def test_it_lets_the_right_password_in_once_an_admin_lifts_the_lockout_in_the_admin(bob):
    client = Client()
    fail(client, LIMIT)
    admin = Client()
    admin.force_login(UserFactory(username="root", is_superuser=True, is_staff=True))
    listing = admin.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and "bob" in listing.content.decode()
    assert "bob" in admin.get("/admin/axes/accessfailurelog/").content.decode()
    pks = list(AccessAttempt.objects.filter(username="bob").values_list("pk", flat=True))
    admin.post("/admin/axes/accessattempt/",
               {"action": "delete_selected", "_selected_action": pks, "post": "yes"})
    assert not AccessAttempt.objects.exists()
    assert log_in(client, "bob", RIGHT).status_code == 302


def test_it_lets_the_right_password_in_once_an_admin_resets_the_username(bob):
    client = Client()
    fail(client, LIMIT)
    call_command("axes_reset_username", "bob")
    assert log_in(client, "bob", RIGHT).status_code == 302
    assert logged_in_as(client) == str(bob.pk)


def test_it_locks_an_address_out_across_usernames(bob):
    client = Client()
    for i in range(LIMIT):
        log_in(client, f"guess{i}", "whatever", "10.0.0.5")
    assert log_in(client, "bob", RIGHT, "10.0.0.5").status_code == 429
    assert logged_in_as(client) is None
    assert log_in(client, "bob", RIGHT, "10.0.0.6").status_code == 302  # bob himself is not locked


def test_it_locks_a_username_out_across_addresses(bob):
    client = Client()
    for i in range(LIMIT):
        log_in(client, "bob", WRONG % i, f"10.0.1.{i}")
    assert log_in(client, "bob", RIGHT, "10.0.2.1").status_code == 429
    assert logged_in_as(client) is None


def test_it_counts_the_address_not_a_forwarded_for_header_it_was_not_told_to_trust(bob):
    client = Client()
    for i in range(LIMIT):
        log_in(client, f"guess{i}", "whatever", "10.0.0.5", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}")
    assert log_in(client, "bob", RIGHT, "10.0.0.5", HTTP_X_FORWARDED_FOR="192.0.2.99").status_code == 429


@pytest.mark.parametrize(("proxies", "forwarded", "expected"), [
    (0, "192.0.2.1", "10.0.0.1"),
    (1, "192.0.2.1", "192.0.2.1"),
    (1, "198.51.100.9, 192.0.2.1", "192.0.2.1"),  # a client's own entry, left of the proxy's, is skipped
    (2, "198.51.100.9, 192.0.2.1", "198.51.100.9"),
    (2, "", "10.0.0.1"),
])
def test_it_reads_the_address_through_as_many_proxies_as_it_trusts(proxies, forwarded, expected):
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    with override_settings(SPARKDASH_TRUSTED_PROXIES=proxies):
        assert client_address(request) == expected


@pytest.fixture
def bob_client(bob):
    client = Client()
    assert log_in(client, "bob", RIGHT).status_code == 302
    return client


def change(client, new, old=RIGHT):
    return client.post(reverse("password_change"),
                       {"old_password": old, "new_password1": new, "new_password2": new})


@pytest.mark.parametrize(("new", "message"), [
    ("short-pw-1", "This password is too short. It must contain at least 12 characters."),
    ("password1234", "This password is too common."),
    ("902184736519", "This password is entirely numeric."),
    ("bob@example.org!", "The password is too similar to the email address."),
])
def test_it_refuses_a_weak_new_password_with_the_rule_it_breaks(bob, bob_client, new, message):
    response = change(bob_client, new)
    assert response.status_code == 200
    assert message in response.content.decode()
    bob.refresh_from_db()
    assert bob.check_password(RIGHT) and not bob.check_password(new)


def test_it_changes_the_password_and_keeps_the_user_logged_in(bob, bob_client):
    other_browser = Client()
    other_browser.force_login(bob)
    page = bob_client.get(reverse("password_change"))
    assert page.status_code == 200 and "Change your password" in page.content.decode()
    response = change(bob_client, "a-new-long-passphrase")
    assert response.status_code == 302 and response["Location"] == reverse("password_change_done")
    assert bob_client.get(reverse("runs:home")).status_code == 200
    assert other_browser.get(reverse("runs:home")).status_code == 302  # the old password's sessions end
    bob.refresh_from_db()
    assert bob.check_password("a-new-long-passphrase")


def test_it_refuses_the_change_without_the_current_password(bob, bob_client):
    response = change(bob_client, "a-new-long-passphrase", old="a guess")
    assert response.status_code == 200
    assert "Your old password was entered incorrectly." in response.content.decode()
    bob.refresh_from_db()
    assert bob.check_password(RIGHT)


def test_it_links_the_password_page_from_the_header(bob_client):
    page = bob_client.get(reverse("runs:home")).content.decode()
    assert f'href="{reverse("password_change")}"' in page


def test_it_reads_the_lockout_and_idle_timeout_from_the_environment(tmp_path):
    code = ("from django.conf import settings as s; "
            "print(s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME.total_seconds(), s.SESSION_COOKIE_AGE)")
    env = os.environ | {"AXES_FAILURE_LIMIT": "5", "AXES_COOLOFF_MINUTES": "2", "SESSION_IDLE_MINUTES": "30",
                        "SPARKDASH_VAR_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
                          cwd=Path(settings.BASE_DIR), env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-1].split() == ["5", "120.0", "1800"], done.stdout + done.stderr


@pytest.mark.django_db(transaction=True)
async def test_it_shows_the_lockout_page_when_served_over_asgi_too():
    """Daphne serves the site: axes' async middleware path hands the lockout page other arguments."""
    await sync_to_async(UserFactory)(username="carol", password=make_password(RIGHT))
    client = AsyncClient()
    for i in range(LIMIT):
        await client.post(reverse("login"), {"username": "carol", "password": WRONG % i})
    response = await client.post(reverse("login"), {"username": "carol", "password": RIGHT})
    assert response.status_code == 429
    assert "Try again after" in response.content.decode()
