"""factory_boy factories for the models, shared by every test module.

Users and machines join the "default" team unless given one (`UserFactory(teams=[team])`,
`MachineFactory(team=team)`), so tests that don't care about teams see everything they make.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.utils import timezone

from engines import revisions
from engines.models import Engine, EngineConfig, Machine
from runs.models import Alert, ConnectionCheck, Run, Sample, Schedule, Sweep, SweepExecution
from teams.models import Team
from traffic.models import TrafficRecord
from traffic.relay import record as relay_record


@cache
def _hashed_password() -> str:
    # Hashing costs a second on a busy box; every user gets the same hash of "password".
    return make_password("password")


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.LazyFunction(_hashed_password)

    @factory.post_generation
    def teams(self, create, extracted, **kwargs):
        if create:
            self.teams.set(extracted if extracted is not None else [Team.default()])


class RelayRecordFactory(factory.Factory):
    """A relayed request's record as the relay hands it to its sink (plain Python, not a row)."""

    class Meta:
        model = relay_record.TrafficRecord

    key = factory.LazyFunction(relay_record.new_key)
    front = "ollama"
    path = "/api/chat"
    client = "127.0.0.1:50000 ollama-python/0.4"
    model = "qwen3-coder:30b"
    arrived = factory.Sequence(lambda n: 1_780_000_000.0 + n)
    upstream = "openai"
    ttft_s = 0.21
    generation_s = 1.9
    e2e_s = 2.2
    decode_tps_client = 41.0
    decode_tps_engine = 43.5
    prompt_tokens = 1800
    new_prompt_tokens = 120
    output_tokens = 79
    output_type = "prose-en"
    finish_reason = "stop"
    conversation = factory.Sequence(lambda n: f"conv{n % 3}")
    turn = 2


class TeamFactory(factory.django.DjangoModelFactory):
    """A team; pass members=[...] to set its members."""

    class Meta:
        model = Team
        django_get_or_create = ("name",)
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"team-{n}")

    @factory.post_generation
    def members(self, create, extracted, **kwargs):
        if create and extracted:
            self.members.set(extracted)


class MachineFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Machine

    name = factory.Sequence(lambda n: f"spark-{n}")
    team = factory.LazyFunction(Team.default)
    bandwidth_gbps = 273.0
    memory_gb = 121.0


class EngineFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Engine

    machine = factory.SubFactory(MachineFactory)
    name = factory.Sequence(lambda n: f"engine-{n}")
    kind = "llama-server"
    base_url = factory.Sequence(lambda n: f"http://127.0.0.1:{18000 + n}")
    api_key = ""
    simulator = False


class EngineConfigFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EngineConfig

    engine = factory.SubFactory(EngineFactory)
    name = factory.Sequence(lambda n: f"config-{n}")
    model = "qwen3-coder-30b-a3b"
    quantization = "Q4_K_M"
    lookahead = 0
    max_tokens = 256


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    config = factory.SubFactory(EngineConfigFactory)
    revision = factory.LazyAttribute(lambda run: revisions.record(run.config))
    machine = factory.LazyAttribute(lambda run: run.config.engine.machine)
    job = "speed"
    params = factory.LazyFunction(lambda: {"reps": 3, "max_tokens": 256})
    status = Run.Status.QUEUED


class SampleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Sample

    run = factory.SubFactory(RunFactory)
    seq = factory.Sequence(lambda n: n)
    t = factory.LazyAttribute(lambda s: float(s.seq))
    kind = "request"
    values = factory.LazyFunction(
        lambda: {
            "prompt": "tool-call-en",
            "output_type": "tool_call",
            "rep": 0,
            "ttft_s": 0.21,
            "decode_tps_client": 41.5,
            "decode_tps_engine": 42.0,
            "prefill_tps": 1800.0,
            "e2e_s": 6.4,
            "acceptance_rate": 0.72,
            "tokens_per_verification": 3.9,
            "output_tokens": 256,
            "prompt_tokens": 900,
        }
    )


def telemetry_values(
    phase: str = "job", gpu: bool = False, throttle: list[str] | None = None
) -> dict[str, Any]:
    """One 10 Hz "telemetry" sample's values (docs: issue 17 contract); GPU fields only when `gpu`."""
    values: dict[str, Any] = {
        "phase": phase, "cpu_load": 0.35, "mem_used_bytes": 12_000_000_000, "mem_total_bytes": 64_000_000_000,
    }
    if gpu:
        values.update(
            power_w=71.0, sm_clock_mhz=2400, mem_clock_mhz=4266, temperature_c=68, gpu_util_pct=95,
            throttle=list(throttle or []),
        )
    return values


