"""Accounts: the client's address, the lockout page and the log of failed logins.

django-axes counts failed logins and refuses a locked-out user or address (settings.py, the
"Accounts" block); this module gives it the address to count, the page a locked-out login gets
(when to try again), and writes one line per failed login to the `sparkdash.security` logger:
the username typed and the address, never the password.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from sparkdash.idle import mark_logged_in

log = logging.getLogger("sparkdash.security")
# A username is logged as typed, cut to this length (it could be a password typed in the wrong box).
USERNAME_LOG_CHARS = 150


def client_address(request: HttpRequest) -> str:
    """The address a request came from, as the login lockout counts it.

    REMOTE_ADDR, unless SPARKDASH_TRUSTED_PROXIES says how many reverse proxies stand in front:
    then the address that many hops back along X-Forwarded-For, counted from the right, where each
    trusted proxy appended what it saw (entries further left are the client's own, so unchecked).
    """
    remote = request.META.get("REMOTE_ADDR", "") or ""
    hops = settings.SPARKDASH_TRUSTED_PROXIES
    if hops <= 0:
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    chain = [part.strip() for part in forwarded.split(",") if part.strip()] + [remote]
    return chain[max(len(chain) - 1 - hops, 0)]


def lockout_ends(request: HttpRequest, credentials: dict[str, Any] | None) -> datetime | None:
    """When the lockout on this request's username or address lifts by itself (None: never)."""
    cool_off: timedelta | None = get_cool_off(request)
    if cool_off is None:
        return None
    limit = get_failure_limit(request, credentials)
    ends = []
    for attempts in AxesProxyHandler.get_implementation().get_user_attempts(request, credentials):
        totals = attempts.aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        if (totals["failures"] or 0) >= limit:
            ends.append(totals["last"] + cool_off)
    return max(ends, default=None)


def lockout_response(
    request: HttpRequest, original_response: object = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    """The page a locked-out login gets (AXES_LOCKOUT_CALLABLE): 429, and when to try again.

    Axes' ASGI path passes the credentials where the response belongs, so neither is trusted:
    the username is read from the request, as axes itself does without credentials.
    """
    credentials = credentials if isinstance(credentials, dict) else None
    ends = lockout_ends(request, credentials)
    context = {
        "failure_limit": get_failure_limit(request, credentials),
        "retry_at": ends,
        "cool_off_minutes": _minutes(get_cool_off(request)),
    }
    response = render(request, "registration/locked_out.html", context, status=429)
    if ends is not None:
        response["Retry-After"] = str(max(int((ends - timezone.now()).total_seconds()), 1))
    return response


def _minutes(cool_off: timedelta | None) -> int | None:
    return None if cool_off is None else max(round(cool_off.total_seconds() / 60), 1)


def log_failed_login(sender: object, credentials: dict[str, Any], request: HttpRequest | None = None,
                     **kwargs: object) -> None:
    """One warning per failed login: username and address, and whether it is now locked out."""
    if request is None:
        return
    username = str(get_client_username(request, credentials) or "")[:USERNAME_LOG_CHARS]
    log.warning(
        "failed login: username=%r address=%s failures=%s locked_out=%s path=%s",
        username,
        getattr(request, "axes_ip_address", None) or client_address(request),
        getattr(request, "axes_failures_since_start", "?"),
        bool(getattr(request, "axes_locked_out", False)),
        request.path,
    )


def log_lockout(sender: object, request: HttpRequest, username: str | None, ip_address: str | None,
                **kwargs: object) -> None:
    """One warning when axes locks a username or address out."""
    log.warning("login locked out: username=%r address=%s", str(username or "")[:USERNAME_LOG_CHARS],
                ip_address)


def connect() -> None:
    """Connect the loggers to Django's failed-login signal and axes' lockout signal, and start a
    session's idle clock at login (once)."""
    user_login_failed.connect(log_failed_login, dispatch_uid="sparkdash.accounts.failed")
    user_locked_out.connect(log_lockout, dispatch_uid="sparkdash.accounts.locked_out")
    user_logged_in.connect(mark_logged_in, dispatch_uid="sparkdash.accounts.logged_in")
