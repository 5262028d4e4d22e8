"""The webhook policy, through the sweep form (save time) and the alert post (send time)."""
from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.urls import reverse

from runs.actions.alerts import check_execution, post_alerts
from runs.models import Alert, Sweep
from tests.factories import EngineConfigFactory, SweepFactory, UserFactory
from tests.runs.actions.test_alerts import BASELINE, nights, scheduled

pytestmark = pytest.mark.django_db

REAL_GETADDRINFO = socket.getaddrinfo
# The whole of what a member learns: no address, port or connection detail.
REFUSAL = ("the webhook&#x27;s host is a loopback, link-local, private or reserved address, which "
           "webhooks may not reach (the server&#x27;s operator can allow networks with "
           "SPARKDASH_WEBHOOK_ALLOWED_NETWORKS)")


@pytest.fixture
def dns(monkeypatch) -> dict[str, str]:
    """Names the test makes resolve (to one address each); others resolve as usual."""
    table: dict[str, str] = {}

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host in table:
            family = socket.AF_INET6 if ":" in table[host] else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (table[host], port))]
        return REAL_GETADDRINFO(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


def sweep_form(config, url: str) -> dict[str, Any]:
    return {"name": "nightly", "configs": [config.pk], "repetitions": 3, "baseline": config.pk,
            "noise_floor_pct": 3.0, "job_speed": "on", "speed__reps": 2, "speed__warmup": 0,
            "webhook_url": url}


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:6379/", "https://10.1.2.3/hook", "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:8000/hook", "http://localhost:5432/", "http://192.168.1.20:22/", "http://0.0.0.0:80/",
    "http://rebound.example.net:8080/hook", "http://[::ffff:127.0.0.1]:80/",
])
def test_it_refuses_a_webhook_at_an_internal_address_when_the_sweep_is_saved(alice_client, dns, url):
    dns["rebound.example.net"] = "10.0.0.5"
    response = alice_client.post(reverse("runs:sweep-new"), sweep_form(EngineConfigFactory(), url))
    assert response.status_code == 400
    errors = re.findall(r'<small class="error">(.*?)</small>', response.content.decode(), re.S)
    assert errors == [f"Webhook URL: {REFUSAL}"]
    assert not Sweep.objects.exists()


def test_it_refuses_another_scheme(alice_client):
    data = sweep_form(EngineConfigFactory(), "ftp://example.org/x")
    response = alice_client.post(reverse("runs:sweep-new"), data)
    assert response.status_code == 400 and not Sweep.objects.exists()


def test_it_keeps_a_public_webhook_and_one_in_an_allowed_network(alice_client, dns, settings):
    dns["hooks.example.org"] = "93.184.215.14"
    config = EngineConfigFactory()
    response = alice_client.post(reverse("runs:sweep-new"), sweep_form(config, "https://hooks.example.org/t"))
    assert response.status_code == 302
    settings.SPARKDASH_WEBHOOK_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    data = sweep_form(config, "http://10.1.2.3/hook") | {"name": "lab"}
    assert alice_client.post(reverse("runs:sweep-new"), data).status_code == 302
    assert sorted(Sweep.objects.values_list("webhook_url", flat=True)) == [
        "http://10.1.2.3/hook", "https://hooks.example.org/t"]


@contextmanager
def listener(status: int = 200, location: str = "") -> Iterator[list[dict[str, Any]]]:
    """A loopback HTTP server recording each POST's Host header and body."""
    posts: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            posts.append({"host": self.headers["Host"], "body": body, "port": self.server.server_port})
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        posts.append({"port": server.server_port})
        yield posts
    finally:
        server.shutdown()
        server.server_close()


def slow_night(url: str):
    """A sweep with a saved webhook URL and a scheduled sweep run that raised alerts."""
    sweep = SweepFactory(configs=[EngineConfigFactory(name="cfg-a")], repetitions=3, webhook_url=url)
    nights(sweep, *BASELINE)
    slow = scheduled(sweep, [80.0] * 3)
    assert check_execution(slow)
    return slow


def test_it_checks_the_address_again_when_it_posts(dns, settings):
    with listener() as posts:
        port = posts.pop()["port"]
        dns["hooks.example.org"] = "127.0.0.1"  # public when saved, loopback by the time it posts
        outcome = post_alerts(slow_night(f"http://hooks.example.org:{port}/hook"))
        assert outcome == "refused: the webhook's host is not an address webhooks may reach"
        assert posts == []  # nothing reached the loopback listener
        # With loopback allowed by the operator it goes to the address checked, named as the URL says.
        settings.SPARKDASH_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
        Alert.objects.update(webhook_outcome="")
        assert post_alerts(Alert.objects.first().execution) == "delivered (HTTP 200)"
    assert posts[0]["host"] == f"hooks.example.org:{port}"
    assert set(Alert.objects.values_list("webhook_outcome", flat=True)) == {"delivered (HTTP 200)"}


def test_it_never_follows_a_redirect(dns, settings):
    settings.SPARKDASH_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    with listener(status=302, location="http://169.254.169.254/latest/meta-data/") as posts:
        port = posts.pop()["port"]
        outcome = post_alerts(slow_night(f"http://127.0.0.1:{port}/hook"))
    assert outcome == "delivery failed (HTTP 302)"
    assert len(posts) == 1


def test_it_says_only_delivery_failed_whatever_the_connection_did(dns, settings):
    settings.SPARKDASH_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    with listener() as posts:
        closed_port = posts.pop()["port"]
    outcome = post_alerts(slow_night(f"http://127.0.0.1:{closed_port}/hook"))  # connection refused
    outcome_unresolved = post_alerts(slow_night("http://gone.invalid/hook"))  # does not resolve
    assert outcome == outcome_unresolved == "delivery failed"


def test_it_refuses_an_internal_webhook_in_the_admin_too(client):
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    client.force_login(root)
    config = EngineConfigFactory()
    data = {"name": "nightly", "configs": [config.pk], "jobs": '[{"job": "speed"}]', "repetitions": 3,
            "noise_floor_pct": 3, "webhook_url": "http://169.254.169.254/latest/", "created_0": "2026-01-01",
            "created_1": "00:00"}
    response = client.post(reverse("admin:runs_sweep_add"), data)
    assert response.status_code == 200 and "webhooks may not reach" in response.content.decode()
    assert not Sweep.objects.exists()
    client.post(reverse("admin:runs_sweep_add"), data | {"webhook_url": "http://93.184.215.14/hook"})
    assert Sweep.objects.get().webhook_url == "http://93.184.215.14/hook"
