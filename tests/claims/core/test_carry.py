"""What of a claim a config here takes, what it leaves with the reason, and the roofline's ceiling."""

import textwrap

import pytest

from claims.core.carry import cannot_reproduce, carry
from claims.core.plausible import exceeds
from claims.core.reading import read_claim_file

pytestmark = pytest.mark.backend_free


def claim(
    settings: str = "{}", figures: str = "[{metric: decode_tps, value: 50}]", hardware: str = "nodes: 1"
):
    return read_claim_file(
        "c.yaml",
        textwrap.dedent(f"""\
        claim:
          source: {{title: t}}
          hardware: {{bandwidth_gbps: 273, {hardware}}}
          engine: {{kind: llama-server}}
          model: {{quantization: Q4_K_M, bytes_per_token_gb: 28.6}}
          settings: {settings}
          workload: {{concurrency: [1], output_tokens: 32, sampling: {{temperature: 0, min_p: 0.1}}}}
          figures: {figures}
        """),
    )


def test_it_carries_allowed_flags_and_lists_refused_ones_with_the_reason():
    carried = carry(
        claim(
            '{lookahead: 4, extra_flags: ["--trust-remote-code", "--flash-attn", "on", '
            '"--port", "9", "--no-such-flag"]}'
        ),
        "llama-server",
    )
    assert carried.extra_flags == ["--flash-attn", "on"]
    assert carried.fields["lookahead"] == 4 and carried.fields["max_tokens"] == 32
    left = {item["setting"]: item["why"] for item in carried.not_carried_over}
    assert left["--trust-remote-code"] == "loads code" and left["--port"].startswith("binds a host or port")
    assert "not an allowed llama-server flag" in left["--no-such-flag"]
    assert left["sampling.min_p: 0.1"] == "not a sampling setting SparkDash sends"


def test_it_says_before_running_what_this_machine_cannot_reproduce():
    found = cannot_reproduce(claim(hardware="nodes: 2"), "vllm", 100.0)
    assert [item["what"] for item in found] == ["2 nodes", "273 GB/s", "Q4_K_M"]
    assert cannot_reproduce(claim(), "llama-server", 273.0) == []


def test_it_finds_a_decode_above_the_roofline_with_its_arithmetic():
    plain = claim()
    assert exceeds(plain, plain.figures[0]) == {
        "bandwidth_gbps": 273.0,
        "bytes_per_token_gb": 28.6,
        "tokens_per_verification": 1.0,
        "tokens_per_verification_from": "no drafting",
        "streams": 1,
        "ceiling_tps": 9.545,
        "claimed": 50.0,
        "arithmetic": "273 GB/s / 28.6 GB = 9.5 tok/s = 9.5 tok/s",
    }


def test_it_raises_the_ceiling_by_the_claimed_tokens_per_verification_or_lookahead_plus_one():
    drafted = claim(
        "{lookahead: 12}",
        "[{metric: decode_tps, value: 37.4}, {metric: tokens_per_verification, value: 9.95}]",
    )
    assert exceeds(drafted, drafted.figures[0]) is None  # 9.545 x 9.95 = 95 tok/s
    by_lookahead = claim("{lookahead: 4}", "[{metric: decode_tps, value: 50}]")
    ceiling = exceeds(by_lookahead, by_lookahead.figures[0])
    assert ceiling is not None and ceiling["tokens_per_verification"] == 5.0  # 47.7 < 50
