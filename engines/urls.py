"""URLs of the engines app (home overview and configs)."""
from django.urls import path

from engines import views

app_name = "engines"
urlpatterns = [
    path("", views.home, name="home"),
    path("configs/", views.config_list, name="config-list"),
    path("configs/new/", views.config_create, name="config-create"),
    path("configs/<int:pk>/", views.config_detail, name="config-detail"),
    path("configs/<int:pk>/edit/", views.config_edit, name="config-edit"),
    path("configs/<int:pk>/start/", views.config_start_run, name="config-start-run"),
]
