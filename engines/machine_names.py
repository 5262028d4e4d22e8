"""Finding a machine by name for an operator's command (`worker`, `relay`, `relaytoken`, `serve`).

Machine names are unique per team, not across teams, so a name alone may match machines of
several teams: then the command is refused until `--team NAME` says which. The operator runs
commands on the server and sees every team, so the refusal names the teams.
"""
from __future__ import annotations

from django.core.management.base import CommandError

from engines.models import Machine
from teams.models import DEFAULT_TEAM, Team

__all__ = ["AmbiguousMachine", "MachineLookupError", "find_machine", "known_machines", "machine_for_command"]


class MachineLookupError(LookupError):
    """No machine answers to the name (and team), or no team to the team's name."""


class AmbiguousMachine(MachineLookupError):
    """More than one team has a machine of the name, and no team was named; the message lists them."""

    def __init__(self, name: str, machines: list[Machine]) -> None:
        self.name, self.machines = name, machines
        teams = ", ".join(sorted(m.team.name for m in machines))
        super().__init__(f"machine name {name!r} is used by more than one team ({teams}): "
                         "choose the team with --team NAME")


def find_machine(name: str, team: str | None = None, *, queue_slug: bool = False) -> Machine:
    """The one machine named `name` (of team `team` when given).

    With `queue_slug`, the machine's queue without its `machine.` prefix names it too
    (`spark-1`, `team-3.spark-1`), as `celery worker -Q` and the home page show it.
    """
    machines = Machine.objects.select_related("team")
    if team:
        if not Team.objects.filter(name=team).exists():
            teams = ", ".join(Team.objects.values_list("name", flat=True)) or "none yet"
            raise MachineLookupError(f"no team named {team!r} (teams: {teams})")
        machines = machines.filter(team__name=team)
    found = [m for m in machines if name == m.name or (queue_slug and name == _slug(m))]
    if len(found) == 1:
        return found[0]
    if not found:
        raise MachineLookupError(f"no machine named {name!r}" + (f" in team {team}" if team else ""))
    raise AmbiguousMachine(name, found)


def machine_for_command(name: str, team: str | None = None) -> Machine:
    """find_machine (by name or queue slug) for a management command: its refusal as a CommandError,
    listing the machines."""
    try:
        return find_machine(name, team, queue_slug=True)
    except AmbiguousMachine as exc:
        raise CommandError(str(exc)) from None
    except MachineLookupError as exc:
        raise CommandError(f"{exc} (machines: {known_machines() or 'none yet'})") from None


def known_machines() -> str:
    """Every machine's name, with its team outside the default team, for a refusal's list."""
    machines = Machine.objects.select_related("team").order_by("name", "team__name")
    return ", ".join(m.name if m.team.name == DEFAULT_TEAM else f"{m.name} (team {m.team.name})"
                     for m in machines)


def _slug(machine: Machine) -> str:
    return machine.queue_name.removeprefix("machine.")
