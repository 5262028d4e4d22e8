"""The demo configs' lookahead sweeps through the real worker path: the field reports' trade-off.

The demo machines run at FASTER times their bandwidth here: every speed scales with it, so the
shape is the demo's own, and the sweeps take seconds instead of minutes. The shape is checked on
the engine's own decode speed (the simulator's schedule, so exact); the client's, measured on a
busy 2-core box over spans of a tenth of a second, must agree with it within 15 %.
"""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.core.management import call_command

from engines.models import Engine, EngineConfig, Machine
from runs.management.commands.serve import simulator_command
from tests.real_engine import free_port
from tests.runs.bench_helpers import bench

pytestmark = pytest.mark.django_db(transaction=True)

FASTER = 4
SWEEP = ("--lengths", "0,4,8,12", "--warmup", "0")
STRUCTURED = ("tool-call", "table")


@pytest.fixture
def demo() -> None:
    call_command("demo")
    Machine.objects.update(bandwidth_gbps=273 * FASTER)


@pytest.fixture
def served_ollama_simulator(demo, tmp_path) -> Iterator[str]:
    """The demo's external simulator as `manage.py serve` starts it, on a free port."""
    Engine.objects.filter(name="sim-ollama").update(log_path=str(tmp_path / "sim-ollama.log"))
    config = EngineConfig.objects.select_related("engine__machine").get(name="sim-27b-q8-la12")
    command = [sys.executable, *simulator_command(0, config)]
    proc = subprocess.Popen(command, cwd=settings.BASE_DIR, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split("listening on ")[1].split()[0]
        Engine.objects.filter(name="sim-ollama").update(base_url=url)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def decode(lengths: dict, kind: str) -> dict[int, float]:
    for figures in lengths.values():
        client, engine = (figures[kind][f"decode_tps_{side}"]["median"] for side in ("client", "engine"))
        assert client == pytest.approx(engine, rel=0.15)
    return {int(k): v[kind]["decode_tps_engine"]["median"] for k, v in lengths.items()}


def acceptance(lengths: dict, kind: str) -> list[float]:
    return [lengths[k][kind]["acceptance_rate"]["pooled"] for k in ("4", "8", "12")]


def assert_trade_off(lengths: dict) -> None:
    """Structured output fastest at 8 and slowest at 0; Japanese prose flat; acceptance falling."""
    for kind in STRUCTURED:
        speed = decode(lengths, kind)
        assert max(speed, key=speed.__getitem__) == 8, (kind, speed)
        assert min(speed, key=speed.__getitem__) == 0, (kind, speed)
    prose = decode(lengths, "prose-ja")
    assert max(prose.values()) / min(prose.values()) < 1.1, prose
    rates = acceptance(lengths, "all")
    assert rates == sorted(rates, reverse=True) and rates[0] > rates[-1], rates


def test_it_shows_the_lookahead_trade_off_on_the_managed_llama_server_demo(demo, inprocess, capsys):
    Engine.objects.filter(name="sim-llama").update(base_url=f"http://127.0.0.1:{free_port()}")
    run = bench(capsys, "sim-moe-mtp8", "lookahead", *SWEEP)
    assert run["status"] == "succeeded", run["error"]
    lengths = run["summary"]["lengths"]
    assert_trade_off(lengths)
    at_four = {kind: lengths["4"][kind]["acceptance_rate"]["pooled"] for kind in ("tool-call", "prose-ja")}
    assert at_four["tool-call"] > 10 * at_four["prose-ja"]
    assert [s["lookahead"] for s in run["summary"]["engine_startups"]] == [0, 4, 8, 12]


def test_it_shows_the_trade_off_on_the_ollama_demo_with_acceptance_from_its_log(
    served_ollama_simulator, inprocess, capsys
):
    run = bench(capsys, "sim-27b-q8-la12", "lookahead", *SWEEP)
    assert run["status"] == "succeeded", run["error"]
    summary = run["summary"]
    assert summary["lengths"]["4"]["tool-call"]["acceptance_rate"] is None  # Ollama's replies carry none
    assert_trade_off(summary["lengths"])
    by_length = summary["log_acceptance_by_length"]
    assert by_length["0"] is None and by_length["4"]["requests"] == 6
    assert summary["log_acceptance"]["requests"] == 18


def test_it_shows_the_roofline_and_efficiency_of_a_demo_speed_run(demo, inprocess, capsys):
    Engine.objects.filter(name="sim-llama").update(base_url=f"http://127.0.0.1:{free_port()}")
    run = bench(capsys, "sim-moe-mtp8", "speed", "--reps", "1", "--warmup", "0", "--max-tokens", "16")
    assert run["status"] == "succeeded", run["error"]
    roofline = run["summary"]["roofline"]
    assert roofline["ceiling_tps"] == pytest.approx(273 * FASTER / 5.8, rel=1e-3)
    per_pass = run["summary"]["tokens_per_verification"]["pooled"]
    assert per_pass > 2
    assert roofline["ceiling_with_drafts_tps"] == pytest.approx(roofline["ceiling_tps"] * per_pass)
    # Against the ceiling with drafts, drafting costs a little: below plain decoding's 83 %, not 300 %.
    assert 0.6 < roofline["efficiency"] < 0.83
    # The decode it holds up is the pooled one, and the page is told so.
    assert roofline["measured_tps"] == run["summary"]["decode_tps_pooled"]
    assert roofline["measured_pooled"] is True


def test_it_shows_the_prompt_cache_discard_on_the_managed_demos_prefix_cache_probe(demo, inprocess, capsys):
    Engine.objects.filter(name="sim-llama").update(base_url=f"http://127.0.0.1:{free_port()}")
    # 3 x 30,000 bytes: a 22,500-token conversation, over the demo's 4 GiB (20,480-token) cache.
    run = bench(capsys, "sim-moe-mtp8", "prefix-cache", "--steps", "3", "--bytes-per-step", "30000")
    assert run["status"] == "succeeded", run["error"]
    assert run["summary"]["cache_discard_detected"] is True
    assert "cache-discard" in [warning["kind"] for warning in run["warnings"]]


def test_it_counts_every_requests_log_line_in_an_ollama_demo_speed_run(
    served_ollama_simulator, inprocess, capsys
):
    run = bench(capsys, "sim-27b-q8-la12", "speed", "--reps", "1", "--warmup", "0", "--max-tokens", "16")
    assert run["status"] == "succeeded", run["error"]
    # The last request's line lands just before the run ends, between two of the tail's polls.
    assert run["summary"]["log_acceptance"]["requests"] == 6
