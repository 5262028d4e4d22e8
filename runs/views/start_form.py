"""The form that starts a run of a config: which job, and its parameters (from the job registry)."""
from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.utils.text import capfirst
from django.utils.translation import gettext, gettext_lazy

from runs.core import registry
from runs.core.jobs.params import (
    ChoiceParam,
    FractionListParam,
    IntListParam,
    IntParam,
    Param,
    ParamError,
    RequestsParam,
)

__all__ = ["REPLAY_MAX_BYTES", "StartJobForm", "error_text", "job_choices", "param_field", "param_help",
           "read_upload"]

# The replay file's limit, as runs.core.jobs.replay.loop.parse_jsonl applies it to the text.
REPLAY_MAX_BYTES = 5_000_000


def param_field(param: Param) -> forms.Field:
    """The form field of one parameter; ranges are checked by its clean(), which names the field."""
    if isinstance(param, IntParam):
        return forms.IntegerField(label=gettext_lazy(param.label), required=False)
    if isinstance(param, ChoiceParam):
        return forms.ChoiceField(label=gettext_lazy(param.label), choices=list(param.choices), required=False)
    if isinstance(param, RequestsParam):
        accept = forms.ClearableFileInput(attrs={"accept": ".jsonl,.ndjson,.json,.txt"})
        return forms.FileField(label=gettext_lazy(param.label), required=False, widget=accept)
    if isinstance(param, IntListParam | FractionListParam):
        field = forms.CharField(label=gettext_lazy(param.label), required=False, max_length=200)
        if isinstance(param, IntListParam):
            field.widget.attrs["placeholder"] = ",".join(str(v) for v in param.default)
        return field
    return forms.CharField(label=gettext_lazy(param.label), required=False, max_length=500)


def param_help(param: Param) -> str:
    """What a parameter does, its range and default, in the reader's language."""
    text, values = param.help_text()
    limits = gettext(text) % values
    if not param.what:
        return limits
    return gettext("%(what)s (%(limits)s)") % {"what": gettext(param.what), "limits": limits}


def error_text(exc: ValueError) -> str:
    """A refused value's message in the reader's language (a ParamError's template), else as it is."""
    if not isinstance(exc, ParamError):
        return str(exc)
    values = {k: error_text(v) if isinstance(v, ParamError) else v for k, v in exc.values.items()}
    return gettext(exc.text) % values


def job_choices() -> list[tuple[str, Any]]:
    """The job kinds with their labels in the reader's language."""
    return [(name, gettext_lazy(label)) for name, label in registry.startable_choices()]


def read_upload(upload: Any) -> str | None:
    """An uploaded file of recorded requests as text (None: no file); ValidationError if too big
    or not UTF-8."""
    if not upload:
        return None
    if upload.size > REPLAY_MAX_BYTES:
        raise forms.ValidationError(gettext("the file is %(size)s bytes; the limit is 5 MB")
                                    % {"size": f"{upload.size:,}"})
    try:
        return str(upload.read().decode("utf-8"))
    except UnicodeDecodeError:
        raise forms.ValidationError(gettext("the file is not UTF-8 text")) from None


class StartJobForm(forms.Form):
    """A run of any job: which job, and its parameters (blank: the job's default).

    One field per parameter name of any job kind (the first job that declares a name gives its
    field): the chosen job's fields go to start_run as they are, the others are ignored.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["job"] = forms.ChoiceField(label=gettext_lazy("Job"), choices=job_choices(),
                                               required=False)
        self.takers = {name: jobs for name, (_, jobs) in registry.params_by_name().items()}
        for name, (param, _) in registry.params_by_name().items():
            self.fields[name] = param_field(param)

    @property
    def chosen_job(self) -> str:
        """The job the form shows fields for: the posted one, else the initial one, else speed."""
        job = self.data.get("job") if self.is_bound else self.initial.get("job")
        return job if job in registry.JOBS else registry.DEFAULT_JOB

    def parameter_rows(self) -> list[dict[str, Any]]:
        """Each parameter field with the jobs that take it, and its label and help per job (two jobs
        may share a name for different things: the needle's prompt lengths, the lookahead lengths)."""
        rows = []
        for name, jobs in self.takers.items():
            params = {job: registry.JOBS[job].params[name] for job in jobs}
            helps = {job: param_help(param) for job, param in params.items()}
            labels = {job: capfirst(gettext(param.label)) for job, param in params.items()}
            rows.append({
                "field": self[name],
                "jobs": " ".join(jobs),
                "shown": self.chosen_job in jobs,
                "label": labels.get(self.chosen_job) or capfirst(str(self[name].label)),
                "labels": json.dumps(labels, ensure_ascii=False),
                "help": helps.get(self.chosen_job, ""),
                "helps": json.dumps(helps, ensure_ascii=False),
            })
        return rows

    def clean_job(self) -> str:
        # A form posted without a job (the speed form before this one) starts a speed run.
        return self.cleaned_data.get("job") or registry.DEFAULT_JOB

    def clean_requests(self) -> str | None:
        return read_upload(self.cleaned_data.get("requests"))

    def params(self) -> dict[str, Any]:
        """The chosen job's parameters that were filled in, for start_run."""
        job = self.cleaned_data["job"]
        values = {name: self.cleaned_data.get(name) for name in registry.get(job).params}
        return {name: value for name, value in values.items() if value not in (None, "")}

    def add_start_error(self, exc: ValueError) -> None:
        """start_run's refusal, on the field its message starts with, else above the form."""
        first = re.split(r"[\s:]", str(exc), maxsplit=1)[0]
        self.add_error(first if first in self.fields else None, error_text(exc))
