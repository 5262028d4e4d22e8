"""URLs of the engines app: creating and editing a config, a config matrix, adding and editing a
team's machine (under the team's path), and setting up an engine with its connection test (a
config's page and the home overview are runs')."""
from django.urls import path

from engines import machine_views, setup_views, views

app_name = "engines"
urlpatterns = [
    path("configs/new/", views.config_create, name="config-create"),
    path("configs/<int:pk>/edit/", views.config_edit, name="config-edit"),
    path("configs/<int:pk>/matrix/", views.config_matrix, name="config-matrix"),
    path("configs/<int:pk>/archive/", views.config_archive, name="config-archive"),
    path("teams/<int:pk>/machines/new/", machine_views.machine_add, name="machine-add"),
    path("teams/<int:pk>/machines/<int:machine_pk>/edit/", machine_views.machine_edit, name="machine-edit"),
    path("engines/new/", setup_views.engine_create, name="engine-create"),
    path("engines/<int:pk>/", setup_views.engine_detail, name="engine-detail"),
    path("engines/<int:pk>/edit/", setup_views.engine_edit, name="engine-edit"),
    path("engines/<int:pk>/check/", setup_views.engine_check, name="engine-check"),
    path("api/connection-checks/<int:pk>", setup_views.check_detail, name="api-connection-check"),
    path("machines/<int:pk>/bandwidth/clear/", views.machine_bandwidth_clear, name="machine-bandwidth-clear"),
]
