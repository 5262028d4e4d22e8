"""Websocket routes of the runs app."""
from django.urls import path

from runs.live.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
]
