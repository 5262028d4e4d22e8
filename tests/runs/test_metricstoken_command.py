import io

import pytest
from django.core.management import CommandError, call_command

from runs.models import MetricsToken
from teams.models import AuditEvent

pytestmark = pytest.mark.django_db


def command(**options):
    out = io.StringIO()
    call_command("metricstoken", stdout=out, **options)
    return out.getvalue()


def test_it_issues_a_token_once_and_revokes_it_by_name(alpha):
    printed = command(team="alpha-team", name="prom").strip().splitlines()[-1]
    row = MetricsToken.objects.get()
    assert MetricsToken.live(printed) == row and row.team == alpha.team
    assert "revoked 1 metrics token" in command(team="alpha-team", name="prom", revoke=True)
    assert MetricsToken.live(printed) is None
    assert list(AuditEvent.objects.order_by("pk").values_list("action", "actor_name")) == [
        ("created", "system"), ("revoked", "system")]


def test_it_refuses_an_unknown_team_or_token_and_writes_nothing(alpha):
    with pytest.raises(CommandError, match="no team named 'nobody'"):
        command(team="nobody", name="prom")
    with pytest.raises(CommandError, match="no live metrics token named 'prom'"):
        command(team="alpha-team", name="prom", revoke=True)
    assert not MetricsToken.objects.exists() and not AuditEvent.objects.exists()
