"""URLs of the runs app's sweeps pages (included by runs/urls.py, in the "runs" namespace)."""

urlpatterns: list = [
]
