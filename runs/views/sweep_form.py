"""The sweep form: configs, jobs (a checkbox each, with a field per parameter from the job
registry), repetitions.

A job's parameter fields are the start form's (param_field), named `<job>__<parameter>`, each
with its range and default as help; a blank field takes the job's default. Stored parameters fill
them in when a sweep is edited; a stored replay's recorded requests are kept unless a new file is
given. The webhook URL is never rendered back: the form says whether one is set, a blank field
keeps it, a new URL replaces it and "remove the webhook" clears it.
"""
from __future__ import annotations

import re
from typing import Any, cast

from django import forms
from django.db.models import Q
from django.forms import BoundField
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from engines.access import User, visible
from engines.ids import KeysChoiceField
from engines.models import EngineConfig
from runs.actions.sweeps import clean_jobs
from runs.actions.webhooks import save_refusal
from runs.core import registry
from runs.core.jobs.params import IntParam, Param, RequestsParam
from runs.models import Sweep
from runs.views.start_form import param_field, param_help, read_upload
from teams.roles import Role, teams_with_role

__all__ = ["SweepForm"]


def _slug(job: str) -> str:
    return job.replace("-", "_")


def _name(job: str, param: str) -> str:
    """The form field of one job's parameter, e.g. "lookahead__lengths"."""
    return f"{_slug(job)}__{param}"


def _shown(value: Any) -> Any:
    """A stored parameter as its field shows it: a list as "0,2,4"."""
    return ",".join(str(v) for v in value) if isinstance(value, list | tuple) else value


def _job_field(param: Param, stored: dict[str, Any], name: str) -> forms.Field:
    """A parameter's field with its range and default as help (and as the browser's bounds)."""
    field = param_field(param)
    field.help_text = param_help(param)
    if isinstance(param, IntParam):
        field.widget.attrs |= {"min": param.low, "max": param.high}
        if param.default is not None:
            field.widget.attrs["placeholder"] = param.default
    if isinstance(param, RequestsParam):
        if stored.get(name):
            stored_text = gettext("%(count)s recorded requests are stored; a new file replaces them")
            field.help_text = stored_text % {"count": len(stored[name])}
    else:
        field.initial = _shown(stored.get(name))
    return field


def _config_label(config: EngineConfig) -> str:
    return f"{config.name} ({config.engine.name})"


class ConfigChoiceField(forms.ModelChoiceField):
    """One config, offered as "name (engine)"."""

    def label_from_instance(self, obj: EngineConfig) -> str:
        return _config_label(obj)


class ConfigsChoiceField(KeysChoiceField):
    """Configs, each offered as "name (engine)"."""

    def label_from_instance(self, obj: EngineConfig) -> str:
        return _config_label(obj)


