from pathlib import Path

import pytest

from engines.telemetry.host import HostSource, cpu_times, memory

pytestmark = pytest.mark.backend_free

STAT = "cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3 4\n"
MEMINFO = "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n"


def _proc(tmp_path: Path, busy: int, idle: int) -> Path:
    (tmp_path / "stat").write_text(STAT.format(busy=busy, idle=idle))
    (tmp_path / "meminfo").write_text(MEMINFO)
    return tmp_path


def test_it_reads_cpu_jiffies_and_memory_in_use():
    assert cpu_times(STAT.format(busy=30, idle=70)) == (30, 100)
    assert memory(MEMINFO) == (600 * 1024, 1000 * 1024)


def test_it_gives_cpu_load_since_the_previous_reading(tmp_path):
    proc = _proc(tmp_path, busy=100, idle=100)
    source = HostSource(proc, tmp_path / "no-powercap")
    _proc(tmp_path, busy=175, idle=125)  # 75 of the next 100 jiffies busy
    reading = source.read(1.0)
    assert reading == {"cpu_load": 0.75, "mem_used_bytes": 600 * 1024, "mem_total_bytes": 1000 * 1024}


def test_it_turns_rapl_energy_counters_into_package_power(tmp_path):
    proc = _proc(tmp_path, busy=1, idle=1)
    package = tmp_path / "powercap" / "intel-rapl:0"
    package.mkdir(parents=True)
    (package / "max_energy_range_uj").write_text("999999\n")
    (tmp_path / "powercap" / "intel-rapl:0:0").mkdir()  # a sub-zone: inside its package, not added
    (package / "energy_uj").write_text("990000\n")
    source = HostSource(proc, tmp_path / "powercap")
    assert "cpu_power_w" not in source.read(0.0)  # a counter needs two readings
    (package / "energy_uj").write_text("15000\n")  # wrapped past 999,999: 25,000 uJ later
    assert source.read(0.5)["cpu_power_w"] == 0.05


def test_it_reads_this_machine():
    reading = HostSource().read(0.0)
    assert 0 <= reading["cpu_load"] <= 1 and 0 < reading["mem_used_bytes"] < reading["mem_total_bytes"]


def test_it_reads_memory_with_no_mem_available_line_as_none_in_use():
    assert memory("MemTotal:       1000 kB\nMemFree:         100 kB\n") == (0, 1000 * 1024)
    with pytest.raises(ValueError, match="MemTotal"):
        memory("MemFree:         100 kB\n")


def test_it_keeps_its_proc_files_open_between_readings_until_closed(tmp_path):
    proc = _proc(tmp_path, busy=100, idle=100)
    source = HostSource(proc, tmp_path / "no-powercap")
    (proc / "meminfo").unlink()  # still read through the file it opened, not opened anew
    assert source.read(1.0)["mem_total_bytes"] == 1000 * 1024
    source.close()
    with pytest.raises(OSError):
        source.read(2.0)
