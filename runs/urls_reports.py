"""URLs of the runs app's reports pages (included by runs/urls.py, in the "runs" namespace)."""

urlpatterns: list = [
]
