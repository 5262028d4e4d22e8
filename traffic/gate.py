"""The relay command's gate: the machine's live relay tokens, as digests kept in memory.

The relay's core (traffic.relay.gate) asks the gate about every request and must never wait on
the database, so the gate answers from a set of SHA-256 digests loaded at start and loaded again
every REFRESH_S seconds on a thread of its own: a revoked token stops working within REFRESH_S
(5 s). The same refresh stores `last_used` for the tokens used since the one before. While the
database is down the last set holds (nobody can revoke a token then either).

On loopback (`open_when_none`) with no live token, the relay is open: requests go on without the
engine's stored API key. Once a token is live, or when the relay listens on any other address,
only requests that present one pass.
"""
from __future__ import annotations

import ipaddress
import socket
import threading

from django.db import DatabaseError
from django.utils import timezone

from teams.tokens import digest
from traffic.models import RelayToken
from traffic.relay.gate import Admission

__all__ = ["REFRESH_S", "TokenGate", "is_loopback"]

REFRESH_S = 5.0


class TokenGate:
    """The gate for machine `machine_id`'s relay (a traffic.relay.gate.Gate: call it with a token)."""

    def __init__(self, machine_id: int, open_when_none: bool) -> None:
        self.machine_id, self.open_when_none = machine_id, open_when_none
        self._digests: frozenset[str] = frozenset()
        self._used: set[str] = set()
        self._lock = threading.Lock()  # the relay's loop adds to _used while a refresh takes it
        self.refresh()

    def __call__(self, token: str) -> Admission:
        digests = self._digests  # one read: a refresh swaps the whole set
        if not digests and self.open_when_none:
            return Admission.WITHOUT_KEY
        if token:
            presented = digest(token)
            if presented in digests:
                with self._lock:
                    self._used.add(presented)
                return Admission.WITH_KEY
        return Admission.REFUSED

    @property
    def live(self) -> int:
        """How many of the machine's tokens were live at the last refresh."""
        return len(self._digests)

    def refresh(self) -> None:
        """Load the live digests again, and note when the tokens used since the last refresh were used."""
        with self._lock:
            used, self._used = self._used, set()
        try:
            if used:
                RelayToken.objects.filter(digest__in=used).update(last_used=timezone.now())
            self._digests = RelayToken.live_digests(self.machine_id)
        except DatabaseError:
            with self._lock:
                self._used |= used  # noted at the next refresh that reaches the database
            raise


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (127.0.0.0/8, ::1): reachable only from
    this box. A name that does not resolve is not."""
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]).partition("%")[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(address).is_loopback for address in addresses)
