"""Where a webhook may point, and posting to one without telling anyone what the network looks like.

A webhook URL is the one address a team member makes the server connect to, so it is checked
against a policy: http or https only, and every address its host resolves to must be a public
one: no loopback, link-local (169.254.169.254, the cloud metadata service), private, shared,
multicast, reserved or unspecified address, unless it lies in a network the operator listed in
``SPARKDASH_WEBHOOK_ALLOWED_NETWORKS`` (a server setting, e.g. ``10.0.0.0/8``: team members cannot
change it). The check runs when a sweep is saved (a name that does not resolve yet is kept) and
again before each post, since a name can resolve elsewhere by then; the post then connects to
the address that was checked (the host name still goes in the Host header and TLS's SNI and
certificate check), never follows a redirect, and its outcome says "delivered" or "delivery
failed" with the HTTP status when the server answered, and nothing else: no connection error,
so the text says nothing of which addresses or ports answer.
"""
from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import SplitResult, urlsplit

import httpx
from django.conf import settings
from django.utils.translation import gettext

__all__ = ["Unresolved", "WebhookRefused", "check_url", "post_json", "save_refusal"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
SCHEMES = {"http": 80, "https": 443}
REFUSED = "refused: the webhook's host is not an address webhooks may reach"


class WebhookRefused(ValueError):
    """The URL is outside the policy; the message says why, without ports or network details."""


class Unresolved(OSError):
    """The host name does not resolve now. A sweep may keep such a URL (it is checked again at
    each post); a post to it fails like any unreachable one."""


def allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The networks the operator allows beyond public addresses (SPARKDASH_WEBHOOK_ALLOWED_NETWORKS)."""
    return [ipaddress.ip_network(n, strict=False) for n in settings.SPARKDASH_WEBHOOK_ALLOWED_NETWORKS]


def address_allowed(address: Address) -> bool:
    """Whether a webhook may connect to ``address``: public, or in an allowed network."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in network for network in allowed_networks()):
        return True
    return address.is_global and not address.is_multicast


def check_url(url: str) -> tuple[SplitResult, Address]:
    """The URL's parts and the address to connect to, after checking both against the policy.

    :raises WebhookRefused: for another scheme or port, or any resolved address that is not
        allowed (all must be: a resolver may hand out any of them).
    :raises Unresolved: when the host name does not resolve.
    """
    parts = urlsplit(url)
    try:
        port = parts.port or SCHEMES.get(parts.scheme)
    except ValueError:
        port = None
    if parts.scheme not in SCHEMES or not parts.hostname or not port:
        raise WebhookRefused(gettext("a webhook URL must start with http:// or https:// and name a host"))
    try:
        found = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Unresolved(parts.hostname) from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
    if not addresses or not all(address_allowed(a) for a in addresses):
        raise WebhookRefused(gettext(
            "the webhook's host is a loopback, link-local, private or reserved address, which webhooks "
            "may not reach (the server's operator can allow networks with SPARKDASH_WEBHOOK_ALLOWED_NETWORKS)"
        ))
    return parts, addresses[0]


def save_refusal(url: str) -> str | None:
    """Why a sweep may not keep ``url`` as its webhook, or None. A name that does not resolve now
    is kept: each post checks it again, and fails while it does not resolve."""
    try:
        check_url(url)
    except WebhookRefused as exc:
        return str(exc)
    except Unresolved:
        return None
    return None


def post_json(url: str, payload: dict[str, Any], timeout_s: float) -> str:
    """POST ``payload`` to ``url`` after the policy check; returns the outcome to record.

    "delivered (HTTP 200)", "delivery failed (HTTP 500)", "delivery failed" (no answer) or
    REFUSED (the policy); never raises, never says why a connection failed. The outcome is
    stored, so it is English whatever the worker's language.
    """
    try:
        parts, address = check_url(url)
    except WebhookRefused:
        return REFUSED
    except Unresolved:
        return "delivery failed"
    host = f"[{address}]" if address.version == 6 else str(address)
    port = parts.port or SCHEMES[parts.scheme]
    userinfo = parts.netloc.rpartition("@")[0]
    pinned = parts._replace(netloc=f"{userinfo}@{host}:{port}" if userinfo else f"{host}:{port}").geturl()
    extensions = {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
    # No proxy from the environment (trust_env): the connection goes to the address checked.
    try:
        with httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False) as client:
            response = client.post(pinned, json=payload, extensions=extensions,
                                   headers={"Host": parts.netloc.rpartition("@")[2]})
    except Exception:  # best effort: any failure is recorded, and what failed is not said
        return "delivery failed"
    if response.is_success:
        return f"delivered (HTTP {response.status_code})"
    return f"delivery failed (HTTP {response.status_code})"
