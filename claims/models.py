"""A claim (what someone published: its source, what it ran, its workload and figures) and the checks
of it on a machine here, each figure's result with its interval and verdict.

A claim never changes once saved (a corrected claim is a new one); the same file twice is one
claim of a team (its content's SHA-256). A check's runs are ordinary runs in the history.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from claims.core.metrics import CLAIM_METRICS
from claims.core.verdicts import VERDICTS
from engines.models import Engine, EngineConfig
from runs.models import Run
from teams.models import Team

__all__ = ["Check", "Claim", "ClaimImmutable", "ClaimSchedule", "ClaimedFigure", "FigureResult"]


class ClaimImmutable(ValueError):
    """A saved claim or figure was to be changed: a corrected claim is a new one."""


IMMUTABLE = "a claim never changes after it is saved; import the corrected file as a new claim"


class FrozenQuerySet(models.QuerySet[Any]):
    """A queryset whose bulk update is refused: a claim's rows are written once."""

    def update(self, **kwargs: Any) -> int:
        raise ClaimImmutable(IMMUTABLE)


class Frozen(models.Model):
    """A row that is created once and never saved again."""

    objects = FrozenQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ClaimImmutable(IMMUTABLE)
        super().save(*args, **kwargs)


class Claim(Frozen):
    """What someone published about an engine's speed, as they stated it."""

    class Origin(models.TextChoices):
        CLAIM_FILE = "claim-file", _("claim file")
        RECIPE = "recipe", _("Spark Arena recipe")
        RESULT_FILE = "result-file", _("result file")

    team = models.ForeignKey(Team, models.PROTECT, related_name="claims")
    sha256 = models.CharField(max_length=64, editable=False)  # of the file (and its recipe) as given
    origin = models.CharField(max_length=20, choices=Origin.choices)
    text = models.TextField(blank=True)  # the claim file as given
    recipe_text = models.TextField(blank=True)  # the recipe it named, as read
    recipe_name = models.CharField(max_length=300, blank=True)  # the recipe it mirrors (registry path, name)
    created = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)
    # Source.
    title = models.CharField(max_length=300)
    url = models.URLField(max_length=500, blank=True)
    author = models.CharField(max_length=200, blank=True)
    published = models.DateField(null=True, blank=True)
    # What it ran.
    engine_kind = models.CharField(max_length=40, blank=True)  # a SparkDash engine kind, or the claim's words
    engine_version = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=300, blank=True)
    quantization = models.CharField(max_length=50, blank=True)
    bytes_per_token_gb = models.FloatField(null=True, blank=True)
    speculative_method = models.CharField(max_length=50, blank=True)
    lookahead = models.PositiveIntegerField(null=True, blank=True)
    launch_settings = models.JSONField(default=dict, blank=True)  # other settings, by name, as stated
    extra_flags = models.JSONField(default=list, blank=True)  # command-line tokens, as stated
    machine_class = models.CharField(max_length=100, blank=True)  # "DGX Spark"
    accelerator = models.CharField(max_length=100, blank=True)  # "GB10"
    bandwidth_gbps = models.FloatField(null=True, blank=True)
    memory_gb = models.FloatField(null=True, blank=True)
    nodes = models.PositiveIntegerField(default=1)
    # Workload.
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    concurrency_levels = models.JSONField(default=list, blank=True)
    context_depth = models.PositiveIntegerField(null=True, blank=True)
    output_type = models.CharField(max_length=50, blank=True)
    sampling = models.JSONField(default=dict, blank=True)
    thinking = models.BooleanField(null=True, blank=True)
    runs = models.PositiveIntegerField(null=True, blank=True)  # how many runs the claim says it took
    tolerance_pct = models.FloatField(default=5.0)

    team_path = "team__"  # who sees it (engines.access)

    class Meta:
        ordering = ["-created"]
        constraints = [models.UniqueConstraint(fields=["team", "sha256"], name="claim_file_once_per_team")]

    def __str__(self) -> str:
        return self.title


