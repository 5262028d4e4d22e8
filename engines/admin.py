"""Admin for machines, engines and configs (teams are teams.admin's); an engine's api_key is
write-only here too.

The admin is for superusers: it is not scoped by team (engines.access scopes the pages).
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from engines.models import Engine, EngineConfig, Machine
from teams.admin_audit import AuditedAdmin
from teams.models import Team


class EngineAdminForm(forms.ModelForm):
    """Never renders the stored api_key; leaving the field empty keeps it."""

    # Engines on a LAN usually speak plain http; typing "box:8000" should not become https.
    base_url = forms.URLField(label="base URL", max_length=300, assume_scheme="http")
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Write-only. Leave empty to keep the current key.",
    )
    clear_api_key = forms.BooleanField(required=False, label="Remove the stored API key")

    class Meta:
        model = Engine
        fields = ["machine", "name", "kind", "base_url", "api_key", "clear_api_key", "simulator",
                  "merge_system_messages"]

    def clean_api_key(self) -> str:
        new = self.cleaned_data.get("api_key", "")
        return new or (self.instance.api_key if self.instance.pk else "")

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if data.get("clear_api_key"):
            data["api_key"] = ""
        return data


@admin.register(Machine)
class MachineAdmin(AuditedAdmin):
    list_display = ["name", "team", "host", "bandwidth_gbps", "memory_gb", "queue_name"]
    list_filter = ["team"]

    def audit_team(self, obj: Machine) -> Team | None:
        return obj.team


@admin.register(Engine)
class EngineAdmin(AuditedAdmin):
    form = EngineAdminForm
    list_display = ["name", "kind", "machine", "base_url", "simulator"]
    list_filter = ["kind", "machine", "simulator"]

    def audit_team(self, obj: Engine) -> Team | None:
        return obj.machine.team


@admin.register(EngineConfig)
class EngineConfigAdmin(AuditedAdmin):
    list_display = ["name", "engine", "model", "quantization", "speculative_method", "lookahead"]
    list_filter = ["engine"]
    search_fields = ["name", "model"]

    def audit_team(self, obj: EngineConfig) -> Team | None:
        return obj.machine.team
