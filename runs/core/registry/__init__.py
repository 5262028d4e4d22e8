"""The job registry: the job kinds, found by scanning the folders of runs.core.jobs.

Everything that names a job kind reads it from here: the run and sweep forms, the bench command,
the worker, the run page's chart script and template part, the sweep grid's headline figures,
the scorecard, compare and alerts. A job kind is one folder, runs/core/jobs/<name>/, whose
kind.py holds its JOB (parameters, summary type, metrics), beside its core loop, run page part
(page.html) and script (view.js); no list names it. docs/architecture.md walks through adding one.
Plain Python, no Django.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
from pathlib import Path
from typing import Any

import runs.core.jobs
from measure.words import gettext_noop
from runs.core.jobs.params import Param, ParamError
from runs.core.jobs.spec import JobConfig, JobContext, JobSpec
from runs.core.readings import Benchmark, ScoredMetric

__all__ = [
    "BENCHMARKS",
    "DEFAULT_JOB",
    "JOBS",
    "JOB_OF_BENCHMARK",
    "JOB_ORDER",
    "METRICS",
    "SCORED_JOBS",
    "JobConfig",
    "JobContext",
    "JobSpec",
    "check",
    "get",
    "job_choices",
    "params_by_name",
    "register",
    "rescan",
    "scan",
    "startable_choices",
    "unregister",
]

KIND_MODULE = "kind"  # the module of a job kind's folder that holds its JOB


def scan() -> dict[str, JobSpec]:
    """Every job kind: the JOB of each folder of runs.core.jobs (its __path__) that has a kind.py,
    with the folder it was found in, in their order; ValueError for two folders of one name."""
    specs: list[JobSpec] = []
    for found in pkgutil.iter_modules(runs.core.jobs.__path__, "runs.core.jobs."):
        module = f"{found.name}.{KIND_MODULE}"
        if found.ispkg and importlib.util.find_spec(module) is not None:
            loaded = importlib.import_module(module)
            folder = Path(loaded.__file__ or "").parent
            spec = dataclasses.replace(loaded.JOB, folder=folder)
            if any(s.name == spec.name for s in specs):
                raise ValueError(f"job kind {spec.name!r} is in two folders (the second: {folder})")
            specs.append(spec)
    return check({spec.name: spec for spec in sorted(specs, key=lambda s: (s.order, s.name))})


def check(jobs: dict[str, JobSpec]) -> dict[str, JobSpec]:
    """The job kinds, if each parameter name takes one kind of value in all of them; else ValueError.

    One form field and one bench option serve each name (the first job's label, each job's own
    help), so "requests" can't be a file of recorded requests in one job and a count in another.
    """
    first: dict[str, tuple[str, Any]] = {}
    for spec in jobs.values():
        for name, param in spec.params.items():
            job, seen = first.setdefault(name, (spec.name, param))
            if type(seen) is not type(param):
                raise ValueError(f"job {spec.name}: parameter {name!r} is already a {type(seen).__name__} "
                                 f"({seen.label}) in job {job}; give it another name")
    return jobs


# Each is changed in place by register(), so a module that imported one by name sees the change.
JOBS: dict[str, JobSpec] = {}
JOB_ORDER: dict[str, int] = {}
BENCHMARKS: list[Benchmark] = []
METRICS: list[ScoredMetric] = []
JOB_OF_BENCHMARK: dict[str, str] = {}
SCORED_JOBS: list[str] = []


def _index(jobs: dict[str, JobSpec]) -> None:
    ordered = dict(sorted(jobs.items(), key=lambda item: (item[1].order, item[0])))
    JOBS.clear()
    JOBS.update(ordered)
    JOB_ORDER.clear()
    JOB_ORDER.update({name: i for i, name in enumerate(JOBS)})
    BENCHMARKS[:] = [b for spec in JOBS.values() for b in spec.benchmarks]
    METRICS[:] = [m for spec in JOBS.values() for m in spec.metrics]
    JOB_OF_BENCHMARK.clear()
    JOB_OF_BENCHMARK.update({b.name: b.job for b in BENCHMARKS})
    SCORED_JOBS[:] = sorted({b.job for b in BENCHMARKS})


def register(spec: JobSpec) -> None:
    """Add a job kind besides the modules here (a test's, say): the forms, worker, scorecards,
    compare and exports read it from then on, as they read the others."""
    _index(check({**JOBS, spec.name: spec}))


def unregister(name: str) -> None:
    """Take a job kind added by register() away again."""
    _index({key: spec for key, spec in JOBS.items() if key != name})


def rescan() -> None:
    """Find the job kinds again (a test that put a folder of its own on runs.core.jobs.__path__)."""
    _index(scan())


_index(scan())
DEFAULT_JOB: str = next(iter(JOBS))  # what a form or `bench` without a job starts


def params_by_name() -> dict[str, tuple[Param, list[str]]]:
    """Every parameter name of the job kinds: its first declaration, and the kinds that take it.

    One form field and one `bench` option serve each name (check() keeps its kind of value one).
    """
    found: dict[str, tuple[Param, list[str]]] = {}
    for job, spec in JOBS.items():
        for name, param in spec.params.items():
            found.setdefault(name, (param, []))[1].append(job)
    return found


def get(name: str) -> JobSpec:
    """The job kind called `name`; ValueError naming the known ones otherwise."""
    spec = JOBS.get(name)
    if spec is None:
        raise ParamError(gettext_noop("job must be one of %(names)s, not %(value)s"),
                         names=", ".join(sorted(JOBS)), value=repr(name))
    return spec


def job_choices() -> list[tuple[str, str]]:
    """(name, label) of every job kind, in order: Run.job's choices."""
    return [(spec.name, spec.label) for spec in JOBS.values()]


def startable_choices() -> list[tuple[str, str]]:
    """(name, label) of the job kinds a form, the bench command or a schedule can start."""
    return [(spec.name, spec.label) for spec in JOBS.values() if spec.startable]
