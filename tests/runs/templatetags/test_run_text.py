"""A run's warnings said in the reader's language (runs/templatetags/run_text.py, runs/core/worded.py)."""
import pytest
from django.template import Context, Template
from django.utils import translation

from runs.core.telemetry_summary import throttled_message, throttled_words
from runs.core.worded import say, warning
from runs.worker.machine_figures import above_ceiling_warning

pytestmark = pytest.mark.backend_free

LINE = Template(
    "{% load run_text %}<strong>{% warning_label warning.kind %}:</strong> {% warning_message warning %}"
)
THROTTLE = {"throttled_s": 12.34, "job_s": 60.0, "clock_floor_mhz": 2102.1,
            "reasons_s": {"thermal": 2.0, "power_cap": 0.0, "clock_below": 10.34}}


def _line(found: dict) -> str:
    return LINE.render(Context({"warning": found}))


def test_it_says_a_worded_warning_in_english_by_default_and_in_japanese():
    port = warning("port", "port %(port)s still busy after stop", port=8000)
    assert port["message"] == "port 8000 still busy after stop"
    assert _line(port) == "<strong>port:</strong> port 8000 still busy after stop"
    with translation.override("ja"):
        assert _line(port) == "<strong>ポート:</strong> 停止後もポート 8000 が使用中です"


def test_it_keeps_the_stored_message_of_an_old_warning():
    old = {"kind": "cross-check", "message": "client decode speed 10.00 tok/s differs"}
    with translation.override("ja"):
        assert _line(old) == "<strong>デコード速度の照合:</strong> client decode speed 10.00 tok/s differs"
    assert _line({"kind": "new-kind", "message": "as stored"}) == "<strong>new-kind:</strong> as stored"


def test_it_says_nested_clauses_as_the_english_message_and_in_japanese():
    text, params = throttled_words(THROTTLE)
    assert say(text, params) == throttled_message(THROTTLE)
    assert throttled_message(THROTTLE) == (
        "throttled for 12.3 s of the 60.0 s job: thermal 2.0 s, SM clock under 2,102 MHz while busy 10.3 s")
    with translation.override("ja"):
        said = _line(warning("throttled", text, **params))
    assert "ジョブ 60.0 秒のうち 12.3 秒スロットリング: 温度 2.0 秒、稼働中の SM クロック" in said


def test_it_joins_two_ceilings_in_the_english_message():
    roofline = {"above_ceiling": True, "measured_tps": 120.0, "bandwidth_gbps": 273, "efficiency": 1.2,
                "ceiling_tps": 100.0, "measured_bandwidth_gbps": 250, "measured_efficiency": 1.3,
                "measured_ceiling_tps": 92.3}
    [found] = above_ceiling_warning(roofline)
    assert found["message"].startswith(
        "measured 120.0 tok/s is above the nominal ceiling 100.0 tok/s (273 GB/s; 120 %) and the measured "
        "ceiling 92.3 tok/s (250 GB/s; 130 %): check the bytes per token")
    with translation.override("ja"):
        assert "公称上限 100.0 tok/s（273 GB/s、120 %）と実測上限" in _line(found)
