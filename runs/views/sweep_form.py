"""The sweep form: configs, jobs (a checkbox and an optional JSON params box each), repetitions.

The webhook URL is never rendered back: the form says whether one is set, a blank field keeps
it, a new URL replaces it and "remove the webhook" clears it.
"""
from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.forms import BoundField

from engines.access import User, visible
from engines.models import EngineConfig
from runs.actions.sweeps import clean_jobs
from runs.core import registry
from runs.models import Sweep

__all__ = ["SweepForm"]


def _slug(job: str) -> str:
    return job.replace("-", "_")


def _defaults(job: str) -> str:
    """The job's defaults as JSON (the params box's placeholder): what a blank box means."""
    defaults = {}
    for name, spec in registry.get(job).params.items():
        default = getattr(spec, "default", None)
        if default not in (None, ""):
            defaults[name] = list(default) if isinstance(default, tuple) else default
    return json.dumps(defaults)


def _config_label(config: EngineConfig) -> str:
    return f"{config.name} ({config.engine.name})"


class ConfigChoiceField(forms.ModelChoiceField):
    """One config, offered as "name (engine)"."""

    def label_from_instance(self, obj: EngineConfig) -> str:
        return _config_label(obj)


class ConfigsChoiceField(forms.ModelMultipleChoiceField):
    """Configs, each offered as "name (engine)"."""

    def label_from_instance(self, obj: EngineConfig) -> str:
        return _config_label(obj)


class SweepForm(forms.ModelForm):
    """A sweep; `jobs` is built from the job checkboxes and their params boxes in clean()."""

    webhook_url = forms.URLField(
        label="webhook URL", required=False, max_length=500, assume_scheme="https",
        help_text="regression alerts are posted here as JSON",
    )
    clear_webhook = forms.BooleanField(label="remove the webhook", required=False)

    class Meta:
        model = Sweep
        fields = ["name", "configs", "repetitions", "baseline", "noise_floor_pct"]
        labels = {"noise_floor_pct": "noise floor (%)", "baseline": "baseline config"}
        help_texts = {
            "repetitions": "runs of each config and job (1\u201320)",
            "baseline": "deltas in the grid are against this config (one of the sweep's configs)",
            "noise_floor_pct": "a regression must be worse than the baseline's spread and than this",
        }
        widgets = {"configs": forms.SelectMultiple(attrs={"size": 8})}
        field_classes = {"configs": ConfigsChoiceField, "baseline": ConfigChoiceField}

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the user's teams' configs are offered; another team's posted pk is an invalid choice.
        configs = visible(user, EngineConfig.objects.select_related("engine").order_by("name"))
        for name in ("configs", "baseline"):
            cast("forms.ModelChoiceField[EngineConfig]", self.fields[name]).queryset = configs
        self.initial["webhook_url"] = ""  # never sent back to the browser
        chosen = {entry["job"]: entry.get("params") or {} for entry in self.instance.jobs or []}
        for job, label in registry.job_choices():
            self._add_job_fields(job, label, chosen)

    def _add_job_fields(self, job: str, label: str, chosen: dict[str, dict[str, Any]]) -> None:
        slug, names = _slug(job), ", ".join(registry.get(job).params)
        self.fields[f"job_{slug}"] = forms.BooleanField(label=label, required=False, initial=job in chosen)
        self.fields[f"params_{slug}"] = forms.CharField(
            label=f"{job} parameters (JSON)", required=False,
            widget=forms.Textarea(attrs={"rows": 2, "placeholder": _defaults(job)}),
            initial=json.dumps(chosen[job]) if chosen.get(job) else "",
            help_text=f"a JSON object with any of: {names}; blank: the defaults shown",
        )

    @property
    def webhook_is_set(self) -> bool:
        return bool(self.instance.webhook_url)

    def setting_fields(self) -> list[BoundField]:
        """The sweep's own settings (the model fields), for the template."""
        return [self[name] for name in self.Meta.fields]

    def job_fields(self) -> list[tuple[BoundField, BoundField]]:
        """(checkbox, params box) of each job, in the registry's order, for the template."""
        return [(self[f"job_{_slug(job)}"], self[f"params_{_slug(job)}"]) for job in registry.JOBS]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        jobs = [entry for job in registry.JOBS if (entry := self._clean_job(job, cleaned))]
        if not jobs and not any(name.startswith("params_") for name in self.errors):
            self.add_error(None, "jobs: choose at least one job")
        self.instance.jobs = jobs
        configs, baseline = cleaned.get("configs"), cleaned.get("baseline")
        if baseline is not None and configs is not None and baseline not in configs:
            self.add_error("baseline", f"{baseline.name} is not one of the sweep's configs")
        if cleaned.get("clear_webhook"):
            self.instance.webhook_url = ""
        elif cleaned.get("webhook_url"):
            self.instance.webhook_url = cleaned["webhook_url"]
        return cleaned

    def _clean_job(self, job: str, cleaned: dict[str, Any]) -> dict[str, Any] | None:
        """The job's entry if its box is ticked, its params validated; errors go to its params box."""
        slug = _slug(job)
        if not cleaned.get(f"job_{slug}"):
            return None
        text = (cleaned.get(f"params_{slug}") or "").strip()
        try:
            params = json.loads(text) if text else {}
            return clean_jobs([{"job": job, "params": params}])[0]
        except json.JSONDecodeError as exc:
            self.add_error(f"params_{slug}", f"{job}: the parameters are not valid JSON ({exc.msg})")
        except ValueError as exc:
            self.add_error(f"params_{slug}", str(exc))
        return None
