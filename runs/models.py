"""Runs (one job against one config), their samples, sweeps, schedules and alerts.

Every change of a run's status, and the end of a sweep run, happens here (RunQuerySet and
SweepExecution.finish_if_done), each as a conditional update: two workers, a reaper and a
cancel racing for one run leave it in exactly one end state.
"""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, TypedDict

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from engines import kinds as engine_kinds
from engines.access import foreign_configs
from engines.models import Engine, EngineConfig, Machine
from runs.core.registry import job_choices
from runs.signals import execution_finished
from teams.tokens import HashedToken

log = logging.getLogger(__name__)


class RunDict(TypedDict):
    id: int
    status: str
    config: str
    revision: int | None
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


class RunQuerySet(models.QuerySet["Run"]):
    """The run's state changes: queued -> running -> succeeded | failed | cancelled."""

    def claim(self, run_id: int) -> bool:
        """Queued -> running; False when another worker (or a cancel) got there first."""
        now = timezone.now()
        queued = self.filter(pk=run_id, status=Run.Status.QUEUED)
        return queued.update(status=Run.Status.RUNNING, started=now, heartbeat=now) == 1

    def end(self, run_id: int, status: str, *, only: tuple[str, ...] = (), **fields: Any) -> bool:
        """A queued or running run (or one in `only`) -> `status`, with `fields`; its sweep run may end.

        False when it had already ended (cancelled, reaped or stored by an earlier try): then only
        `finished` is stored, so a cancelled run still records when its worker let go of it.
        """
        states = only or (Run.Status.QUEUED, Run.Status.RUNNING)
        fields.setdefault("finished", timezone.now())
        updated = self.filter(pk=run_id, status__in=states).update(status=status, **fields) == 1
        if not updated:
            self.filter(pk=run_id, finished__isnull=True).update(finished=fields["finished"])
        SweepExecution.finish_if_done(run_id)
        return updated

    def cancel(self, run_id: int) -> bool:
        """Queued or running -> cancelled (the job loop stops at its next flush)."""
        return self.end(run_id, Run.Status.CANCELLED)

    def fail_running(self, run_id: int, error: str, since: datetime | None = None) -> bool:
        """Running -> failed with `error`; with `since`, only if no heartbeat came after it (lost)."""
        running = self.filter(pk=run_id, status=Run.Status.RUNNING)
        if since is not None and not running.filter(heartbeat__lt=since).exists():
            return False
        return self.end(run_id, Run.Status.FAILED, only=(Run.Status.RUNNING,), error=error)

    def beat(self, run_id: int, *, running_only: bool = True, **fields: Any) -> int:
        """The run's heartbeat (and progress in `fields`); with running_only, 0 once it is not running.

        The reaper fails a running run whose heartbeat stops (a lost worker).
        """
        runs = self.filter(pk=run_id, status=Run.Status.RUNNING) if running_only else self.filter(pk=run_id)
        return runs.update(heartbeat=timezone.now(), **fields)

    async def abeat(self, run_id: int, *, running_only: bool = True, **fields: Any) -> int:
        """`beat`, from async code."""
        return await sync_to_async(self.beat)(run_id, running_only=running_only, **fields)


