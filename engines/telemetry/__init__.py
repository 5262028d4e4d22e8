"""Hardware telemetry of a machine during a run: readings from the OS and from NVML.

`TelemetrySampler` reads its sources 10-20 times a second on a thread of its own, so a slow
read never delays a request. Sources (`HostSource` always; `NvmlSource` where an NVIDIA driver
answers) return one flat reading each; docs/metrics.md "Hardware telemetry" defines the fields.
"""

from engines.telemetry.host import HostSource
from engines.telemetry.nvml import NvmlSource, open_nvml
from engines.telemetry.sampler import NO_GPU_NOTE, Source, TelemetrySampler, machine_sources

__all__ = [
    "NO_GPU_NOTE",
    "HostSource",
    "NvmlSource",
    "Source",
    "TelemetrySampler",
    "machine_sources",
    "open_nvml",
]
