"""The claims app's configuration."""

from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    """Claims: what someone published, and checks of it on a machine here."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "claims"

    def ready(self) -> None:
        """Connect the alert on a done check, and the nightly checks to the embedded scheduler's tick."""
        from claims import alerts, schedules  # noqa: F401 (alerts connects its receiver)
        from runs.actions import scheduler

        scheduler.also_tick(schedules.tick)
