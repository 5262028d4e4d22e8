"""The project package as an app: it connects the account signals (sparkdash.accounts) and starts
the embedded default's scheduler in the web process `manage.py serve` starts."""
from django.apps import AppConfig


class SparkDashConfig(AppConfig):
    """Registered after django-axes, so the failed-login log line sees axes' count for the request."""

    name = "sparkdash"

    def ready(self) -> None:
        """Connect the failed-login and lockout loggers; start the scheduler where serve asks for it."""
        from runs.actions import scheduler
        from sparkdash import accounts

        accounts.connect()
        # Here, once every app is ready: only in the process whose environment serve marked (its
        # daphne, on the embedded default); everywhere else start() does nothing.
        scheduler.start()
