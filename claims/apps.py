"""The claims app's configuration."""

from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    """Claims: what someone published, and checks of it on a machine here."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "claims"
