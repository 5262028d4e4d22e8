"""Runs (one job against one config) and their samples."""
from __future__ import annotations

from typing import Any, TypedDict

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from engines.models import EngineConfig, Machine


class RunDict(TypedDict):
    id: int
    status: str
    config: str
    job: str
    machine: str
    engine: str
    simulator: bool
    params: dict[str, Any]
    progress: dict[str, int]
    summary: dict[str, Any]
    provenance: dict[str, Any]
    error: str
    warnings: list[dict[str, Any]]
    created: str
    started: str | None
    finished: str | None


class Run(models.Model):
    """One job run against one config, with its summary and provenance."""

    class Job(models.TextChoices):
        SPEED = "speed", "Speed"
        LOOKAHEAD = "lookahead", "Lookahead sweep"
        REPLAY = "replay", "Replay"
        CONCURRENCY = "concurrency", "Concurrency sweep"
        PREFIX_CACHE = "prefix-cache", "Prefix-cache probe"
        AGENT_TABLE = "agent-table", "Agent API-table task"
        NEEDLE = "needle", "Needle in a haystack"
        MMLU_PRO = "mmlu-pro", "MMLU-Pro (lm-evaluation-harness)"
        EVALPLUS = "evalplus", "HumanEval+ / MBPP+ (EvalPlus)"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    TERMINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    config = models.ForeignKey(EngineConfig, models.PROTECT, related_name="runs")
    # Copied from the config at creation: which box's queue the run waits in.
    machine = models.ForeignKey(Machine, models.PROTECT, related_name="runs")
    job = models.CharField(max_length=30, choices=Job.choices)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    created = models.DateTimeField(default=timezone.now)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    # Refreshed at every flush; a running run whose heartbeat stops is reaped as lost.
    heartbeat = models.DateTimeField(null=True, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    # Problems found while running (engine log lines, client/engine disagreement), shown on the run.
    warnings = models.JSONField(default=list, blank=True)
    engine_log = models.TextField(blank=True, help_text="the engine's output during the run (tail)")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [
            models.Index(fields=["machine", "status"]),
            models.Index(fields=["config", "-created"]),
            models.Index(fields=["status", "-created"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.job} on {self.config_id})"

    def get_absolute_url(self) -> str:
        return reverse("runs:detail", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL

    def public_params(self) -> dict[str, Any]:
        """The parameters as sent to browsers and scripts: a replay's recorded bodies as a count."""
        params = dict(self.params)
        if isinstance(params.get("requests"), list):
            params["requests"] = len(params["requests"])
        return params

    def to_dict(self) -> RunDict:
        """The one shape of a run: API, CLI, websocket and polling all send this."""
        engine = self.config.engine
        return {
            "id": self.pk,
            "status": self.status,
            "config": self.config.name,
            "job": self.job,
            "machine": self.machine.name,
            "engine": engine.name,
            "simulator": engine.simulator,
            "params": self.public_params(),
            "progress": {"done": self.progress_done, "total": self.progress_total},
            "summary": self.summary,
            "provenance": self.provenance,
            "error": self.error,
            "warnings": self.warnings,
            "created": self.created.isoformat(),
            "started": self.started.isoformat() if self.started else None,
            "finished": self.finished.isoformat() if self.finished else None,
        }


class Sample(models.Model):
    """One measurement of a run (e.g. one request's figures), numbered within the run."""

    run = models.ForeignKey(Run, models.CASCADE, related_name="samples")
    seq = models.PositiveIntegerField()
    t = models.FloatField(help_text="seconds since the run started")
    kind = models.CharField(max_length=30)
    values = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="sample_run_seq_unique")]

    def __str__(self) -> str:
        return f"sample {self.seq} of run {self.run_id}"

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "t": self.t, "kind": self.kind, "values": self.values}