class ClaimedFigure(Frozen):
    """One figure a claim states: a metric at a concurrency level."""

    claim = models.ForeignKey(Claim, models.CASCADE, related_name="figures")
    metric = models.CharField(max_length=40, choices=[(key, key) for key in CLAIM_METRICS])
    concurrency = models.PositiveIntegerField(default=1)
    value = models.FloatField()
    unit = models.CharField(max_length=20)
    aggregate = models.BooleanField(default=False)  # over all streams of the level, not per stream
    runs = models.PositiveIntegerField(null=True, blank=True)  # over how many runs, where stated
    spread = models.FloatField(null=True, blank=True)  # the stated ± (the claim's unit), where stated
    note = models.CharField(max_length=300, blank=True)

    team_path = "claim__team__"

    class Meta:
        ordering = ["claim", "metric", "concurrency"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "metric", "concurrency"], name="claimed_figure_once")
        ]

    def __str__(self) -> str:
        return f"{self.metric} @ {self.concurrency}: {self.value:g} {self.unit}"


class Check(models.Model):
    """A check of a claim on a machine's engine: the claim's workload run here, then a verdict per figure."""

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    claim = models.ForeignKey(Claim, models.PROTECT, related_name="checks")
    engine = models.ForeignKey(Engine, models.PROTECT, related_name="claim_checks")
    config = models.ForeignKey(
        EngineConfig, models.PROTECT, null=True, blank=True, related_name="claim_checks"
    )
    repetitions = models.PositiveIntegerField(default=3)  # runs per level
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    error = models.TextField(blank=True)
    not_carried_over = models.JSONField(default=list, blank=True)  # [{"setting", "why"}]
    cannot_reproduce = models.JSONField(default=list, blank=True)  # [{"what", "why"}], said before running
    differences = models.JSONField(default=list, blank=True)  # [{"what", "claim", "here"}]
    runs = models.ManyToManyField(Run, blank=True, related_name="claim_checks")
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)

    team_path = "claim__team__"

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"check {self.pk} of {self.claim} on {self.engine}"


class FigureResult(models.Model):
    """One claimed figure against what the check measured."""

    check_run = models.ForeignKey(Check, models.CASCADE, related_name="results")
    figure = models.ForeignKey(ClaimedFigure, models.CASCADE, related_name="results")
    verdict = models.CharField(max_length=20, choices=[(v, v) for v in VERDICTS], blank=True)
    median = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    n = models.PositiveIntegerField(default=0)
    delta_pct = models.FloatField(null=True, blank=True)
    values = models.JSONField(default=list, blank=True)  # one per run, the claim's unit
    run_ids = models.JSONField(default=list, blank=True)
    ceiling = models.JSONField(null=True, blank=True)  # the roofline's arithmetic, for exceeds-hardware
    # inconclusive: how many runs would narrow the interval to the tolerance
    runs_needed = models.PositiveIntegerField(null=True, blank=True)
    reason = models.CharField(max_length=300, blank=True)

    team_path = "check_run__claim__team__"

    class Meta:
        ordering = ["check_run", "figure"]
        constraints = [models.UniqueConstraint(fields=["check_run", "figure"], name="figure_result_once")]

    def __str__(self) -> str:
        return f"{self.figure}: {self.verdict or 'pending'}"


class ClaimSchedule(models.Model):
    """A claim re-checked every night on an engine here (claims.schedules fires it); a figure that was
    ``reproduced`` and is no longer raises an alert (claims.alerts)."""

    claim = models.ForeignKey(Claim, models.CASCADE, related_name="schedules")
    engine = models.ForeignKey(Engine, models.CASCADE, related_name="claim_schedules")
    config = models.ForeignKey(
        EngineConfig, models.SET_NULL, null=True, blank=True, related_name="claim_schedules"
    )
    repetitions = models.PositiveIntegerField(default=3)
    hour = models.PositiveSmallIntegerField(default=2)  # the hour of the night it fires, in time_zone
    time_zone = models.CharField(max_length=64, default="UTC")
    enabled = models.BooleanField(default=True)
    last_fired = models.DateTimeField(null=True, blank=True)
    last_check = models.ForeignKey(Check, models.SET_NULL, null=True, blank=True, related_name="+")
    last_error = models.CharField(max_length=500, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True)

    team_path = "claim__team__"

    class Meta:
        ordering = ["claim", "engine"]
        constraints = [models.UniqueConstraint(fields=["claim", "engine"], name="claim_schedule_once")]

    def __str__(self) -> str:
        return f"nightly check of {self.claim} on {self.engine}"
