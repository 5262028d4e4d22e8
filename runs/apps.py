"""App config for runs."""
from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connect the signal receivers: schedules keep their beat task in step, alerts check
        # finished scheduled sweep runs.
        from runs.actions import alerts, schedules, setup  # noqa: F401

        # The engine set-up pages (engines) test a connection through runs' worker.
        setup.register()
