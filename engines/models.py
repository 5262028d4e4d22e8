"""Machines, the engines on them, and the configs a run is measured with."""

from __future__ import annotations

import shlex
from collections.abc import Collection
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from engines import kinds, revisions
from engines.validation import (
    THINKING_BUDGET_MAX,
    THINKING_BUDGET_MIN,
    launch_errors,
    refuse_name_in_team,
    thinking_errors,
)
from teams.models import DEFAULT_TEAM, Team

# The longest notes a machine or config keeps (characters): a paragraph or two, not a file.
NOTES_MAX = 4000
# Where an engine on the worker's own box listens; always allowed as an engine's host.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class Machine(models.Model):
    """One workstation. It has its own Celery queue, so two jobs never share the box."""

    # Unique within its team (the constraint below), not across teams.
    name = models.CharField(max_length=100)
    team = models.ForeignKey(Team, models.PROTECT, related_name="machines")
    host = models.CharField(
        max_length=255, blank=True,
        help_text=_("the host name or IP its engines listen on; blank: the worker's own box (loopback) only"),
    )
    bandwidth_gbps = models.FloatField(
        _("memory bandwidth (GB/s)"), validators=[MinValueValidator(0.1), MaxValueValidator(100_000)]
    )
    memory_gb = models.FloatField(
        _("memory (GB)"), validators=[MinValueValidator(0.1), MaxValueValidator(100_000)]
    )
    notes = models.TextField(blank=True, max_length=NOTES_MAX)
    capture_bodies = models.BooleanField(
        _("capture traffic bodies"), default=False,
        help_text=_("the relay stores each request's messages and answer (size-capped; only this "
        "machine's team sees them); needed to replay a recorded conversation"),
    )
    # Set by the worker when a bandwidth job on this machine succeeds (the bandwidth kind measures).
    measured_bandwidth_gbps = models.FloatField(_("measured memory bandwidth (GB/s)"), null=True, blank=True,
                                                editable=False)
    bandwidth_measured_at = models.DateTimeField(null=True, blank=True, editable=False)
    bandwidth_method = models.CharField(max_length=40, blank=True, editable=False)
    # The run that measured it; a plain id, as engines imports nothing from runs.
    bandwidth_run_id = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Set by the machine's relay every few seconds while it runs (manage.py relay).
    relay_heartbeat = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="machine_name_unique_per_team")]

    def __str__(self) -> str:
        return self.name

    def validate_unique(self, exclude: Collection[str] | None = None) -> None:
        """No other machine of the team has the name, or the same worker queue (said of this team only)."""
        super().validate_unique(exclude)
        if self.team_id is None or {"name", "team"} & set(exclude or ()):
            return
        mine = Machine.objects.filter(team_id=self.team_id).exclude(pk=self.pk)
        refuse_name_in_team(self, mine, gettext("a machine named %(name)s already exists in team %(team)s"),
                             self.team)
        other = next((m for m in mine if slugify(m.name) == slugify(self.name)), None)
        if other is not None:
            raise ValidationError({"name": gettext(
                "%(name)s would share the worker queue %(queue)s with machine %(other)s of team %(team)s "
                "(names that differ only in case, spaces or punctuation make one queue): choose another"
            ) % {"name": self.name, "queue": self.queue_name, "other": other.name, "team": self.team.name}},
                code="unique")

    def validate_constraints(self, exclude: Collection[str] | None = None) -> None:
        """The database's constraints, but the name's: validate_unique says that one in the team's words."""
        super().validate_constraints({*(exclude or ()), "name"})

    def relay_refusal(self, now: datetime | None = None) -> str | None:
        """Why no run may use this machine now, or None: its relay is serving real traffic.

        Active means a relay heartbeat within SPARKDASH_RELAY_ACTIVE_S. A run would start,
        stop or relaunch the engine under the team's agents, so it is refused rather than queued
        behind traffic that may never pause.
        """
        if self.relay_heartbeat is None:
            return None
        age = ((now or timezone.now()) - self.relay_heartbeat).total_seconds()
        if age > settings.SPARKDASH_RELAY_ACTIVE_S:
            return None
        return gettext(
            "machine %(name)s is busy: its relay is passing real traffic to its engine "
            "(last heartbeat %(age)s s ago); stop the relay to run benchmarks here"
        ) % {"name": self.name, "age": f"{max(age, 0):.0f}"}

    @property
    def queue_name(self) -> str:
        """The Celery queue a worker on this machine consumes (`celery worker -Q ...`).

        The default team's machines keep `machine.<slug>` (every older install, the demo,
        docker-compose.yml); another team's add its id, `machine.team-<id>.<slug>`: names are
        unique per team only, an id never changes or collides (team names may slugify alike),
        and a slug has no dot, so no other team's queue can equal a default-team one.
        """
        slug = slugify(self.name)
        if self.team_id is None or self.team.name == DEFAULT_TEAM:
            return f"machine.{slug}"
        return f"machine.team-{self.team_id}.{slug}"

    @property
    def command_args(self) -> str:
        """How `make worker` and `make relay` name this machine, shell-quoted: `MACHINE=... [TEAM=...]`
        (the team too outside the default one, as another team may use the same name)."""
        return self._args("MACHINE=", " TEAM=")

    @property
    def command_options(self) -> str:
        """The same for `manage.py relay` and `relaytoken`: `--machine ... [--team ...]`."""
        return self._args("--machine ", " --team ")

    def _args(self, machine: str, team: str) -> str:
        args = f"{machine}{shlex.quote(self.name)}"
        if self.team_id is not None and self.team.name != DEFAULT_TEAM:
            args += f"{team}{shlex.quote(self.team.name)}"
        return args


