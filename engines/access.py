"""Who sees what: everything is visible through the team of the machine it runs on.

A machine belongs to one team; its engines, their configs and the runs on it are visible to
that team's members. A sweep is visible when none of its configs is another team's (so its page
never shows one; a sweep with no configs yet shows nothing to hide); its schedules and sweep
runs go with it. An alert goes with its
config. Superusers see everything, anonymous users nothing.

Every view, JSON API, export, compare picker and the run socket read through `visible`, so a
lookup of another team's object finds nothing: a 404, never a 403 that would reveal it exists.
(`GET /metrics` is the exception: machine-to-machine with its own token, global by design.)
"""
from __future__ import annotations

from typing import Any, TypeVar, cast

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.db.models import Model, QuerySet
from django.shortcuts import get_object_or_404

from engines.models import Engine, EngineConfig, EngineSession, Machine, Team
from runs.models import Alert, Run, Sample, Schedule, Sweep, SweepExecution

__all__ = ["get_visible_or_404", "visible"]

M = TypeVar("M", bound=Model)
User = AuthUser | AnonymousUser

# The path from each model to the team whose members see it.
TEAM_PATHS: dict[type[Model], str] = {
    Team: "",
    Machine: "team__",
    Engine: "machine__team__",
    EngineSession: "machine__team__",
    EngineConfig: "engine__machine__team__",
    Run: "machine__team__",
    Sample: "run__machine__team__",
    Alert: "config__engine__machine__team__",
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
    if qs.model is Sweep:
        return cast("QuerySet[M]", _sweeps(user, qs))
    if qs.model in (Schedule, SweepExecution):
        return qs.filter(sweep__in=_sweeps(user, Sweep.objects.all()).values("pk"))
    return qs.filter(**{f"{TEAM_PATHS[qs.model]}members": user})


def _sweeps(user: AuthUser, qs: QuerySet[Sweep]) -> QuerySet[Sweep]:
    """Sweeps none of whose configs is another team's."""
    foreign = EngineConfig.objects.exclude(engine__machine__team__members=user)
    with_foreign = Sweep.configs.through.objects.filter(engineconfig__in=foreign).values("sweep_id")
    return qs.exclude(pk__in=with_foreign)


def get_visible_or_404(user: User, objects: QuerySet[M] | type[M], **lookup: Any) -> M:
    """The one object matching `lookup` among those `user` may see, else Http404."""
    return get_object_or_404(visible(user, objects), **lookup)
