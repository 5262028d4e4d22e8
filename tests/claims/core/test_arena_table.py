"""A recipe author's measured table read into figures."""

from pathlib import Path

import pytest

from claims.core.arena_table import read_table
from claims.core.schema import ClaimRefused

pytestmark = pytest.mark.backend_free

BENCHY = Path(__file__).resolve().parents[2] / "fixtures" / "peers" / "llama-benchy" / "llama-benchy-c4.md"


def test_it_reads_llama_benchys_table_per_stream_total_and_ttft():
    assert read_table("t", BENCHY.read_text()) == [
        {"metric": "decode_tps", "concurrency": 4, "value": 30.71, "spread": 0.16},
        {"metric": "decode_tps_total", "concurrency": 4, "value": 122.69, "spread": 0.68},
        {"metric": "ttft_ms", "concurrency": 4, "value": 730.55, "spread": 2.91},
    ]


def test_it_reads_seconds_as_milliseconds():
    table = "| c | decode t/s | TTFT (s) |\n|-|-|-|\n| 1 | 37.3 | 0.856 |\n"
    assert read_table("t", table)[1] == {"metric": "ttft_ms", "concurrency": 1, "value": 856.0}


@pytest.mark.parametrize(
    "table", ["no table", "| c | decode |\n|-|-|\n| 1 | -4 |", "| a | b |\n|-|-|\n| 1 | 2 |"]
)
def test_it_refuses_a_table_without_a_figure_or_with_a_bad_cell(table):
    with pytest.raises(ClaimRefused):
        read_table("t", table)
