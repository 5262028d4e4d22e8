"""Admin for runs: read-mostly, since runs are written by workers."""
from __future__ import annotations

from django.contrib import admin

from runs.models import Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "config", "machine", "job", "status", "progress_done", "progress_total", "created"]
    list_filter = ["status", "job", "machine"]
    list_select_related = ["config", "machine"]
    readonly_fields = ["summary", "provenance", "progress_done", "progress_total", "started", "finished"]
    raw_id_fields = ["config", "created_by"]
