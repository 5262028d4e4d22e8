"""The URL walk the access tests share: every URL name of the project, and how to request it.

Each app's test_access.py lists an Endpoint for every URL name of its namespace; the walk is
parametrized over the names Django knows (`url_names`), so a new view without a rule fails.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.factories import TeamWorld


@dataclass(frozen=True)
class Endpoint:
    """How a URL is requested and what a team member gets.

    :param target: the TeamWorld attribute whose pk the URL takes (None: a list or form page)
    :param method: GET, or POST for the actions that only take a POST
    :param member_status: what the owner and a teammate get (both hold the member role)
    :param admin_status: what a team admin or a superuser gets, when not ``member_status`` (the
        admin-only actions: members get 403)
    :param api: answers 401 JSON rather than redirecting to the login page
    :param scrape: a scrape target (GET /metrics): anonymous gets 401 rather than the login page
    :param lists: a page without a target lists the team's objects (False: an explanation page,
        e.g. the demo tour's, that shows none; its own tests cover what it refuses)
    :param more: the URL's other arguments, from the world (a conversation page's key)
    """

    target: str | None = None
    method: str = "GET"
    member_status: int = 200
    admin_status: int | None = None
    api: bool = False
    scrape: bool = False
    lists: bool = True
    more: Callable[[TeamWorld], dict[str, Any]] | None = None


def admin_status(endpoint: Endpoint) -> int:
    """What a team admin or a superuser gets from ``endpoint``."""
    return endpoint.member_status if endpoint.admin_status is None else endpoint.admin_status


def _names(patterns: list, namespace: str) -> list[str]:
    names = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = ":".join(part for part in (namespace, pattern.namespace or "") if part)
            names += _names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            names.append(f"{namespace}:{pattern.name}" if namespace else pattern.name)
    return names


def url_names(namespace: str) -> list[str]:
    """Every named URL in `namespace` ("" for the project's own, outside any namespace)."""
    found = _names(get_resolver().url_patterns, "")
    if namespace:
        return sorted({n for n in found if n.rpartition(":")[0] == namespace})
    return sorted({n for n in found if ":" not in n})


def url_of(name: str, endpoint: Endpoint, world: TeamWorld, query: str = "") -> str:
    kwargs = {"pk": getattr(world, endpoint.target).pk} if endpoint.target else {}
    if endpoint.more:
        kwargs |= endpoint.more(world)
    return reverse(name, kwargs=kwargs) + query


def call(client: Client, name: str, endpoint: Endpoint, world: TeamWorld, query: str = "") -> HttpResponse:
    """The endpoint requested as its rule says (a POST sends no data)."""
    url = url_of(name, endpoint, world, query)
    return client.get(url) if endpoint.method == "GET" else client.post(url)


def posts_without_token(response: HttpResponse) -> int:
    """How many of the page's POST forms lack a CSRF token field (0 for a page without forms)."""
    html = response.content.decode(errors="replace")
    return html.lower().count('method="post"') - html.count('name="csrfmiddlewaretoken"')


def logged_in(user: object, **client_options: object) -> Client:
    client = Client(**client_options)
    client.force_login(user)
    return client
