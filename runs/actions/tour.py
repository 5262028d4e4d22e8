"""The demo tour: one click queues what a newcomer should see first, on the demo's simulated engines.

A speed run of each demo config, then a lookahead sweep of each (queued behind the speed run on
the same machine), a comparison of the two speed runs, and two runs on the first config that raise
warnings worth knowing: a prefix-cache probe whose conversation outgrows the prompt cache (the
cache-discard warning) and an agent task that reads one file over and over (the read-loop warning,
answered after the watchdog withdraws its tools: outcome rescued). Every run is a real run of the
SparkDash simulator through the usual path (queue, worker, engine, results); nothing is prefilled.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext

from engines.models import EngineConfig
from runs.actions.runs import start_run
from runs.core.jobs.spec import TourStep
from runs.core.registry import JOBS
from runs.models import Run

__all__ = ["TOUR_CONFIGS", "Tour", "TourUnavailable", "has_tour", "start_tour", "tour_runs"]

# The demo configs the tour runs (examples/demo.yaml): an MoE on llama-server, a dense 27B on Ollama.
TOUR_CONFIGS = ("sim-moe-mtp8", "sim-27b-q8-la12")


def _step(step: TourStep) -> list[tuple[str, dict]]:
    """The job kinds whose run is in the tour's `step` (each kind says, JobSpec.tour), in order,
    with their runs' parameters."""
    return [(name, dict(spec.tour[1])) for name, spec in JOBS.items() if spec.tour and spec.tour[0] == step]


class TourUnavailable(Exception):
    """The demo configs the tour needs are not loaded (or are not the simulator)."""


@dataclass(frozen=True)
class Tour:
    """The runs one tour queued: a speed run and a lookahead sweep per demo config, and the
    first config's runs that raise warnings."""

    speed: list[Run]
    sweeps: list[Run]
    warnings: list[Run]

    @property
    def compare_url(self) -> str:
        """The compare page of the speed runs."""
        return "/compare/?" + urlencode({"runs": ",".join(str(r.pk) for r in self.speed)})

    @property
    def ids(self) -> list[int]:
        return [r.pk for r in self.runs]

    @property
    def runs(self) -> list[Run]:
        return self.speed + self.sweeps + self.warnings


def demo_configs(configs: QuerySet[EngineConfig]) -> list[EngineConfig]:
    """The tour's configs among `configs` (those the user may see), in TOUR_CONFIGS order.

    Raises TourUnavailable if one is missing or is not on the simulator.
    """
    found = {c.name: c for c in configs.select_related("engine").filter(name__in=TOUR_CONFIGS)}
    missing = [name for name in TOUR_CONFIGS if name not in found or not found[name].engine.simulator]
    if missing:
        raise TourUnavailable(
            gettext("the demo configs %(names)s are not loaded: run `manage.py demo` (make run does)")
            % {"names": ", ".join(missing)}
        )
    return [found[name] for name in TOUR_CONFIGS]


def has_tour(configs: QuerySet[EngineConfig]) -> bool:
    """Whether the tour's demo configs are among `configs`, on the simulator."""
    try:
        demo_configs(configs)
    except TourUnavailable:
        return False
    return True


def start_tour(
    configs: QuerySet[EngineConfig],
    user: User | AnonymousUser | None = None,
    request: HttpRequest | None = None,
) -> Tour:
    """Queue the tour's runs: each config's speed run first, so the comparison is ready soonest."""
    demo = demo_configs(configs)

    def each(step: TourStep, on: list[EngineConfig]) -> list[Run]:
        return [start_run(config, job, params, user, request=request)
                for job, params in _step(step) for config in on]

    speed, sweeps = each("compared", demo), each("sweeps", demo)
    return Tour(speed, sweeps, each("warnings", demo[:1]))  # on the first config, after its sweep


def tour_runs(runs_seen: QuerySet[Run], ids: list[int]) -> Tour | None:
    """A tour from its run ids among `runs_seen`; None if one is missing or they are not a tour's runs."""
    runs = runs_seen.select_related("config__engine").in_bulk(ids)
    found = [runs[pk] for pk in ids if pk in runs]
    if len(found) != len(ids) or not found:
        return None
    steps: tuple[TourStep, ...] = ("compared", "sweeps", "warnings")
    jobs = [[job for job, _ in _step(step)] for step in steps]
    tour = Tour(*([r for r in found if r.job in step] for step in jobs))
    shaped = len(tour.speed) == len(tour.sweeps) == len(TOUR_CONFIGS)
    shaped = shaped and [r.job for r in tour.warnings] == jobs[2] and len(tour.runs) == len(found)
    return tour if shaped else None
