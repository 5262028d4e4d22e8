"""URLs of the runs app: pages, the JSON API and the polling fallback (all in the "runs" namespace)."""
from django.urls import path

from runs.results import prometheus
from runs.views import api, compare, configs, metrics_tokens, results, run_page, schedules, sweeps, tour

app_name = "runs"
urlpatterns = [
    path("", configs.home, name="home"),
    path("tour/", tour.tour_page, name="tour"),
    path("configs/", configs.config_list, name="config-list"),
    path("configs/<int:pk>/", configs.config_detail, name="config-detail"),
    path("configs/<int:pk>/start/", configs.config_start_run, name="config-start-run"),
    path("runs/", run_page.run_list, name="list"),
    path("results/", results.results_table, name="results"),
    path("runs/<int:pk>/", run_page.run_detail, name="detail"),
    path("runs/<int:pk>/cancel/", run_page.run_cancel, name="cancel"),
    path("runs/<int:pk>/log/", run_page.run_log, name="log"),
    path("api/runs/<int:pk>", api.run_detail, name="api-run"),
    path("api/runs/<int:pk>/samples", api.run_samples, name="api-samples"),
    path("compare/", compare.compare_page, name="compare"),
    path("compare/configs/", compare.compare_configs_page, name="compare-configs"),
    path("metrics", prometheus.metrics, name="metrics"),
    path("teams/<int:pk>/metrics-tokens/", metrics_tokens.token_list, name="metrics-tokens"),
    path("teams/<int:pk>/metrics-tokens/<int:token_pk>/revoke/", metrics_tokens.token_revoke,
         name="metrics-token-revoke"),
    path("sweeps/", sweeps.sweep_list, name="sweep-list"),
    path("sweeps/new/", sweeps.sweep_new, name="sweep-new"),
    path("sweeps/<int:pk>/", sweeps.sweep_detail, name="sweep-detail"),
    path("sweeps/<int:pk>/edit/", sweeps.sweep_edit, name="sweep-edit"),
    path("sweeps/<int:pk>/start/", sweeps.sweep_start, name="sweep-start"),
    path("sweep-runs/<int:pk>/", sweeps.sweep_run, name="sweep-run"),
    path("api/sweep-runs/<int:pk>", sweeps.api_sweep_run, name="api-sweep-run"),
    path("schedules/", schedules.schedule_list, name="schedule-list"),
    path("schedules/new/", schedules.schedule_create, name="schedule-create"),
    path("schedules/<int:pk>/edit/", schedules.schedule_edit, name="schedule-edit"),
    path("schedules/<int:pk>/delete/", schedules.schedule_delete, name="schedule-delete"),
    path("alerts/", schedules.alert_list, name="alert-list"),
    path("alerts/<int:pk>/resolve/", schedules.alert_resolve, name="alert-resolve"),
]
