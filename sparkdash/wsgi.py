"""WSGI entry point (admin and pages only; live updates need ASGI)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sparkdash.settings")
application = get_wsgi_application()
