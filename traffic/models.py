"""The rows of real traffic: one per relayed request, each machine's relay state, and its relay tokens."""
from __future__ import annotations

from typing import Any, cast

from django.db import models

from engines.models import Engine, Machine
from teams.tokens import HashedToken


class TrafficRecord(models.Model):
    """One request a relay passed to its machine's engine (fields: traffic.relay.record)."""

    key = models.CharField(max_length=32, unique=True)  # the relay's: a retried write stores once
    machine = models.ForeignKey(Machine, models.CASCADE, related_name="traffic")
    engine = models.ForeignKey(Engine, models.SET_NULL, null=True, blank=True, related_name="traffic")
    front = models.CharField(max_length=10)
    upstream = models.CharField(max_length=10, blank=True)
    path = models.CharField(max_length=100)
    client = models.CharField(max_length=300, blank=True)
    model = models.CharField(max_length=300, blank=True)
    arrived = models.DateTimeField()
    status = models.PositiveSmallIntegerField(default=200)
    ttft_s = models.FloatField(null=True, blank=True)
    generation_s = models.FloatField(null=True, blank=True)
    e2e_s = models.FloatField(null=True, blank=True)
    decode_tps_client = models.FloatField(null=True, blank=True)
    decode_tps_engine = models.FloatField(null=True, blank=True)
    prompt_tokens = models.IntegerField(null=True, blank=True)
    new_prompt_tokens = models.IntegerField(null=True, blank=True)
    output_tokens = models.IntegerField(null=True, blank=True)
    output_type = models.CharField(max_length=20, blank=True)
    draft_tokens = models.IntegerField(null=True, blank=True)
    accepted_tokens = models.IntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=30, blank=True)
    error = models.TextField(blank=True)
    conversation = models.CharField(max_length=32, blank=True)
    turn = models.PositiveIntegerField(default=0)
    tool_calls = models.JSONField(default=list, blank=True)  # [{"name", "path"}]
    request_body = models.JSONField(null=True, blank=True)  # only when the machine captures bodies
    response_text = models.TextField(blank=True)  # "" when not captured

    class Meta:
        ordering = ["arrived", "pk"]
        indexes = [
            models.Index(fields=["machine", "arrived"]),
            models.Index(fields=["machine", "conversation", "arrived"]),
        ]

    def __str__(self) -> str:
        return f"{self.front} {self.path} on {self.machine_id} at {self.arrived:%H:%M:%S}"


LOG_WARNINGS_KEPT = 20


class RelayState(models.Model):
    """What a machine's relay last said about itself (written with its heartbeat)."""

    machine = models.OneToOneField(Machine, models.CASCADE, related_name="relay_state")
    started = models.DateTimeField()
    heartbeat = models.DateTimeField()
    addresses = models.JSONField(default=dict)  # {"ollama": "http://host:port", "openai": ...}
    upstream = models.CharField(max_length=300, blank=True)  # the engine's base URL
    accepted = models.BigIntegerField(default=0)  # records handed to the writer
    stored = models.BigIntegerField(default=0)
    buffered = models.IntegerField(default=0)  # waiting for the database
    dropped = models.BigIntegerField(default=0)  # lost because the buffer's bound was hit
    last_error = models.TextField(blank=True)  # the database error the writer is retrying past
    # The engine's own log lines worth a warning (its prompt cache dropping a prompt), newest last:
    # [{"at": ISO time, "line": text}], the latest LOG_WARNINGS_KEPT.
    log_warnings = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"relay on {self.machine_id}"


class RelayToken(HashedToken):
    """A credential for one machine's relay: shown once to the team admin who issues it, stored as
    its SHA-256 only, revocable. A request to the relay presents it; only such a request has the
    engine's stored API key added (traffic.relay.gate)."""

    PREFIX = "sdr"  # "SparkDash relay": says what a leaked token is for

    machine = models.ForeignKey(Machine, models.CASCADE, related_name="relay_tokens")

    class Meta:
        ordering = ["-created", "-pk"]

    @classmethod
    def issue_for(cls, machine: Machine, name: str, by: Any = None) -> tuple[RelayToken, str]:
        """A new token for `machine` named `name`, issued by user `by`: the row and the plain token
        (never stored: show it once)."""
        person = by if by is not None and getattr(by, "is_authenticated", False) else None
        row, plain = cls.issue(cls.PREFIX, machine=machine, team=machine.team, name=name, created_by=person)
        return cast(RelayToken, row), plain

    @classmethod
    def live_digests(cls, machine_id: int) -> frozenset[str]:
        """The digests of `machine_id`'s unrevoked tokens."""
        rows = cls.objects.filter(machine_id=machine_id, revoked__isnull=True)
        return frozenset(rows.values_list("digest", flat=True))