class Run(models.Model):
    """One job run against one config, with its summary and provenance."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")

    TERMINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    config = models.ForeignKey(EngineConfig, models.PROTECT, related_name="runs")
    # The config's settings this run runs with (engines.revisions); null only while being created.
    revision = models.ForeignKey("engines.ConfigRevision", models.PROTECT, null=True, blank=True,
                                 related_name="runs")
    # Copied from the config at creation: which box's queue the run waits in.
    machine = models.ForeignKey(Machine, models.PROTECT, related_name="runs")
    job = models.CharField(max_length=30, choices=job_choices)  # the job registry's kinds
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
    # An imported run's file and level ("<sha256>:<level>"): the same file imported twice adds nothing.
    import_key = models.CharField(max_length=80, unique=True, null=True, blank=True, editable=False)
    error = models.TextField(blank=True)
    # Problems found while running (engine log lines, client/engine disagreement), shown on the run.
    warnings = models.JSONField(default=list, blank=True)
    engine_log = models.TextField(blank=True, help_text=_("the engine's output during the run (tail)"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)
    # Set when the run belongs to a sweep: which start of it, and which repetition of its cell.
    execution = models.ForeignKey(
        "SweepExecution", models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    repetition = models.PositiveSmallIntegerField(null=True, blank=True)

    objects = RunQuerySet.as_manager()
    team_path = "machine__team__"  # who sees it (engines.access)

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

    def ran_with(self) -> dict[str, Any]:
        """The config settings this run ran (or will run) with: its revision's; for a run without
        one, its provenance snapshot's, else the config's as they are now."""
        if self.revision is not None:
            return dict(self.revision.settings)
        provenance = self.provenance if isinstance(self.provenance, dict) else {}
        return dict(provenance.get("config") or self.config.snapshot())

    def get_job_display(self) -> str:  # type: ignore[no-redef]  # over the choices' own
        """The job kind's label in the reader's language (the registry's labels are marked English)."""
        return gettext(dict(job_choices()).get(self.job, self.job))

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
            "revision": self.revision.number if self.revision is not None else None,
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
    team_path = "run__machine__team__"
    t = models.FloatField(help_text=_("seconds since the run started"))
    kind = models.CharField(max_length=30)  # the sample type: "request", "telemetry" (docs/glossary.md)
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

    # Unique within the teams of its configs (the sweep form checks), not across teams.
    name = models.CharField(max_length=100)
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

    @classmethod
    def visible_to(cls, user: Any, sweeps: models.QuerySet[Sweep]) -> models.QuerySet[Sweep]:
        """Sweeps none of whose configs is another team's (engines.access)."""
        with_foreign = cls.configs.through.objects.filter(engineconfig__in=foreign_configs(user))
        return sweeps.exclude(pk__in=with_foreign.values("sweep_id"))


def _with_visible_sweep(user: Any, objects: models.QuerySet[Any]) -> models.QuerySet[Any]:
    """Schedules and sweep runs go with their sweep."""
    return objects.filter(sweep__in=Sweep.visible_to(user, Sweep.objects.all()).values("pk"))


class Schedule(models.Model):
    """When a sweep starts by itself: a cron line (nightly by default) or every N seconds.

    Each schedule owns one django-celery-beat PeriodicTask, kept in step when it is saved.
    """

    sweep = models.ForeignKey(Sweep, models.CASCADE, related_name="schedules")
    cron = models.CharField(max_length=100, default="0 2 * * *", help_text=_("minute hour day month weekday"))
    every_seconds = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text=_("instead of cron")
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

    visible_to = staticmethod(_with_visible_sweep)

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

    visible_to = staticmethod(_with_visible_sweep)

    class Meta:
        ordering = ["-created"]
        verbose_name = _("sweep run")

    def __str__(self) -> str:
        return f"{self.sweep} at {self.created:%Y-%m-%d %H:%M}"

    @classmethod
    def finish_if_done(cls, run_id: int) -> bool:
        """Mark the run's sweep run finished if that run was its last active one.

        Called by every end of a run. The conditional update lets one caller win; the
        execution_finished signal is sent once that caller's transaction commits.
        """
        execution_id = Run.objects.filter(pk=run_id).values_list("execution_id", flat=True).first()
        if execution_id is None:
            return False
        if Run.objects.filter(execution_id=execution_id).exclude(status__in=Run.TERMINAL).exists():
            return False
        if cls.objects.filter(pk=execution_id, finished__isnull=True).update(finished=timezone.now()) != 1:
            return False  # another run's worker got there first
        transaction.on_commit(lambda: _send_finished(execution_id))
        return True


def _send_finished(execution_id: int) -> None:
    execution = SweepExecution.objects.select_related("sweep").get(pk=execution_id)
    for receiver, result in execution_finished.send_robust(sender=SweepExecution, execution=execution):
        if isinstance(result, Exception):
            log.error("execution_finished receiver %r failed for sweep run %s", receiver, execution_id,
                      exc_info=result)


class Alert(models.Model):
    """A scheduled run, or an imported one, worse than its baseline beyond the noise band (one
    metric of one config): `execution` is the scheduled sweep run, `run` the imported run."""

    execution = models.ForeignKey(SweepExecution, models.CASCADE, related_name="alerts", null=True,
                                  blank=True)
    run = models.ForeignKey("Run", models.CASCADE, related_name="alerts", null=True, blank=True)
    config = models.ForeignKey(EngineConfig, models.CASCADE, related_name="alerts")
    job = models.CharField(max_length=30)
    benchmark = models.CharField(max_length=50)
    metric = models.CharField(max_length=50)
    label = models.CharField(max_length=100)
    baseline = models.JSONField(default=dict, help_text=_("Spread of the baseline runs' values"))
    value = models.JSONField(default=dict, help_text=_("Spread of this sweep run's values"))
    delta_pct = models.FloatField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)
    resolved = models.DateTimeField(null=True, blank=True)
    # What posting it to the sweep's webhook gave ("" when there is no webhook).
    webhook_outcome = models.CharField(max_length=300, blank=True)
    team_path = "config__engine__machine__team__"

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["resolved", "-created"])]

    def __str__(self) -> str:
        return f"{self.label} of {self.config_id} in {self.execution_id}"


class MetricsToken(HashedToken):
    """A team's bearer token for ``GET /metrics``: it shows that team's machines' series only.

    A team admin issues it (the metrics tokens page or ``manage.py metricstoken``); it is shown
    once, stored as its SHA-256, and revoked rather than deleted so the audit log keeps its name.
    """

    PREFIX = "sdm"
    team_path = "team__"

    class Meta:
        ordering = ["team", "-created"]
        verbose_name = _("metrics token")


class ConnectionCheck(models.Model):
    """A connection test of an engine URL on a machine, run by that machine's worker (the only
    box that may fetch it; runs.worker.connection): what answered, before the engine is saved or run.

    ``result``: reachable, and api, models, version, spec_counters, or error (engines.clients.probe).
    """

    machine = models.ForeignKey(Machine, models.CASCADE, related_name="connection_checks")
    engine = models.ForeignKey(Engine, models.SET_NULL, null=True, blank=True,
                               related_name="connection_checks")
    kind = models.CharField(max_length=20, choices=engine_kinds.choices)
    base_url = models.URLField(max_length=300)
    api_key = models.CharField(max_length=300, blank=True)  # emptied once the check has run
    result = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(default=timezone.now)
    finished = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    team_path = "machine__team__"

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"check of {self.base_url} on {self.machine_id}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.pk, "machine": self.machine.name, "kind": self.kind, "base_url": self.base_url,
                "finished": self.finished.isoformat() if self.finished else None, "result": self.result}
