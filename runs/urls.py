"""URLs of the runs app: pages, the JSON API and the polling fallback."""
from django.urls import path

from runs import api, urls_reports, urls_schedules, urls_sweeps, views, views_compare

app_name = "runs"
urlpatterns = [
    path("runs/", views.run_list, name="list"),
    path("runs/<int:pk>/", views.run_detail, name="detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="cancel"),
    path("runs/<int:pk>/log/", views.run_log, name="log"),
    path("compare/configs/", views_compare.compare_configs_page, name="compare-configs"),
    path("api/runs/<int:pk>", api.run_detail, name="api-run"),
    path("api/runs/<int:pk>/samples", api.run_samples, name="api-samples"),
    *urls_sweeps.urlpatterns,
    *urls_schedules.urlpatterns,
    *urls_reports.urlpatterns,
]