class Engine(models.Model):
    """An inference engine's HTTP endpoint on a machine."""

    machine = models.ForeignKey(Machine, models.PROTECT, related_name="engines")
    # Unique within the machine's team (validate_unique), not across teams.
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=kinds.choices)  # the engine-kind registry's
    base_url = models.URLField(_("base URL"), max_length=300)
    # Sent as a bearer token; never rendered on a page, in the API or in an export.
    api_key = models.CharField(max_length=300, blank=True)
    simulator = models.BooleanField(
        default=False, help_text=_("The SparkDash simulator, not a real engine (shown as such).")
    )

    class Launch(models.TextChoices):
        EXTERNAL = "external", _("external (run by you; SparkDash only probes it)")
        MANAGED = "managed", _("managed (SparkDash starts and stops it for each run)")

    launch = models.CharField(max_length=10, choices=Launch.choices, default=Launch.EXTERNAL)
    binary = models.CharField(
        max_length=300,
        blank=True,
        help_text=_("managed: the engine's program, e.g. /opt/llama.cpp/llama-server"),
    )
    merge_system_messages = models.BooleanField(
        default=False,
        help_text=_("the relay merges a request's system messages into the first one before passing it "
        "on: some chat templates answer HTTP 500 to two system messages"),
    )
    log_path = models.CharField(
        max_length=300, blank=True, help_text=_("external: a log file to tail during runs (e.g. Ollama's)")
    )
    log_command = models.CharField(
        max_length=300,
        blank=True,
        help_text=_("external: a command whose output is the log, e.g. journalctl -fu ollama"),
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} (simulator)" if self.simulator else self.name

    @property
    def managed(self) -> bool:
        return self.launch == self.Launch.MANAGED

    def clean(self) -> None:
        refusal = self.url_refusal()
        if refusal:
            raise ValidationError({"base_url": refusal})

    def validate_unique(self, exclude: Collection[str] | None = None) -> None:
        super().validate_unique(exclude)
        if self.machine_id is not None and not {"name", "machine"} & set(exclude or ()):
            refuse_name_in_team(self, Engine.objects.filter(machine__team_id=self.machine.team_id),
                                 gettext("an engine named %(name)s already exists in team %(team)s"),
                                 self.machine.team)

    def url_refusal(self) -> str | None:
        """Why the worker must not fetch base_url, or None: it must point at the engine's machine.

        Checked when an engine is saved through a form or a config file, and again by the
        worker before every run (a machine's host may have changed since).
        """
        host = (urlsplit(self.base_url).hostname or "").lower() if self.base_url else ""
        if not host or self.machine_id is None:
            return None
        allowed = set(LOOPBACK_HOSTS) | ({self.machine.host.lower()} if self.machine.host else set())
        if host in allowed:
            return None
        return gettext("the host must be the machine's (%(allowed)s), not %(host)s") % {
            "allowed": ", ".join(sorted(allowed)), "host": host,
        }


