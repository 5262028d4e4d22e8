"""What a job kind is (JobSpec) and what its run gets to work with (JobContext). Plain Python."""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from engines.clients import EngineClient
from measure.words import Words, gettext_noop
from runs.core.jobs.params import Param
from runs.core.jobs.progress import ClientPace, RunProgress
from runs.core.jobs.summary import SCHEMA_VERSION, RunSummary, SummaryError, checked
from runs.core.readings import Benchmark, Exported, ScoredMetric

__all__ = ["EngineUse", "JobConfig", "JobContext", "JobSpec", "Load", "TourStep"]

# What a job relaunching the engine per lookahead length is given: a length in, the engine's client
# and the model name to ask for out, for as long as the context lasts.
AtLookahead = Callable[[int], AbstractAsyncContextManager[tuple[EngineClient, str]]]
EngineUse = Literal["once", "per-lookahead", "none"]
# The demo tour's steps (runs.actions.tour): a run on each demo config shown under "compared" or
# "sweeps", or one on the first config that raises a warning worth knowing ("warnings"); the tour
# compares the "compared" runs.
TourStep = Literal["compared", "sweeps", "warnings"]
# The load a kind's figures are measured at, for pages that read figures by load level: one request
# at a time, at the summary's top ("single"), or per level under summary["levels"] ("levels").
Load = Literal["single", "levels"]


@dataclass(frozen=True)
class JobConfig:
    """What a job reads of the config it measures (the worker copies it from the EngineConfig)."""

    model: str
    # temperature, top_p, top_k, seed, max_tokens, thinking, reasoning_effort: the config's fixed sampling
    sampling: Mapping[str, Any]
    seed: int
    engine_kind: str
    api_key: str | None
    machine_bandwidth_gbps: float | None = None  # the machine's nominal bandwidth
    thinking_budget: int | None = None  # the config's reasoning tokens before the answer (budget mode)
    thinking_answer_budget: int = 18_432  # SPARKDASH_THINKING_ANSWER_BUDGET

    def answer_budget(self, asked: int) -> int:
        """A quality job's tokens per answer: `asked`, plus room to reason when thinking is on.

        With a thinking budget: that budget plus `asked` (the answer's room); without one:
        SPARKDASH_THINKING_ANSWER_BUDGET, or `asked` if larger. Thinking off or left to the
        engine: `asked` as it is.
        """
        if self.sampling.get("thinking") is not True:
            return asked
        if self.thinking_budget is not None:
            return self.thinking_budget + asked
        return max(asked, self.thinking_answer_budget)
    lookahead: int = 0  # the config's draft tokens per verification (0: no speculative decoding)


@dataclass
class JobContext:
    """One run's job: the engine client, the checked parameters, the config, where to report.

    `at_lookahead` is set for a job that relaunches (or re-aliases) the engine per lookahead length;
    `pace` (the run's client health) hears how a job that plans its requests' starts kept to them.
    """

    client: EngineClient
    params: dict[str, Any]
    config: JobConfig
    progress: RunProgress
    at_lookahead: AtLookahead | None = None
    pace: ClientPace | None = None


