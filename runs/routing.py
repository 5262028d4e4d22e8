"""Websocket routes of the runs app."""
from django.urls import path

from runs.live.consumers import RunConsumer

websocket_urlpatterns = [
    # django-stubs types path() for Django views only; channels routes ASGI apps with it too.
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),  # type: ignore[arg-type]
]
