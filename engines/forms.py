"""Forms of the engines app: editing a config and starting a run of it."""
from __future__ import annotations

import json
import re
from typing import Any, cast

from django import forms

from engines.access import User, visible
from engines.models import Engine, EngineConfig
from runs.jobs import (
    JOB_PARAMS,
    ChoiceParam,
    DatasetParam,
    FixtureParam,
    FractionListParam,
    IntListParam,
    IntParam,
)
from runs.models import Run

__all__ = ["REPLAY_MAX_BYTES", "EngineConfigForm", "StartJobForm"]

# The replay file's limit, as runs.core.replay.parse_jsonl applies it to the text.
REPLAY_MAX_BYTES = 5_000_000
EN_DASH = "\u2013"


class EngineConfigForm(forms.ModelForm):
    """Every setting of a config; the model's validators bound each field."""

    class Meta:
        model = EngineConfig
        fields = [
            "name", "engine", "model", "quantization", "speculative_method", "draft_model",
            "lookahead", "draft_n_min", "draft_p_min", "kv_cache_dtype", "prefix_caching",
            "context_length", "parallel", "threads", "cache_ram_mib", "max_num_batched_tokens",
            "attention_backend", "moe_backend", "bytes_per_token_gb", "temperature", "top_p", "top_k", "seed",
            "max_tokens", "extra_flags", "notes",
        ]
        widgets = {
            "extra_flags": forms.Textarea(attrs={"rows": 2}),
            "notes": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the user's teams' engines are offered; another team's posted pk is an invalid choice.
        field = cast("forms.ModelChoiceField[Engine]", self.fields["engine"])
        field.queryset = visible(user, Engine.objects.select_related("machine"))


def _help(spec: object) -> str:
    """One parameter's range and default, as runs.jobs defines them."""
    if isinstance(spec, IntParam):
        default = "the config's" if spec.default is None else spec.default
        return f"{spec.low}{EN_DASH}{spec.high}, default {default}"
    if isinstance(spec, IntListParam):
        default = ",".join(str(v) for v in spec.default)
        return f"comma-separated, each {spec.low}{EN_DASH}{spec.high}, default {default}"
    if isinstance(spec, FractionListParam):
        return f"comma-separated fractions 0{EN_DASH}1, default {','.join(str(v) for v in spec.default)}"
    if isinstance(spec, ChoiceParam):
        return f"{' or '.join(spec.choices)}, default {spec.choices[0]}"
    if isinstance(spec, DatasetParam):
        return ("a file or folder on the worker in the dataset's own format, sample (a few shipped "
                "questions), or blank to download it")
    if isinstance(spec, FixtureParam):
        shipped = "a shipped fixture (routes_47, routes_12)"
        return f"{shipped} or a folder with one source file and truth.csv; default {spec.default}"
    return "a JSON Lines file of recorded chat request bodies, one a line, up to 5 MB"


class StartJobForm(forms.Form):
    """A run of any job: which job, and its parameters (blank: the job's default).

    Field names are runs.jobs.JOB_PARAMS' names: the chosen job's fields go to start_run as
    they are, the others are ignored. Ranges are left to start_run, whose ValueError names the
    field (add_start_error puts it there).
    """

    job = forms.ChoiceField(choices=Run.Job.choices, required=False)
    reps = forms.IntegerField(label="repetitions", required=False)
    warmup = forms.IntegerField(label="warm-up requests", required=False)
    max_tokens = forms.IntegerField(label="max tokens per answer", required=False)
    lengths = forms.CharField(label="lookahead lengths", required=False, max_length=200)
    levels = forms.CharField(label="concurrency levels", required=False, max_length=200)
    answer_tokens = forms.IntegerField(label="answer tokens", required=False)
    steps = forms.IntegerField(label="conversation steps", required=False)
    bytes_per_step = forms.IntegerField(label="source bytes per step", required=False)
    depths = forms.CharField(label="needle depths", required=False, max_length=200)
    fixture = forms.CharField(label="agent fixture", required=False, max_length=500)
    max_steps = forms.IntegerField(label="step limit", required=False)
    suite = forms.ChoiceField(
        label="suite", choices=[("humaneval", "HumanEval+"), ("mbpp", "MBPP+")], required=False
    )
    dataset = forms.CharField(label="dataset", required=False, max_length=500)
    limit = forms.IntegerField(label="question limit", required=False)
    num_fewshot = forms.IntegerField(label="few-shot examples", required=False)
    requests = forms.FileField(
        label="recorded requests (.jsonl)",
        required=False,
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.ndjson,.json,.txt"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("lengths", "levels"):
            default = JOB_PARAMS["lookahead" if name == "lengths" else "concurrency"][name].default
            self.fields[name].widget.attrs["placeholder"] = ",".join(str(v) for v in default)

    @property
    def chosen_job(self) -> str:
        """The job the form shows fields for: the posted one, else the initial one, else speed."""
        job = self.data.get("job") if self.is_bound else self.initial.get("job")
        return job if job in JOB_PARAMS else Run.Job.SPEED

    def parameter_rows(self) -> list[dict[str, Any]]:
        """Each parameter field with the jobs that take it and its help per job."""
        rows = []
        for name in self.fields:
            jobs = [job for job, schema in JOB_PARAMS.items() if name in schema]
            if not jobs:
                continue
            helps = {job: _help(JOB_PARAMS[job][name]) for job in jobs}
            rows.append({
                "field": self[name],
                "jobs": " ".join(jobs),
                "shown": self.chosen_job in jobs,
                "help": helps.get(self.chosen_job, ""),
                "helps": json.dumps(helps, ensure_ascii=False),
            })
        return rows

    def clean_job(self) -> str:
        # A form posted without a job (the speed form before this one) starts a speed run.
        return self.cleaned_data.get("job") or Run.Job.SPEED

    def clean_requests(self) -> str | None:
        upload = self.cleaned_data.get("requests")
        if not upload:
            return None
        if upload.size > REPLAY_MAX_BYTES:
            raise forms.ValidationError(f"the file is {upload.size:,} bytes; the limit is 5 MB")
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise forms.ValidationError("the file is not UTF-8 text") from None

    def params(self) -> dict[str, Any]:
        """The chosen job's parameters that were filled in, for start_run."""
        job = self.cleaned_data["job"]
        values = {name: self.cleaned_data.get(name) for name in JOB_PARAMS[job]}
        return {name: value for name, value in values.items() if value not in (None, "")}

    def add_start_error(self, exc: ValueError) -> None:
        """start_run's refusal, on the field its message starts with, else above the form."""
        message = str(exc)
        first = re.split(r"[\s:]", message, maxsplit=1)[0]
        self.add_error(first if first in self.fields else None, message)
