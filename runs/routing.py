"""Websocket routes of the runs app."""
websocket_urlpatterns: list = []
