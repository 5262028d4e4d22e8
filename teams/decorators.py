"""What every JSON API view of every app shares: a login check that answers 401 JSON (here, in the
lowest app, so engines, runs and traffic reach it without importing the project package)."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse

__all__ = ["api_login_required"]


def api_login_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Like login_required, but answers 401 JSON instead of redirecting to a login page."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return JsonResponse({"error": "login required"}, status=401)
        return view(request, *args, **kwargs)

    return wrapper
