"""A stored claim and a finished check of it, as the claims pages' tests need them."""

from __future__ import annotations

import textwrap
from typing import Any

from django.utils import timezone

from claims.core.reading import read_claim_file
from claims.intake import store_claim
from claims.models import Check, Claim, FigureResult
from runs.models import Run
from tests.factories import EngineConfigFactory, RunFactory

CLAIM_YAML = textwrap.dedent("""\
    claim:
      source: {title: "Gemma on a Spark", url: "https://example.org/post", author: "someone"}
      hardware: {name: "DGX Spark", bandwidth_gbps: 273, nodes: 1}
      engine: {kind: llama-server, version: "b11434"}
      model: {name: gemma3-270m, quantization: Q4_K_M, bytes_per_token_gb: 0.25}
      settings: {speculative_method: ngram-simple, lookahead: 4}
      workload: {output_tokens: 16, concurrency: [1, 2], sampling: {temperature: 0}, thinking: false}
      figures:
        - {metric: decode_tps, concurrency: 1, value: 56.0}
        - {metric: decode_tps, concurrency: 2, value: 50.0}
        - {metric: ttft_ms, concurrency: 1, value: 120}
""")


def make_claim(team: Any, text: str = CLAIM_YAML) -> Claim:
    return store_claim(team, read_claim_file("claim.yaml", text), text)[0]


def finished_check(
    claim: Claim,
    config: Any = None,
    verdicts: dict[str, str] | None = None,
    medians: dict[str, float] | None = None,
) -> Check:
    """A done check of ``claim``: one run, each figure a result (reproduced unless ``verdicts`` says)."""
    config = config or EngineConfigFactory(engine__machine__team=claim.team, quantization="Q4_K_M")
    run = RunFactory(
        config=config,
        job="concurrency",
        status=Run.Status.SUCCEEDED,
        finished=timezone.now(),
        provenance={"engine_version": "b12000", "quantization": "Q4_K_M", "config": config.snapshot()},
    )
    check = Check.objects.create(
        claim=claim,
        engine=config.engine,
        config=config,
        repetitions=3,
        status=Check.Status.DONE,
        finished=timezone.now(),
    )
    check.runs.add(run)
    for figure in claim.figures.all():
        key = f"{figure.metric}@{figure.concurrency}"
        median = (medians or {}).get(key, figure.value)
        FigureResult.objects.create(
            check_run=check,
            figure=figure,
            verdict=(verdicts or {}).get(key, "reproduced"),
            median=median,
            ci_low=median * 0.98,
            ci_high=median * 1.02,
            n=3,
            delta_pct=(median - figure.value) / figure.value * 100,
            values=[median * 0.99, median, median * 1.01],
            run_ids=[run.pk],
        )
    return check
