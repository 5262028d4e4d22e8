"""Parity of a comparison, without Django: did the compared runs measure under the same conditions?

Runs are only comparable when they used the same sampling (temperature, top_p, top_k, seed),
max tokens, context length, prompt set, parallel slots and thinking (off, on, or on with a
budget, and the reasoning effort): a model that reasons first answers differently, later and
with more tokens, so two configs that differ in thinking are not like-for-like. Each run hands
in its settings as a mapping; runs are checked job by job (a speed run's max tokens is not an
MMLU-Pro run's), and a field is a mismatch when the runs of one job hold more than one value of
it, whether the values differ between configs or between runs of one config.

A value that a run did not record (a prompt set from before it was recorded) is left out rather
than counted as a difference; "default" (None) is a value: the engine's default is not 0.9.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

__all__ = ["FIELDS", "NOT_RECORDED", "Mismatch", "check_parity", "show_value"]

# (key, label): the settings that must match, in the order a warning lists them.
FIELDS: list[tuple[str, str]] = [
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("top_k", "top_k"),
    ("seed", "seed"),
    ("max_tokens", "max tokens"),
    ("context_length", "context length"),
    ("prompt_set", "prompt set"),
    ("parallel", "parallel slots"),
    ("thinking", "thinking"),
    ("reasoning_effort", "reasoning effort"),
]
# Marks a setting the run did not record (not the same as None, the engine's default).
NOT_RECORDED = object()


class Mismatch(TypedDict):
    # the jobs whose runs differ the same way (one line for speed and MMLU-Pro runs alike)
    jobs: list[str]
    field: str
    label: str
    # config name -> the distinct values its runs used, as shown
    values: dict[str, list[str]]


def show_value(value: Any) -> str:
    """A setting as a warning lists it: None is the engine's default; 0.70 reads 0.7."""
    if value is None:
        return "default"
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    return str(value)


def check_parity(runs: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[Mismatch]:
    """Every field whose value differs among the runs of one job; [] when the runs are on par.

    Jobs whose runs differ the same way share one mismatch, in the order of FIELDS.

    :param runs: (config name, job, settings) per run; a key missing from settings (or set to
        NOT_RECORDED) was not recorded by that run
    """
    by_job: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for config, job, settings in runs:
        by_job.setdefault(job, []).append((config, settings))
    mismatches: list[Mismatch] = []
    for key, label in FIELDS:
        for job, members in sorted(by_job.items()):
            values = _field_values(key, members)
            if len({value for shown in values.values() for value in shown}) < 2:
                continue
            same = next((m for m in mismatches if m["field"] == key and m["values"] == values), None)
            if same:
                same["jobs"].append(job)
            else:
                mismatches.append({"jobs": [job], "field": key, "label": label, "values": values})
    return mismatches


def _field_values(key: str, members: list[tuple[str, Mapping[str, Any]]]) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for config, settings in members:
        value = settings.get(key, NOT_RECORDED)
        if value is NOT_RECORDED:
            continue
        shown = values.setdefault(config, [])
        if show_value(value) not in shown:
            shown.append(show_value(value))
    return values
