"""The project package as an app: it connects the account signals (sparkdash.accounts)."""
from django.apps import AppConfig


class SparkDashConfig(AppConfig):
    """Registered after django-axes, so the failed-login log line sees axes' count for the request."""

    name = "sparkdash"

    def ready(self) -> None:
        """Connect the failed-login and lockout loggers."""
        from sparkdash import accounts

        accounts.connect()