class SweepForm(forms.ModelForm):
    """A sweep; `jobs` is built from the job checkboxes and their parameter fields in clean()."""

    webhook_url = forms.URLField(
        label=_("webhook URL"), required=False, max_length=500, assume_scheme="https",
        help_text=_("regression alerts are posted here as JSON"),
    )
    clear_webhook = forms.BooleanField(label=_("remove the webhook"), required=False)

    class Meta:
        model = Sweep
        fields = ["name", "configs", "repetitions", "baseline", "noise_floor_pct"]
        labels = {
            "name": _("name"), "configs": _("configs"), "repetitions": _("repetitions"),
            "noise_floor_pct": _("noise floor (%)"), "baseline": _("baseline config"),
        }
        help_texts = {
            "repetitions": _("runs of each config and job (1–20)"),  # noqa: RUF001 (the en dash a page shows)
            "baseline": _("deltas in the grid are against this config (one of the sweep's configs)"),
            "noise_floor_pct": _("a regression must be worse than the baseline's spread and than this"),
        }
        widgets = {"configs": forms.SelectMultiple(attrs={"size": 8})}
        field_classes = {"configs": ConfigsChoiceField, "baseline": ConfigChoiceField}

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the user's teams' configs are offered; another team's posted pk is an invalid choice.
        configs = visible(user, EngineConfig.objects.select_related("engine__machine").order_by("name"))
        # ... on teams where the user holds the member role (a viewer's team's configs are left out).
        configs = configs.filter(engine__machine__team__in=teams_with_role(user, Role.MEMBER))
        # Archived configs are left out, but for those the sweep has already (it keeps them).
        kept = self.instance.configs.values("pk") if self.instance.pk else []
        configs = configs.filter(Q(archived=False) | Q(pk__in=kept))
        for name in ("configs", "baseline"):
            cast("forms.ModelChoiceField[EngineConfig]", self.fields[name]).queryset = configs
        self.initial["webhook_url"] = ""  # never sent back to the browser
        chosen = {entry["job"]: entry.get("params") or {} for entry in self.instance.jobs or []}
        for job, label in registry.startable_choices():
            self._add_job_fields(job, label, chosen)

    def _add_job_fields(self, job: str, label: str, chosen: dict[str, dict[str, Any]]) -> None:
        box = forms.BooleanField(label=_(label), required=False, initial=job in chosen)
        self.fields[f"job_{_slug(job)}"] = box
        for name, param in registry.get(job).params.items():
            self.fields[_name(job, name)] = _job_field(param, chosen.get(job, {}), name)

    @property
    def webhook_is_set(self) -> bool:
        return bool(self.instance.webhook_url)

    def setting_fields(self) -> list[BoundField]:
        """The sweep's own settings (the model fields), for the template."""
        return [self[name] for name in self.Meta.fields]

    def job_fields(self) -> list[dict[str, Any]]:
        """Each job's checkbox, its parameter fields and whether to show them (ticked or in error)."""
        rows = []
        for job, spec in ((job, registry.JOBS[job]) for job, _label in registry.startable_choices()):
            box, params = self[f"job_{_slug(job)}"], [self[_name(job, name)] for name in spec.params]
            shown = bool(box.value()) or any(field.errors for field in [box, *params])
            rows.append({"job": job, "box": box, "params": params, "open": shown})
        return rows

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        startable = [job for job, _label in registry.startable_choices()]
        jobs = [entry for job in startable if (entry := self._clean_job(job, cleaned))]
        if not jobs and not any("__" in name for name in self.errors):
            self.add_error(None, gettext("jobs: choose at least one job"))
        self.instance.jobs = jobs
        configs, baseline = cleaned.get("configs"), cleaned.get("baseline")
        if baseline is not None and configs is not None and baseline not in configs:
            message = gettext("%(name)s is not one of the sweep's configs") % {"name": baseline.name}
            self.add_error("baseline", message)
        if cleaned.get("clear_webhook"):
            self.instance.webhook_url = ""
        elif cleaned.get("webhook_url"):
            self.instance.webhook_url = cleaned["webhook_url"]
        self._clean_name_in_teams(cleaned)
        return cleaned

    def clean_webhook_url(self) -> str:
        """The URL, checked against the webhook policy (runs.actions.webhooks) before it is kept."""
        url = self.cleaned_data.get("webhook_url") or ""
        if url and (why := save_refusal(url)):
            raise forms.ValidationError(why)
        return url

    def _clean_name_in_teams(self, cleaned: dict[str, Any]) -> None:
        """Sweep names are unique within the teams of the sweep's configs, not across teams:
        another team's sweep of the same name is neither in the way nor mentioned."""
        configs, name = cleaned.get("configs"), cleaned.get("name")
        if not configs or not name:
            return
        teams = {config.engine.machine.team_id for config in configs}
        same = Sweep.objects.filter(name=name, configs__engine__machine__team_id__in=teams)
        if same.exclude(pk=self.instance.pk).exists():
            message = gettext("a sweep named %(name)s already exists in this team") % {"name": name}
            self.add_error("name", message)

    def _clean_job(self, job: str, cleaned: dict[str, Any]) -> dict[str, Any] | None:
        """The job's entry if its box is ticked, its params validated; an error goes to its field."""
        if not cleaned.get(f"job_{_slug(job)}"):
            return None
        params = self._posted_params(job, cleaned)
        if params is None:
            return None
        try:
            return clean_jobs([{"job": job, "params": params}])[0]
        except ValueError as exc:
            # clean_jobs says "<job>: <parameter> ...": the error goes on that parameter's field.
            first = re.split(r"[\s:]", str(exc).removeprefix(f"{job}: "), maxsplit=1)[0]
            self.add_error(_name(job, first) if first in registry.get(job).params else None, str(exc))
        return None

    def _posted_params(self, job: str, cleaned: dict[str, Any]) -> dict[str, Any] | None:
        """The job's filled-in parameters (a stored replay file kept); None after an upload error."""
        stored = next((e.get("params") or {} for e in self.instance.jobs or [] if e["job"] == job), {})
        params = {}
        for name, param in registry.get(job).params.items():
            value = cleaned.get(_name(job, name))
            if isinstance(param, RequestsParam):
                try:
                    value = read_upload(value) or stored.get(name)
                except forms.ValidationError as exc:
                    self.add_error(_name(job, name), exc)
                    return None
            if value not in (None, ""):
                params[name] = value
        return params
