"""runs.core.jobs.bandwidth.loop: the CPU copy here, the GPU copy's logic against a fake CUDA runtime."""
from __future__ import annotations

import ctypes
import time
from typing import Any

import pytest

from runs.core.jobs.bandwidth.loop import (
    CPU_METHOD,
    GPU_METHOD,
    MIB,
    BandwidthError,
    CpuCopy,
    GpuCopy,
    measure_bandwidth,
)

pytestmark = pytest.mark.backend_free


class FakeCudart:
    """Stands in for libcudart: records calls, hands out pointers, and says each copy took `ms`."""

    def __init__(self, ms: list[float], devices: int = 1, fail: str = "") -> None:
        self.ms, self.devices, self.fail = list(ms), devices, fail
        self.calls: list[str] = []
        self.copies: list[tuple[int, int, int, int]] = []
        self.next_pointer = 0x1000

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("cuda"):
            raise AttributeError(name)

        def call(*args: Any) -> int:
            self.calls.append(name)
            if name == self.fail:
                return 2  # cudaErrorMemoryAllocation
            return getattr(self, f"_{name}", lambda *a: 0)(*args)

        return call

    def _out(self, ref: Any, value: Any) -> int:
        ref._obj.value = value
        return 0

    def _cudaGetDeviceCount(self, count: Any) -> int:
        return self._out(count, self.devices)

    def _cudaMalloc(self, pointer: Any, size: ctypes.c_size_t) -> int:
        self.next_pointer += 0x1000
        return self._out(pointer, self.next_pointer)

    def _cudaEventCreate(self, event: Any) -> int:
        self.next_pointer += 1
        return self._out(event, self.next_pointer)

    def _cudaMemcpy(self, target: Any, source: Any, size: ctypes.c_size_t, kind: int) -> int:
        self.copies.append((target.value, source.value, size.value, kind))
        return 0

    def _cudaEventElapsedTime(self, elapsed: Any, start: Any, stop: Any) -> int:
        return self._out(elapsed, self.ms.pop(0))


def test_it_measures_a_positive_cpu_copy_bandwidth_in_bounded_time() -> None:
    started = time.monotonic()
    result = CpuCopy().measure(64 * MIB, 3)
    assert time.monotonic() - started < 5
    assert result.method == CPU_METHOD and result.passes == 3 and len(result.per_pass_gbps) == 3
    assert result.gbps == max(result.per_pass_gbps) > 0
    assert result.bytes_moved == 2 * 64 * MIB


def test_it_counts_read_and_written_bytes_with_a_fake_clock() -> None:
    ticks = iter([0.0, 0.01, 1.0, 1.02])  # two passes of 10 ms and 20 ms
    result = CpuCopy(clock=lambda: next(ticks)).measure(100 * MIB, 2)
    # 2 x 104,857,600 bytes in 0.01 s = 20.97 GB/s; in 0.02 s = 10.49 GB/s
    assert result.per_pass_gbps == (pytest.approx(20.97, abs=0.01), pytest.approx(10.49, abs=0.01))
    assert result.gbps == pytest.approx(20.97, abs=0.01)


def test_it_computes_gpu_bandwidth_from_the_event_times() -> None:
    # 256 MiB = 268,435,456 bytes; read + written 536,870,912 bytes; in 2.5 ms: 214.75 GB/s,
    # in 2.0 ms: 268.44 GB/s, in 4.0 ms: 134.22 GB/s. Best: 268.44.
    fake = FakeCudart(ms=[2.5, 2.0, 4.0])
    result = measure_bandwidth(256 * MIB, 3, cudart=fake)
    assert result.method == GPU_METHOD and result.bytes == 268_435_456
    assert result.per_pass_gbps == (pytest.approx(214.75, abs=0.01), pytest.approx(268.44, abs=0.01),
                                    pytest.approx(134.22, abs=0.01))
    assert result.gbps == pytest.approx(268.44, abs=0.01)
    assert len(fake.copies) == 4  # one untimed, three timed
    assert {(size, kind) for _, _, size, kind in fake.copies} == {(268_435_456, 3)}
    assert fake.calls.count("cudaFree") == 2 and fake.calls.count("cudaEventDestroy") == 2


def test_it_frees_the_buffers_and_names_the_call_when_cuda_fails() -> None:
    fake = FakeCudart(ms=[], fail="cudaEventCreate")
    with pytest.raises(BandwidthError, match="cudaEventCreate failed with CUDA error 2"):
        GpuCopy(fake).measure(16 * MIB, 1)
    assert fake.calls.count("cudaFree") == 2 and "cudaMemcpy" not in fake.calls


@pytest.mark.parametrize("runtime", [None, FakeCudart(ms=[], devices=0)])
def test_it_copies_on_the_cpu_without_libcudart_or_a_device(runtime: Any) -> None:
    result = measure_bandwidth(16 * MIB, 1, cudart=runtime, load=lambda: None)
    assert result.method == CPU_METHOD and result.gbps > 0


def test_it_refuses_a_buffer_too_small_to_time() -> None:
    with pytest.raises(BandwidthError, match="at least 1 MiB"):
        CpuCopy().measure(1000, 1)
