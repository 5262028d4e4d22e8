"""The machine's achievable memory bandwidth, measured by copying one large buffer. Plain Python.

Convention, as CUDA's ``bandwidthTest`` counts a device-to-device copy: one copy of N bytes
reads N and writes N, so it moves 2N bytes; GB/s is decimal (1 GB = 1e9 bytes), as a
machine's nominal bandwidth is quoted. The figure is the best of several timed passes (the
least disturbed one), after one untimed pass that maps the pages and warms the path.

Where libcudart loads and a CUDA device exists (``GpuCopy``), the copy is a device-to-device
``cudaMemcpy`` timed with CUDA events; elsewhere (``CpuCopy``) it is a Python buffer slice
assignment (one ``memcpy``) timed with the wall clock. A single-threaded CPU copy is a floor of
what the box can move, not its ceiling: several cores together move more.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from engines.errors import EngineError
from measure.words import gettext_noop

__all__ = [
    "CPU_METHOD", "DEFAULT_BYTES", "DEFAULT_PASSES", "GPU_METHOD", "BandwidthError", "BandwidthResult",
    "CpuCopy", "GpuCopy", "load_cudart", "measure_bandwidth",
]

GB = 1e9
MIB = 1 << 20
DEFAULT_BYTES = 256 * MIB
DEFAULT_PASSES = 5
# Stored identifiers; pages show them in the reader's language (marked for the catalogue here).
GPU_METHOD = gettext_noop("gpu device-to-device copy")
CPU_METHOD = gettext_noop("cpu copy")
_DEVICE_TO_DEVICE = 3  # cudaMemcpyDeviceToDevice
_CUDART_NAMES = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0")


class BandwidthError(EngineError):
    """The measurement could not run (a CUDA call failed, a size out of range).

    An EngineError so that the worker fails the run with this message, as a user's error.
    """


@dataclass(frozen=True)
class BandwidthResult:
    """One measurement: the best pass's GB/s and what produced it.

    :param bytes: the buffer size copied per pass; each pass moves twice that (read + write)
    :param per_pass_gbps: every timed pass's figure, in order
    """

    gbps: float
    method: str
    bytes: int
    passes: int
    per_pass_gbps: tuple[float, ...]

    @property
    def bytes_moved(self) -> int:
        """Bytes read plus bytes written by one pass."""
        return 2 * self.bytes

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values (per-pass figures as a list)."""
        found = asdict(self)
        found["per_pass_gbps"] = list(self.per_pass_gbps)
        found["bytes_moved"] = self.bytes_moved
        return found


def _gbps(size: int, seconds: float) -> float:
    return 2 * size / seconds / GB


def _check(size: int, passes: int) -> None:
    if size < MIB:
        raise BandwidthError(f"buffer must be at least 1 MiB, not {size} bytes")
    if passes < 1:
        raise BandwidthError(f"passes must be at least 1, not {passes}")


class CpuCopy:
    """Times copies of a host buffer (bytearray into bytearray through a memoryview: one memcpy)."""

    method = CPU_METHOD

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock

    def measure(self, size: int = DEFAULT_BYTES, passes: int = DEFAULT_PASSES) -> BandwidthResult:
        """Copy `size` bytes once untimed, then `passes` times timed; the best pass's GB/s."""
        _check(size, passes)
        source = bytearray(b"\x5a") * size  # written, so its pages exist before the first pass
        target = memoryview(bytearray(size))
        target[:] = source  # the untimed pass: maps the target's pages
        figures = []
        for _ in range(passes):
            start = self.clock()
            target[:] = source
            figures.append(_gbps(size, max(self.clock() - start, 1e-9)))
        return BandwidthResult(max(figures), self.method, size, passes, tuple(figures))


class GpuCopy:
    """Times device-to-device cudaMemcpy of one device buffer into another with CUDA events.

    :param cudart: the loaded CUDA runtime (``load_cudart()``), or any object with the same
        functions (tests pass a fake); each call returns a cudaError_t, 0 on success.
    """

    method = GPU_METHOD

    def __init__(self, cudart: Any) -> None:
        self.cudart = cudart

    def call(self, name: str, *args: Any) -> None:
        """One CUDA runtime call; BandwidthError naming it and its error code unless it returns 0."""
        code = getattr(self.cudart, name)(*args)
        if code != 0:
            raise BandwidthError(f"{name} failed with CUDA error {code}")

    def device_count(self) -> int:
        """How many CUDA devices the runtime sees (0 where it reports none or fails)."""
        count = ctypes.c_int(0)
        try:
            self.call("cudaGetDeviceCount", ctypes.byref(count))
        except BandwidthError:
            return 0
        return count.value

    def measure(self, size: int = DEFAULT_BYTES, passes: int = DEFAULT_PASSES) -> BandwidthResult:
        """Copy `size` device bytes once untimed, then `passes` times between two events each."""
        _check(size, passes)
        source, target = ctypes.c_void_p(), ctypes.c_void_p()
        self.call("cudaMalloc", ctypes.byref(source), ctypes.c_size_t(size))
        try:
            self.call("cudaMalloc", ctypes.byref(target), ctypes.c_size_t(size))
            try:
                figures = self._timed_copies(target, source, size, passes)
            finally:
                self.call("cudaFree", target)
        finally:
            self.call("cudaFree", source)
        return BandwidthResult(max(figures), self.method, size, passes, tuple(figures))

    def _timed_copies(
        self, target: ctypes.c_void_p, source: ctypes.c_void_p, size: int, passes: int
    ) -> list[float]:
        start, stop = ctypes.c_void_p(), ctypes.c_void_p()
        self.call("cudaEventCreate", ctypes.byref(start))
        self.call("cudaEventCreate", ctypes.byref(stop))
        try:
            self.call("cudaMemcpy", target, source, ctypes.c_size_t(size), _DEVICE_TO_DEVICE)
            figures = []
            for _ in range(passes):
                self.call("cudaEventRecord", start, None)
                self.call("cudaMemcpy", target, source, ctypes.c_size_t(size), _DEVICE_TO_DEVICE)
                self.call("cudaEventRecord", stop, None)
                self.call("cudaEventSynchronize", stop)
                figures.append(_gbps(size, max(self._elapsed_ms(start, stop), 1e-6) / 1e3))
            return figures
        finally:
            self.call("cudaEventDestroy", start)
            self.call("cudaEventDestroy", stop)

    def _elapsed_ms(self, start: ctypes.c_void_p, stop: ctypes.c_void_p) -> float:
        elapsed = ctypes.c_float(0.0)
        self.call("cudaEventElapsedTime", ctypes.byref(elapsed), start, stop)
        return elapsed.value


def load_cudart() -> Any | None:
    """The CUDA runtime library (ctypes.CDLL), or None where none loads."""
    names = [ctypes.util.find_library("cudart"), *_CUDART_NAMES]
    for name in names:
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def measure_bandwidth(
    size: int = DEFAULT_BYTES,
    passes: int = DEFAULT_PASSES,
    cudart: Any | None = None,
    load: Callable[[], Any | None] = load_cudart,
) -> BandwidthResult:
    """The machine's copy bandwidth: on its GPU where libcudart loads and sees a device, else on the CPU.

    :param cudart: a CUDA runtime to use instead of loading one (tests pass a fake)
    :param load: how to load one when `cudart` is None
    """
    runtime = cudart if cudart is not None else load()
    if runtime is not None:
        gpu = GpuCopy(runtime)
        if gpu.device_count() > 0:
            return gpu.measure(size, passes)
    return CpuCopy().measure(size, passes)
