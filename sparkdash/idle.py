"""The idle session timeout: a logged-in session lives SESSION_COOKIE_AGE past its last use.

Django extends a session only when it is saved. Saving it on every request
(SESSION_SAVE_EVERY_REQUEST) would add a write to every page and API call, polls included, and
break the pages' query budgets; this middleware saves it again only once the last save is
`refresh_interval()` old, so the timeout holds to within that interval (5 minutes at most).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse

# When the session was last extended (whole seconds since the epoch), kept in the session itself.
SEEN_KEY = "_sparkdash_seen"


def refresh_interval() -> int:
    """How old the last save may get before a request extends the session: 1/20 of the timeout,
    at most 5 minutes."""
    return max(1, min(300, settings.SESSION_COOKIE_AGE // 20))


def mark_seen(request: HttpRequest) -> None:
    """Extend a logged-in session if its last save is older than the refresh interval."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return
    now = int(time.time())
    if now - int(request.session.get(SEEN_KEY, 0)) >= refresh_interval():
        request.session[SEEN_KEY] = now  # modified: SessionMiddleware saves it with a new expiry


def mark_logged_in(sender: object, request: HttpRequest | None, **kwargs: object) -> None:
    """A login saves the session anyway: count it as the last extension (user_logged_in)."""
    if request is not None and hasattr(request, "session"):
        request.session[SEEN_KEY] = int(time.time())


class IdleTimeoutMiddleware:
    """Extends a logged-in user's session as they use the site (after AuthenticationMiddleware).

    Sync and async, like the middleware around it, so that under daphne the chain stays async.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self.__acall__(request)
        response = self.get_response(request)
        mark_seen(request)  # after the view: a logout has emptied the session, a login has set it
        return response

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        response = await self.get_response(request)
        await sync_to_async(mark_seen)(request)  # the session and the user are read from the database
        return response
