"""The bandwidth job through the worker: measured here (no GPU: the CPU copy), stored on the machine."""
import pytest
from django.core.management.base import CommandError

from engines.models import Machine
from runs.core.jobs.bandwidth.loop import CPU_METHOD, BandwidthError
from runs.models import Run, Sample
from tests.factories import EngineConfigFactory
from tests.runs.bench_helpers import bench

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_measures_the_machines_bandwidth_and_stores_it_without_an_engine(inprocess, capsys):
    # No engine listens at the config's URL: the job must not need one.
    config = EngineConfigFactory(name="bw", engine__machine__name="box-bw", engine__base_url="http://127.0.0.1:9")
    run = bench(capsys, "bw", "bandwidth", "--buffer-mib", "32", "--passes", "3")
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    print(f"\nmeasured {summary['bandwidth_gbps']:.1f} GB/s ({summary['method']})")
    assert summary["bandwidth_gbps"] == max(summary["per_pass_gbps"]) > 0
    assert (summary["method"], summary["passes"], summary["bytes"]) == (CPU_METHOD, 3, 32 << 20)
    assert summary["nominal_gbps"] == config.engine.machine.bandwidth_gbps
    machine = Machine.objects.get(name="box-bw")
    assert machine.measured_bandwidth_gbps == summary["bandwidth_gbps"]
    assert (machine.bandwidth_method, machine.bandwidth_run_id) == (CPU_METHOD, run["id"])
    assert machine.bandwidth_measured_at is not None
    assert Sample.objects.filter(run_id=run["id"], kind="request").count() == 3
    assert run["progress"] == {"done": 3, "total": 3}


def test_it_leaves_the_machine_alone_when_the_measurement_fails(inprocess, capsys, monkeypatch):
    def broken(*args):
        raise BandwidthError("cudaMalloc failed with CUDA error 2")

    monkeypatch.setattr("runs.core.jobs.bandwidth.kind.measure_bandwidth", broken)
    EngineConfigFactory(name="bw-broken", engine__machine__name="box-bw-broken")
    with pytest.raises(CommandError, match=r"failed: cudaMalloc failed with CUDA error 2$"):
        bench(capsys, "bw-broken", "bandwidth", "--passes", "1")
    assert Run.objects.get(config__name="bw-broken").status == Run.Status.FAILED
    assert Machine.objects.get(name="box-bw-broken").measured_bandwidth_gbps is None


def test_it_keeps_a_simulated_machines_bandwidth_on_the_run_not_on_the_machine(inprocess, capsys):
    EngineConfigFactory(name="bw-sim", engine__machine__name="box-sim", engine__simulator=True,
                        engine__base_url="http://127.0.0.1:9")
    run = bench(capsys, "bw-sim", "bandwidth", "--buffer-mib", "16", "--passes", "1")
    assert run["status"] == "succeeded", run["error"]
    assert run["summary"]["bandwidth_gbps"] > 0 and run["summary"]["stored_on_machine"] is False
    assert Machine.objects.get(name="box-sim").measured_bandwidth_gbps is None
    (said,) = Run.objects.get(pk=run["id"]).warnings
    assert said["kind"] == "simulated-machine" and "not stored as the machine's bandwidth" in said["message"]
