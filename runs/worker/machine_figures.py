"""What a run leaves on its machine and says of the machine's ceilings.

A machine benchmark's succeeded run (a job kind with ``machine_fields``: the bandwidth job)
stores its figures on the Machine row; a run whose decode speed is above a roofline ceiling
gets a warning saying which.
"""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from engines.models import Machine
from measure.words import gettext_noop
from runs.core.registry import JobSpec
from runs.core.worded import both, warning, worded
from runs.models import Run


async def store_machine_fields(run: Run, spec: JobSpec, summary: dict[str, Any]) -> None:
    """Set the machine's fields from a machine benchmark's summary (nothing for other kinds).

    Not on a simulated machine (its engine is the simulator): the worker measured the box it runs
    on, not the machine the dashboard shows, so the figure stays on the run with a warning.
    """
    if spec.machine_fields is None:
        return
    if run.config.engine.simulator:
        summary["stored_on_machine"] = False
        await Run.objects.filter(pk=run.pk).aupdate(warnings=[warning("simulated-machine", NOT_STORED)])
        return
    fields = spec.machine_fields(summary, run.pk, timezone.now())
    await Machine.objects.filter(pk=run.config.engine.machine_id).aupdate(**fields)
    summary["stored_on_machine"] = True


def above_ceiling_warning(roofline: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A warning when the measured decode speed is above a ceiling it is held against."""
    if not roofline or not roofline.get("above_ceiling"):
        return []
    held = [("nominal", roofline["bandwidth_gbps"], roofline.get("efficiency"),
             roofline.get("ceiling_with_drafts_tps") or roofline["ceiling_tps"]),
            ("measured", roofline.get("measured_bandwidth_gbps"), roofline.get("measured_efficiency"),
             roofline.get("measured_ceiling_with_drafts_tps") or roofline.get("measured_ceiling_tps"))]
    above = [worded(CEILINGS[name], ceiling=f"{ceiling:.1f}", bandwidth=f"{bandwidth:g}",
                    pct=f"{100 * eff:.0f}")
             for name, bandwidth, eff, ceiling in held if eff is not None and eff > 1]
    measured = f"{roofline['measured_tps']:.1f}"
    return [warning("above-ceiling", ABOVE_CEILING, measured=measured, above=both(*above) if above else "")]


NOT_STORED = gettext_noop(
    "not stored as the machine's bandwidth: its engine is the simulator, so this measured the computer "
    "the worker runs on, not the machine"
)
CEILINGS = {
    "nominal": gettext_noop("the nominal ceiling %(ceiling)s tok/s (%(bandwidth)s GB/s; %(pct)s %%)"),
    "measured": gettext_noop("the measured ceiling %(ceiling)s tok/s (%(bandwidth)s GB/s; %(pct)s %%)"),
}
ABOVE_CEILING = gettext_noop(
    "measured %(measured)s tok/s is above %(above)s: check the bytes per token (weights elsewhere, "
    "another quantization) or the machine's bandwidth"
)
