"""Teams, a member's role in a team, and the audit log of what members did.

A user is in a team through ``Team.members``; ``TeamRole`` says which role they hold there. A
member with no ``TeamRole`` row is a member (what everybody was before roles existed).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

DEFAULT_TEAM = "default"


class Team(models.Model):
    """The people who share machines: a user sees only their teams' machines and what runs on them."""

    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams", blank=True)

    class Meta:
        ordering = ["name"]
        # Made in engines before it moved here: its table (and its members' table) kept their names.
        db_table = "engines_team"

    def __str__(self) -> str:
        return self.name

    @classmethod
    def default(cls) -> Team:
        """The team machines join when none is named (every user and machine of an older install)."""
        return cls.objects.get_or_create(name=DEFAULT_TEAM)[0]


class Role(models.TextChoices):
    """What a team member may do; each role may do everything the one before it may."""

    VIEWER = "viewer", _("viewer")
    MEMBER = "member", _("member")
    ADMIN = "admin", _("admin")


class TeamRole(models.Model):
    """The role ``user`` holds in ``team``."""

    team = models.ForeignKey(Team, models.CASCADE, related_name="roles")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="team_roles")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_role_per_member")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}: {self.role}"


class AuditEvent(models.Model):
    """One thing a person did, kept as it was said then: names are copied, not only linked.

    The links (team, actor) may go when those rows are deleted; the copied names stay, so the
    log still says who did what after the fact.
    """

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    team = models.ForeignKey(Team, models.SET_NULL, null=True, blank=True, related_name="audit_events")
    team_name = models.CharField(max_length=100, blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True,
                              related_name="audit_events")
    actor_name = models.CharField(max_length=150, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    action = models.CharField(max_length=30)
    object_type = models.CharField(max_length=40)
    object_id = models.CharField(max_length=40, blank=True)
    object_name = models.CharField(max_length=300, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["team", "-at"], name="audit_team_recent")]

    def __str__(self) -> str:
        when = f"{self.at:%Y-%m-%d %H:%M}"
        return f"{when} {self.actor_name} {self.action} {self.object_type} {self.object_name}"
