"""factory_boy factories for the models, shared by every test module."""
from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from engines.models import Engine, EngineConfig, Machine
from runs.models import Run, Sample, Schedule, Sweep, SweepExecution


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password("password")


class MachineFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Machine

    name = factory.Sequence(lambda n: f"spark-{n}")
    bandwidth_gbps = 273.0
    memory_gb = 121.0


class EngineFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Engine

    machine = factory.SubFactory(MachineFactory)
    name = factory.Sequence(lambda n: f"engine-{n}")
    kind = Engine.Kind.LLAMA_SERVER
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
    machine = factory.LazyAttribute(lambda run: run.config.engine.machine)
    job = Run.Job.SPEED
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
