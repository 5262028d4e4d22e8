"""The 400 answer (settings: handler400): a body or form over one of Django's limits says which
limit and its value; anything else (a bad Host header, a malformed request) says only "bad request".
JSON under /api/, else templates/400.html, rendered without the request: with a bad Host header,
nothing may ask the request for its host again.
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext

from sparkdash.middleware import API_PREFIX

__all__ = ["bad_request", "limit_text"]


def limit_text(exception: Exception) -> str:
    """Which of Django's request limits `exception` is, with its value ("" for another refusal)."""
    if isinstance(exception, RequestDataTooBig):
        text = gettext("the form's fields are larger than %(limit)s bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)")
        return text % {"limit": f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,}"}
    if isinstance(exception, TooManyFieldsSent):
        text = gettext("the form has more than %(limit)s fields (DATA_UPLOAD_MAX_NUMBER_FIELDS)")
        return text % {"limit": f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,}"}
    if isinstance(exception, TooManyFilesSent):
        text = gettext("the form has more than %(limit)s files (DATA_UPLOAD_MAX_NUMBER_FILES)")
        return text % {"limit": f"{settings.DATA_UPLOAD_MAX_NUMBER_FILES:,}"}
    return ""


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 400 view: the limit a request passed, or only that it was refused."""
    reason = limit_text(exception)
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"error": f"bad request: {reason}" if reason else "bad request"}, status=400)
    return HttpResponseBadRequest(render_to_string("400.html", {"reason": reason}))
