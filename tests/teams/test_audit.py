"""teams.audit: events keep who, what, when and from where, even after the rows are gone."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from teams.audit import record
from teams.models import AuditEvent
from tests.factories import EngineConfigFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_it_records_the_author_the_object_and_the_address():
    config = EngineConfigFactory(name="qwen-spec")
    user = UserFactory(username="ana")
    request = RequestFactory().post("/", REMOTE_ADDR="10.0.0.7")
    event = record(user, "changed", config, config.engine.machine.team, request=request, fields=["lookahead"])
    event.refresh_from_db()
    assert (event.actor_name, event.action, event.object_type, event.object_name) == (
        "ana", "changed", "engineconfig", "qwen-spec")
    assert event.address == "10.0.0.7" and event.detail == {"fields": ["lookahead"]}
    assert event.team_name == config.engine.machine.team.name


def test_it_keeps_the_names_after_the_user_is_deleted():
    config = EngineConfigFactory()
    user = UserFactory(username="leaver")
    record(user, "created", config, config.engine.machine.team)
    user.delete()
    event = AuditEvent.objects.get()
    assert event.actor is None and event.actor_name == "leaver"


def test_it_names_the_system_when_nobody_acted():
    config = EngineConfigFactory()
    event = record(None, "started", config, config.engine.machine.team)
    assert event.actor_name == "system" and event.address is None


def test_it_refuses_an_action_word_it_does_not_know():
    config = EngineConfigFactory()
    with pytest.raises(ValueError, match="audit action"):
        record(None, "frobbed", config, None)
    assert not AuditEvent.objects.exists()
