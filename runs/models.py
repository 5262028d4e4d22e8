"""Runs (one job against one config) and their samples."""
from __future__ import annotations

from typing import Any, TypedDict

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
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
    # Set when the run belongs to a sweep: which start of it, and which repetition of its cell.
    execution = models.ForeignKey(
        "SweepExecution", models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    repetition = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [
            models.Index(fields=["machine", "status"]),
            # The home page's latest runs of each machine.
            models.Index(fields=["machine", "-created"]),
            models.Index(fields=["config", "-created"]),
            models.Index(fields=["status", "-created"]),
            # The run list's default order (newest first), read one page at a time.
            models.Index(fields=["-created"]),
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

    # No index of its own: the (run, seq) unique constraint's index serves lookups by run.
    run = models.ForeignKey(Run, models.CASCADE, related_name="samples", db_index=False)
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


class Sweep(models.Model):
    """A named set of configs x jobs x repetitions, started together by hand or on a schedule."""

    name = models.CharField(max_length=100, unique=True)
    configs = models.ManyToManyField(EngineConfig, related_name="sweeps")
    # [{"job": "speed", "params": {...}}, ...]: each job's parameters as runs.jobs validates them.
    jobs = models.JSONField(default=list)
    repetitions = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    # The config the compare view and the sweep grid measure deltas against (optional).
    baseline = models.ForeignKey(
        EngineConfig, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Regression alerts are posted here as JSON when set; kept out of templates and exports.
    webhook_url = models.URLField(blank=True, max_length=500)
    # A regression must be worse than the baseline's spread and than this many percent.
    noise_floor_pct = models.FloatField(
        default=3.0, validators=[MinValueValidator(0.0), MaxValueValidator(100.0)]
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Schedule(models.Model):
    """When a sweep starts by itself: a cron line (nightly by default) or every N seconds.

    Each schedule owns one django-celery-beat PeriodicTask, kept in step when it is saved.
    """

    sweep = models.ForeignKey(Sweep, models.CASCADE, related_name="schedules")
    cron = models.CharField(max_length=100, default="0 2 * * *", help_text="minute hour day month weekday")
    every_seconds = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="instead of cron"
    )
    time_zone = models.CharField(max_length=64, default="UTC")
    enabled = models.BooleanField(default=True)
    # No reverse accessor: PeriodicTask.schedule is the property beat's scheduler reads.
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", models.SET_NULL, null=True, blank=True, editable=False,
        related_name="+",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["sweep__name", "pk"]

    def __str__(self) -> str:
        when = f"every {self.every_seconds} s" if self.every_seconds else self.cron
        return f"{self.sweep} ({when})"


class SweepExecution(models.Model):
    """One start of a sweep (by hand or by its schedule): the runs it queued."""

    class Trigger(models.TextChoices):
        MANUAL = "manual"
        SCHEDULE = "schedule"

    sweep = models.ForeignKey(Sweep, models.CASCADE, related_name="executions")
    schedule = models.ForeignKey(Schedule, models.SET_NULL, null=True, blank=True, related_name="executions")
    trigger = models.CharField(max_length=20, choices=Trigger.choices, default=Trigger.MANUAL)
    created = models.DateTimeField(default=timezone.now)
    # Set once every run it queued has ended; the regression check runs then.
    finished = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = "sweep run"

    def __str__(self) -> str:
        return f"{self.sweep} at {self.created:%Y-%m-%d %H:%M}"


class Alert(models.Model):
    """A scheduled run worse than its baseline beyond the noise band (one metric of one config)."""

    execution = models.ForeignKey(SweepExecution, models.CASCADE, related_name="alerts")
    config = models.ForeignKey(EngineConfig, models.CASCADE, related_name="alerts")
    job = models.CharField(max_length=30)
    benchmark = models.CharField(max_length=50)
    metric = models.CharField(max_length=50)
    label = models.CharField(max_length=100)
    baseline = models.JSONField(default=dict, help_text="Spread of the baseline runs' values")
    value = models.JSONField(default=dict, help_text="Spread of this sweep run's values")
    delta_pct = models.FloatField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)
    resolved = models.DateTimeField(null=True, blank=True)
    # What posting it to the sweep's webhook gave ("" when there is no webhook).
    webhook_outcome = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["resolved", "-created"])]

    def __str__(self) -> str:
        return f"{self.label} of {self.config_id} in {self.execution_id}"
