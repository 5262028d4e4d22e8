"""URLs of the engines app (machines, engines, configs)."""
from django.urls import path

app_name = "engines"
urlpatterns: list = []
