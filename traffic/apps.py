"""The traffic app's configuration."""
from django.apps import AppConfig


class TrafficConfig(AppConfig):
    """Real traffic relayed to a machine's engine."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "traffic"
