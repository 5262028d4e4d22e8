"""Every error under /api/ is JSON: {"error": "..."} with the status, never an HTML page.

Views of the API answer their own refusals in JSON already; this turns what Django answers for
them (an unknown id's 404, a wrong method's 405, a bad Host's 400, a CSRF 403, a crash's 500)
into JSON too. What it says is the status's meaning, never a traceback or a setting.
"""
from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase, JsonResponse

__all__ = ["ApiErrorsAsJson"]

API_PREFIX = "/api/"
MESSAGES = {
    400: "bad request",
    403: "forbidden",
    404: "not found: no such object, or not one you may see",
    405: "method not allowed",
    413: "request body too large",
    500: "server error (it is logged on the server)",
}


class ApiErrorsAsJson:
    """Middleware: a 4xx/5xx answer under /api/ that is not JSON is replaced by a JSON one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.status_code < 400 or not request.path.startswith(API_PREFIX):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        return json_error(response)


def json_error(response: HttpResponseBase) -> JsonResponse:
    """The JSON answer standing in for `response` (its status, and its Allow header for a 405)."""
    status = response.status_code
    text = MESSAGES.get(status, response.reason_phrase.lower())
    if status == 405 and response.has_header("Allow"):
        text = f"{text}: use {response['Allow']}"
    answer = JsonResponse({"error": text}, status=status)
    if response.has_header("Allow"):
        answer["Allow"] = response["Allow"]
    return answer
