"""URLs of the runs app's sweeps pages (included by runs/urls.py, in the "runs" namespace)."""
from django.urls import path

from runs import views_sweeps

urlpatterns: list = [
    path("sweeps/", views_sweeps.sweep_list, name="sweep-list"),
    path("sweeps/new/", views_sweeps.sweep_new, name="sweep-new"),
    path("sweeps/<int:pk>/", views_sweeps.sweep_detail, name="sweep-detail"),
    path("sweeps/<int:pk>/edit/", views_sweeps.sweep_edit, name="sweep-edit"),
    path("sweeps/<int:pk>/start/", views_sweeps.sweep_start, name="sweep-start"),
    path("sweep-runs/<int:pk>/", views_sweeps.sweep_run, name="sweep-run"),
    path("api/sweep-runs/<int:pk>", views_sweeps.api_sweep_run, name="api-sweep-run"),
]