class TelemetrySampleFactory(SampleFactory):
    """A "telemetry" sample of a machine with no GPU telemetry; pass values=telemetry_values(...)."""

    kind = "telemetry"
    t = factory.LazyAttribute(lambda s: s.seq / 10)
    values = factory.LazyFunction(telemetry_values)


def _spread(median: float, low: float, high: float, n: int = 100) -> dict[str, float]:
    return {"median": median, "min": low, "max": high, "n": n}


def telemetry_summary(gpu: bool = False, throttled_s: float = 0.0) -> dict[str, Any]:
    """A run's summary["telemetry"] as the sampler writes it: host only, or with NVML (and energy)."""
    summary: dict[str, Any] = {
        "gpu": gpu, "note": None if gpu else "no GPU telemetry on this machine",
        "sources": ["host", "nvml"] if gpu else ["host"], "rate_hz": 10.0, "readings": 312,
        "memory_source": "meminfo",
        "baseline": {
            "s": 2.0, "readings": 20, "power_w": 18.0 if gpu else None, "cpu_power_w": None, "cpu_load": 0.03,
        },
        "during": {
            "power_w": _spread(70.0, 60.0, 80.0) if gpu else None,
            "sm_clock_mhz": _spread(2400, 1800, 2500) if gpu else None,
            "temperature_c": _spread(68, 50, 84) if gpu else None,
            "gpu_util_pct": _spread(95, 40, 100) if gpu else None,
            "cpu_load": _spread(0.35, 0.1, 0.6), "mem_used_bytes": _spread(12e9, 11e9, 13e9),
        },
        "peak_mem_used_bytes": 13_500_000_000,
        "throttle": {
            "throttled": throttled_s > 0, "throttled_s": throttled_s, "job_s": 60.0,
            "reasons_s": {"thermal": throttled_s, "power_cap": 0.0, "hw_slowdown": 0.0, "clock_below": 0.0},
            "clock_floor_mhz": 2400 if gpu else None,
        },
        "energy": None, "energy_note": None if gpu else "no power reading on this machine",
    }
    if gpu:
        figures = {"j_per_token": 1.2, "j_per_request": 60.0, "tokens": 100, "requests": 2}
        summary["energy"] = {
            "power_source": "gpu", "baseline_w": 18.0, **figures, "decode_s": 2.0,
            "by_output_type": {"tool-call": dict(figures)},
            "by_concurrency": {"1": dict(figures), "4": dict(figures)},
        }
    return summary


class SweepFactory(factory.django.DjangoModelFactory):
    """A sweep of speed runs; pass configs=[...] to set its configs."""

    class Meta:
        model = Sweep
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"sweep-{n}")
    jobs = factory.LazyFunction(lambda: [{"job": "speed", "params": {"reps": 1, "warmup": 0}}])
    repetitions = 2

    @factory.post_generation
    def configs(self, create, extracted, **kwargs):
        if create and extracted:
            self.configs.set(extracted)


class SweepExecutionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SweepExecution

    sweep = factory.SubFactory(SweepFactory)


class ScheduleFactory(factory.django.DjangoModelFactory):
    """A sweep's schedule: nightly at 02:00 UTC unless every_seconds is set."""

    class Meta:
        model = Schedule

    sweep = factory.SubFactory(SweepFactory)


class AlertFactory(factory.django.DjangoModelFactory):
    """A regression alert of a sweep run's config (decode speed 10 % below the baseline)."""

    class Meta:
        model = Alert

    execution = factory.SubFactory(SweepExecutionFactory)
    config = factory.SubFactory(EngineConfigFactory)
    job = "speed"
    benchmark = "speed"
    metric = "decode_tps_client"
    label = "decode tok/s"
    baseline = factory.LazyFunction(lambda: {"median": 40.0, "min": 39.0, "max": 41.0, "n": 3})
    value = factory.LazyFunction(lambda: {"median": 36.0, "min": 35.0, "max": 37.0, "n": 3})
    delta_pct = -10.0


class TrafficRecordFactory(factory.django.DjangoModelFactory):
    """One relayed chat request: a tool-call answer at 40 tok/s, arrived now, no bodies captured.

    Pass conversation/turn for a conversation's steps and request_body/response_text for bodies.
    """

    class Meta:
        model = TrafficRecord

    key = factory.Sequence(lambda n: f"{n:032x}")
    machine = factory.SubFactory(MachineFactory)
    front = "openai"
    upstream = "openai"
    path = "/v1/chat/completions"
    client = "127.0.0.1 agent/1.0"
    model = "qwen3-coder-30b-a3b"
    arrived = factory.LazyFunction(timezone.now)
    status = 200
    ttft_s = 0.4
    generation_s = 3.0
    e2e_s = 4.0
    decode_tps_client = 40.0
    decode_tps_engine = 41.0
    prompt_tokens = 2000
    new_prompt_tokens = 200
    output_tokens = 121
    output_type = "tool-call"
    draft_tokens = 100
    accepted_tokens = 90
    finish_reason = "tool_calls"
    error = ""
    conversation = ""
    turn = 2
    tool_calls = factory.LazyFunction(list)


