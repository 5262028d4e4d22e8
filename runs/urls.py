"""URLs of the runs app."""
from django.urls import path

app_name = "runs"
urlpatterns: list = []