class EngineSession(models.Model):
    """One start of a managed engine; at most one open session per machine (one engine per box)."""

    machine = models.ForeignKey(Machine, models.PROTECT, related_name="engine_sessions")
    engine = models.ForeignKey("Engine", models.PROTECT, related_name="sessions")
    # The run that started it: a plain id, since engines knows nothing of runs (a foreign key
    # would make this app depend on the runs app, which depends on it).
    run_id = models.BigIntegerField(null=True, blank=True)
    command = models.JSONField(default=list)
    pid = models.IntegerField(null=True, blank=True)
    started = models.DateTimeField(auto_now_add=True)
    startup_s = models.FloatField(null=True, blank=True)
    stopped = models.DateTimeField(null=True, blank=True)
    exit_status = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-started"]
        constraints = [
            models.UniqueConstraint(
                fields=["machine"], condition=models.Q(stopped__isnull=True), name="one_engine_per_machine"
            )
        ]

    def __str__(self) -> str:
        return f"{self.engine} on {self.machine} (pid {self.pid})"


class EngineConfig(models.Model):
    """One set of engine and sampling settings that runs are measured with."""

    engine = models.ForeignKey(Engine, models.PROTECT, related_name="configs")
    # Unique within the engine's machine's team (validate_unique), not across teams.
    name = models.CharField(max_length=100)
    model = models.CharField(max_length=300)
    quantization = models.CharField(max_length=50, blank=True)
    speculative_method = models.CharField(
        max_length=50, blank=True, help_text=_("e.g. draft-simple, draft-mtp, ngram, mtp, EAGLE3")
    )
    draft_model = models.CharField(max_length=300, blank=True)
    lookahead = models.PositiveIntegerField(
        default=0, validators=[MaxValueValidator(64)], help_text=_("draft tokens per verification")
    )
    draft_n_min = models.PositiveIntegerField(null=True, blank=True, validators=[MaxValueValidator(64)])
    draft_p_min = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(1)],
        help_text=_("minimum draft token probability (llama-server --spec-draft-p-min)"),
    )
    kv_cache_dtype = models.CharField(_("KV-cache dtype"), max_length=30, blank=True)
    prefix_caching = models.BooleanField(null=True, blank=True)
    context_length = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(128), MaxValueValidator(10_000_000)]
    )
    parallel = models.PositiveIntegerField(
        _("parallel slots"), null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(1024)]
    )
    threads = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(1024)]
    )
    cache_ram_mib = models.IntegerField(
        _("prompt cache RAM (MiB)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(-1), MaxValueValidator(10_000_000)],
        help_text=_("llama-server --cache-ram / LLAMA_ARG_CACHE_RAM (-1 no limit, 0 off; default 8192)"),
    )
    max_num_batched_tokens = models.PositiveIntegerField(null=True, blank=True)
    attention_backend = models.CharField(max_length=50, blank=True)
    moe_backend = models.CharField(_("MoE backend"), max_length=50, blank=True)
    bytes_per_token_gb = models.FloatField(
        _("weights read per token (GB)"), null=True, blank=True,
        validators=[MinValueValidator(0.001), MaxValueValidator(10_000)],
        help_text=_("roofline override; empty: read from the GGUF (MoE: active experts + shared)"),
    )
    class Thinking(models.TextChoices):
        DEFAULT = "", _("engine default")
        OFF = "off", _("off")
        ON = "on", _("on (no budget)")
        BUDGET = "budget", _("on, with a token budget")

    thinking = models.CharField(
        max_length=10, choices=Thinking.choices, default=Thinking.DEFAULT, blank=True,
        help_text=_("the model's reasoning before its answer; engine default: neither asked on nor off"),
    )
    thinking_budget = models.PositiveIntegerField(
        _("thinking budget (tokens)"), null=True, blank=True,
        validators=[MinValueValidator(THINKING_BUDGET_MIN), MaxValueValidator(THINKING_BUDGET_MAX)],
        help_text=_("with thinking 'on, with a token budget': reasoning tokens before the answer "
        "(llama-server --reasoning-budget)"),
    )
    reasoning_effort = models.CharField(
        max_length=10, blank=True,
        choices=[("", _("engine default")), ("low", _("low")), ("medium", _("medium")), ("high", _("high"))],
        help_text=_("sent as reasoning_effort with every request (models that read it, e.g. gpt-oss)"),
    )
    reasoning_parser = models.CharField(
        max_length=50, blank=True,
        help_text=_("vLLM/SGLang --reasoning-parser; blank: guessed from the model name "
        "(qwen3, deepseek_r1, ...)"),
    )
    temperature = models.FloatField(default=0.0, validators=[MinValueValidator(0), MaxValueValidator(5)])
    top_p = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0), MaxValueValidator(1)])
    top_k = models.PositiveIntegerField(null=True, blank=True)
    seed = models.IntegerField(default=0)
    max_tokens = models.PositiveIntegerField(
        default=256, validators=[MinValueValidator(1), MaxValueValidator(131_072)]
    )
    extra_flags = models.TextField(
        blank=True, help_text=_("extra engine flags, as typed on its command line")
    )
    preheat_s = models.PositiveIntegerField(
        _("pre-heat (s)"), default=0, validators=[MaxValueValidator(1800)],
        help_text=_("before measuring, generate until GPU clocks and temperature settle, for at most this "
        "many seconds (0: off); a cold box is faster for its first minutes, then throttles"),
    )
    notes = models.TextField(blank=True, max_length=NOTES_MAX)
    # Archived instead of deleted: out of the lists and forms that start runs; its runs and
    # revisions stay, and restoring it brings it back.
    archived = models.BooleanField(default=False, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, revised_by: Any = None, **kwargs: Any) -> None:
        """Save, then record a revision (by ``revised_by``) if the launch or request settings changed."""
        super().save(*args, **kwargs)
        revisions.record(self, revised_by)

    def get_absolute_url(self) -> str:
        return reverse("runs:config-detail", args=[self.pk])

    def clean(self) -> None:
        errors = launch_errors(self)
        errors |= thinking_errors(self.thinking, self.thinking_budget, self.reasoning_effort)
        if errors:
            raise ValidationError(errors)

    def validate_unique(self, exclude: Collection[str] | None = None) -> None:
        super().validate_unique(exclude)
        if self.engine_id is not None and not {"name", "engine"} & set(exclude or ()):
            team = self.engine.machine.team
            refuse_name_in_team(self, EngineConfig.objects.filter(engine__machine__team=team),
                                 gettext("a config named %(name)s already exists in team %(team)s"), team)

    @property
    def thinks(self) -> bool | None:
        """What every request asks of thinking: True on, False off, None the engine's default."""
        return None if not self.thinking else self.thinking != self.Thinking.OFF

    def queue_key(self) -> tuple[Any, ...]:
        """Where this config's runs go in its machine's queue: by machine, engine, then config."""
        engine = self.engine
        return (engine.machine.name, engine.machine_id, engine.name, engine.pk, self.name, self.pk)

    @property
    def machine(self) -> Machine:
        return self.engine.machine

    def sampling(self) -> dict[str, Any]:
        """The fixed sampling settings every request of a run is sent with."""
        values: dict[str, Any] = {"temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k}
        values |= {"seed": self.seed, "max_tokens": self.max_tokens}
        values |= {"thinking": self.thinks, "reasoning_effort": self.reasoning_effort or None}
        return {k: v for k, v in values.items() if v is not None}

    def snapshot(self) -> dict[str, Any]:
        """Every setting of this config and its engine, frozen into a run's provenance."""
        fields = [f.name for f in self._meta.fields if f.name not in ("id", "engine", "created", "updated")]
        data: dict[str, Any] = {name: getattr(self, name) for name in fields}
        data["engine"] = {
            "name": self.engine.name,
            "kind": self.engine.kind,
            "base_url": self.engine.base_url,
            "simulator": self.engine.simulator,
        }
        data["machine"] = {
            "name": self.machine.name,
            "bandwidth_gbps": self.machine.bandwidth_gbps,
            "memory_gb": self.machine.memory_gb,
        }
        return data


ConfigRevision = revisions.ConfigRevision
