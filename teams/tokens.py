"""Tokens a team admin hands out (relay tokens, metrics tokens): shown once, stored hashed,
revocable.

A token is 32 random bytes in URL-safe base64 behind a short prefix that says what it is for.
Only its SHA-256 is stored: a token has full entropy, so a slow password hash adds nothing, and
a lookup by digest stays one indexed query.
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from teams.models import Team

__all__ = ["HashedToken", "digest", "new_token"]


def new_token(prefix: str) -> str:
    """A fresh token, e.g. ``sdr_3k...`` for ``prefix="sdr"``."""
    return f"{prefix}_{secrets.token_urlsafe(32)}"


def digest(token: str) -> str:
    """What is stored for ``token``: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


class HashedToken(models.Model):
    """The fields every sort of token has; a concrete model adds what the token is for."""

    team = models.ForeignKey(Team, models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    revoked = models.DateTimeField(null=True, blank=True)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.name

    @classmethod
    def issue(cls, prefix: str, **fields: object) -> tuple[HashedToken, str]:
        """Create a token row; returns it with the plain token, which is never stored."""
        plain = new_token(prefix)
        return cls._default_manager.create(digest=digest(plain), **fields), plain

    @classmethod
    def live(cls, token: str) -> HashedToken | None:
        """The unrevoked row ``token`` belongs to, or None."""
        if not token:
            return None
        return cls._default_manager.filter(digest=digest(token), revoked__isnull=True).first()

    def revoke(self) -> None:
        """Make the token useless from now on (the row stays, for the audit log)."""
        self.revoked = timezone.now()
        self.save(update_fields=["revoked"])
