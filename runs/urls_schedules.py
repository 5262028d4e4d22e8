"""URLs of the runs app's schedules pages (included by runs/urls.py, in the "runs" namespace)."""

urlpatterns: list = [
]
