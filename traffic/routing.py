"""Websocket routes of the traffic app."""
from django.urls import path

from traffic.consumers import TrafficConsumer

websocket_urlpatterns = [
    # django-stubs types path() for Django views only; channels routes ASGI apps with it too.
    path("ws/traffic/<int:machine_id>/", TrafficConsumer.as_asgi()),  # type: ignore[arg-type]
]
