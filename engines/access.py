"""Who sees what: everything is visible through the team of the machine it runs on.

A machine belongs to one team; its engines, their configs and the runs on it are visible to
that team's members. A sweep is visible when none of its configs is another team's (so its page
never shows one; a sweep with no configs yet shows nothing to hide); its schedules and sweep
runs go with it. An alert goes with its
config. Superusers see everything, anonymous users nothing.

Every view, JSON API, export, compare picker and the run socket read through `visible`, so a
lookup of another team's object finds nothing: a 404, never a 403 that would reveal it exists.
`GET /metrics` reads through it too for a session; a team's metrics token sees that team's
machines only (runs.results.prometheus).
"""
from __future__ import annotations

from typing import Any, TypeVar

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.db.models import Model, QuerySet
from django.shortcuts import get_object_or_404

from engines.models import Engine, EngineConfig, EngineSession, Machine
from teams.models import Team

__all__ = ["get_visible_or_404", "visible"]

M = TypeVar("M", bound=Model)
User = AuthUser | AnonymousUser

# The path from each of engines' models to the team whose members see it. Other apps' models
# (runs: runs, samples, sweeps, ...) say it themselves: a `team_path` attribute, or a
# `visible_to(user, queryset)` classmethod where the rule is more than a path.
TEAM_PATHS: dict[type[Model], str] = {
    Team: "",
    Machine: "team__",
    Engine: "machine__team__",
    EngineSession: "machine__team__",
    EngineConfig: "engine__machine__team__",
}


def visible(user: User, objects: QuerySet[M] | type[M]) -> QuerySet[M]:
    """The objects (a queryset or a model's all) that `user` may see.

    :param objects: e.g. ``Run.objects.select_related("config")`` or ``Run``
    """
    qs: QuerySet[Any] = objects._default_manager.all() if isinstance(objects, type) else objects
    if not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    visible_to = getattr(qs.model, "visible_to", None)
    if visible_to is not None:
        return visible_to(user, qs)
    path = TEAM_PATHS.get(qs.model, getattr(qs.model, "team_path", None))
    if path is None:
        raise TypeError(f"{qs.model.__name__} says nothing about who sees it (team_path or visible_to)")
    return qs.filter(**{f"{path}members": user})


def foreign_configs(user: AuthUser) -> QuerySet[EngineConfig]:
    """The configs of other teams' machines: what a sweep must not include to be visible to `user`."""
    return EngineConfig.objects.exclude(engine__machine__team__members=user)


def get_visible_or_404(user: User, objects: QuerySet[M] | type[M], **lookup: Any) -> M:
    """The one object matching `lookup` among those `user` may see, else Http404."""
    return get_object_or_404(visible(user, objects), **lookup)
