"""ASGI entry point: HTTP through Django, websockets through the runs and traffic apps' routes."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sparkdash.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from runs.routing import websocket_urlpatterns as run_sockets  # noqa: E402
from sparkdash.bodylimit import BodyLimit  # noqa: E402
from traffic.routing import websocket_urlpatterns as traffic_sockets  # noqa: E402

application = ProtocolTypeRouter(
    {
        # Request bodies are capped before Django spools them (to disk, at any size).
        "http": BodyLimit(django_asgi_app, settings.SPARKDASH_MAX_REQUEST_BYTES),
        "websocket": AllowedHostsOriginValidator(
            # types-channels wants its own pattern type; channels documents Django's path(): URLPattern.
            AuthMiddlewareStack(URLRouter(run_sockets + traffic_sockets))  # type: ignore[arg-type]
        ),
    }
)
