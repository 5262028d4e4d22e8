"""URLs of the runs app's schedules pages (included by runs/urls.py, in the "runs" namespace)."""
from django.urls import path

from runs import views_schedules

urlpatterns: list = [
    path("schedules/", views_schedules.schedule_list, name="schedule-list"),
    path("schedules/new/", views_schedules.schedule_create, name="schedule-create"),
    path("schedules/<int:pk>/edit/", views_schedules.schedule_edit, name="schedule-edit"),
    path("schedules/<int:pk>/delete/", views_schedules.schedule_delete, name="schedule-delete"),
    path("alerts/", views_schedules.alert_list, name="alert-list"),
    path("alerts/<int:pk>/resolve/", views_schedules.alert_resolve, name="alert-resolve"),
]