@dataclass
class TeamWorld:
    """One team's users and everything on its machine; every name starts with the team's prefix."""

    team: Team
    owner: Any
    teammate: Any
    machine: Machine
    engine: Engine
    config: EngineConfig
    run: Run
    sweep: Sweep
    execution: SweepExecution
    schedule: Schedule
    alert: Alert
    traffic: TrafficRecord
    check: ConnectionCheck


def team_world(prefix: str) -> TeamWorld:
    """A team with an owner (who made everything) and a teammate, a machine, an engine, a config,
    a succeeded run with a sample, a sweep with a finished scheduled sweep run, a schedule, an
    open alert and a relayed request with its captured body (conversation key f"{prefix}conv");
    names start with `prefix`, so a page can be searched for another team's names."""
    team = TeamFactory(name=f"{prefix}-team")
    owner = UserFactory(username=f"{prefix}_owner", teams=[team])
    teammate = UserFactory(username=f"{prefix}_mate", teams=[team])
    machine = MachineFactory(name=f"{prefix}-box", team=team)
    engine = EngineFactory(machine=machine, name=f"{prefix}-engine")
    config = EngineConfigFactory(engine=engine, name=f"{prefix}-config")
    sweep = SweepFactory(name=f"{prefix}-sweep", configs=[config], baseline=config, created_by=owner)
    execution = SweepExecutionFactory(
        sweep=sweep, trigger=SweepExecution.Trigger.SCHEDULE, finished=timezone.now(), created_by=owner
    )
    summary = {"decode_tps_client": {"median": 41.5, "min": 40.0, "max": 43.0, "n": 3}}
    run = RunFactory(
        config=config, status=Run.Status.SUCCEEDED, created_by=owner, execution=execution, summary=summary,
        engine_log=f"{prefix}-log line",
    )
    SampleFactory(run=run, seq=0)
    schedule = ScheduleFactory(sweep=sweep, created_by=owner)
    alert = AlertFactory(execution=execution, config=config, label=f"{prefix}-alert")
    traffic = TrafficRecordFactory(
        machine=machine, engine=engine, model=f"{prefix}-model", conversation=f"{prefix}conv",
        request_body={"model": f"{prefix}-model",
                      "messages": [{"role": "user", "content": f"{prefix}-secret"}]},
        response_text=f"{prefix}-answer",
    )
    check = ConnectionCheck.objects.create(machine=machine, engine=engine, kind="llama-server",
                                           base_url=f"http://127.0.0.1:9/{prefix}-check")
    return TeamWorld(team, owner, teammate, machine, engine, config, run, sweep, execution, schedule, alert,
                     traffic, check)


def telemetry(
    j_per_token: float | None = None, j_per_request: float | None = None, throttled_s: float = 0.0,
    by_concurrency: dict[str, dict[str, float]] | None = None,
) -> dict[str, Any]:
    """A summary["telemetry"] as the issue 17 sampler writes it: energy where J figures are given
    (else energy None and the CI machine's energy_note), throttled where throttled_s > 0."""
    energy = None
    if j_per_token is not None:
        energy = {"power_source": "gpu", "baseline_w": 18.0, "j_per_token": j_per_token,
                  "j_per_request": j_per_request, "tokens": 100, "requests": 2, "decode_s": 2.0,
                  "by_output_type": {}, "by_concurrency": by_concurrency or {}}
    return {
        "gpu": energy is not None, "note": None if energy else "no GPU telemetry on this machine",
        "throttle": {"throttled": throttled_s > 0, "throttled_s": throttled_s, "job_s": 60.0,
                     "reasons_s": {"thermal": throttled_s}, "clock_floor_mhz": None},
        "energy": energy, "energy_note": None if energy else "no power reading on this machine",
    }


def throttled_warning(seconds: float) -> dict[str, Any]:
    """The run warning a throttled run gets."""
    message = f"throttled for {seconds:.1f} s of the 60.0 s job: thermal {seconds:.1f} s"
    return {"kind": "throttled", "message": message, "throttled_s": seconds}


def request_outcomes(attempted: int, failed: int, reason: str = "http 500") -> dict[str, Any]:
    """A summary's `outcomes` of `attempted` requests, `failed` of them for `reason`, counted by
    runs/core/outcomes.py (the rest cut by max_tokens)."""
    from runs.core.outcomes import count_outcomes

    rows = [{"failed": reason, "error": f"request {i + 1}: {reason}"} for i in range(failed)]
    return count_outcomes(rows + [{"finish_reason": "length"}] * (attempted - failed))
