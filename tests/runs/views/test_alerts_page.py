"""The alerts page says each alert's webhook outcome in the reader's language."""
from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from runs.models import Alert
from runs.templatetags.run_text import webhook_outcome

pytestmark = pytest.mark.django_db


def test_it_says_a_webhook_outcome_in_japanese(alice_client, alpha):
    Alert.objects.filter(pk=alpha.alert.pk).update(webhook_outcome="delivery failed (HTTP 500)")
    alice_client.force_login(alpha.owner)
    alice_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ja"
    page = alice_client.get(reverse("runs:alert-list")).content.decode()
    assert "delivery failed" not in page and "配信に失敗しました（HTTP 500）" in page


def test_it_keeps_an_outcome_of_another_shape_as_stored():
    assert webhook_outcome("delivered (HTTP 204)") == "delivered (HTTP 204)"
    assert webhook_outcome("something else") == "something else"
