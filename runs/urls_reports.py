"""URLs of the runs app's reports pages (included by runs/urls.py, in the "runs" namespace)."""
from django.urls import path

from runs import prometheus, views_compare

urlpatterns: list = [
    path("compare/", views_compare.compare_page, name="compare"),
    path("metrics", prometheus.metrics, name="metrics"),
]