@dataclass(frozen=True)
class JobSpec:
    """A job kind, in one place: everything the forms, worker, pages, grid and scorecard read of it.

    :param order: where it sits in lists, sweep columns and queue order (lower first)
    :param run: the core function: checked parameters in, the run's summary out
    :param charted: the "request" sample fields the run page charts one point each of (thinned
        for long runs); empty: the page is sent every sample
    :param benchmarks, metrics: the scorecard rows its runs give (compare, alerts, scorecard)
    :param headline: the one figure a sweep grid shows in its column; default: the first of `metrics`
    :param exported: the Prometheus figure families of its latest run (GET /metrics)
    :param engine: how its run uses the engine: started once for the run ("once"), started by
        the job itself at each lookahead length ("per-lookahead"), or not at all, a machine
        benchmark with no engine started, probed or tailed ("none")
    :param machine_fields: a machine benchmark's Machine fields to store from a succeeded run's
        (summary, run id, finish time)
    :param long_requests: answers that are not streamed, so one read waits for a whole answer
    :param sends_prompt_set: its runs record the speed prompt set's digest (parity compares it)
    :param compared: shown in compare tables even without scorecard rows (its own rows)
    :param needs_drafting: refused (before it is queued) for a config whose lookahead is 0
    :param describe: its parameters in a few words; default: each parameter's label and value
    :param summary_type: what its summary holds (runs.core.jobs.summary), checked when stored
    :param startable: False for runs that are read, not run (imported runs): no form, bench
        option or schedule offers it, and starting one is refused
    :param load: the load its figures are measured at (Load), if compare's rows per load level and
        curve and the cross-tool view read them; None: they do not
    :param tour: its run in the demo tour, if it has one: the tour's step and the run's parameters
    :param folder: the folder it was found in (runs.core.registry.scan sets it): its run page
        part (page.html) and script (view.js) are read from there
    """

    name: str
    label: str
    order: int
    params: Mapping[str, Param]
    run: Callable[[JobContext], Awaitable[dict[str, Any]]]
    headline: ScoredMetric = None  # type: ignore[assignment]  # None: the first of `metrics` (__post_init__)
    progress_unit: str = gettext_noop("requests")
    charted: tuple[str, ...] = ()
    benchmarks: tuple[Benchmark, ...] = ()
    metrics: tuple[ScoredMetric, ...] = field(default=())
    exported: tuple[Exported, ...] = ()
    engine: EngineUse = "once"
    machine_fields: Callable[[Mapping[str, Any], int, datetime], dict[str, Any]] | None = None
    long_requests: bool = False
    sends_prompt_set: bool = False
    compared: bool = False
    needs_drafting: bool = False
    describe: Callable[[Mapping[str, Any]], Words] | None = None
    summary_type: type[RunSummary] = RunSummary
    startable: bool = True
    load: Load | None = None
    tour: tuple[TourStep, Mapping[str, Any]] | None = None
    folder: Path | None = None

    def __post_init__(self) -> None:
        if self.headline is None:
            if not self.metrics:
                raise ValueError(f"job {self.name}: a headline, or metrics whose first is the headline")
            object.__setattr__(self, "headline", self.metrics[0])

    def params_text(self, params: Mapping[str, Any]) -> Words:
        """The run's parameters in a few words (the run page's meta line), for the `words` filter."""
        if self.describe is not None:
            return self.describe(params)
        shown = [(self.params[name].label, value) for name, value in params.items() if name in self.params]
        template = gettext_noop("%(label)s %(value)s")
        return Words.joined(" · ", [Words(template, label=Words(label), value=_text(value))
                                    for label, value in shown])

    def stored(self, summary: Mapping[str, Any]) -> dict[str, Any]:
        """`summary` as it is stored: checked against `summary_type` (SummaryError if it does not
        fit) and stamped with the schema version."""
        checked(self.summary_type, summary)
        return dict(summary) | {"schema_version": SCHEMA_VERSION}

    def results(self, summary: Mapping[str, Any] | None) -> RunSummary | None:
        """A stored summary read as `summary_type`; None for none, or one that does not fit."""
        try:
            return checked(self.summary_type, summary) if summary else None
        except SummaryError:
            return None

    @property
    def script(self) -> str:
        """The run page's script of this job, as a static path (runs.job_files finds its view.js)."""
        return f"js/jobs/{self.name}.js"

    @property
    def partial(self) -> str:
        """The run page's template part of this job, as a template name (runs.job_files finds its
        page.html)."""
        return f"jobs/{self.name}/page.html"


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def count(n: Any) -> dict[str, Any]:
    """A count's figures for `Words.ngettext("%(count)s pass", "%(count)s passes", **count(n))`.

    `count` is shown ("?" for a count the run's parameters lack), `n` picks the form (the plural
    one when unknown): "1 pass", "3 passes", "? passes".
    """
    return {"n": 2 if n is None else n, "count": "?" if n is None else n}
