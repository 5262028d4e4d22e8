"""URLs of the engines app: creating and editing a config, and a config matrix (a config's page and
the home overview are runs')."""
from django.urls import path

from engines import views

app_name = "engines"
urlpatterns = [
    path("configs/new/", views.config_create, name="config-create"),
    path("configs/<int:pk>/edit/", views.config_edit, name="config-edit"),
    path("configs/<int:pk>/matrix/", views.config_matrix, name="config-matrix"),
    path("configs/<int:pk>/archive/", views.config_archive, name="config-archive"),
    path("machines/<int:pk>/bandwidth/clear/", views.machine_bandwidth_clear, name="machine-bandwidth-clear"),
]
