"""`manage.py simengine`: argument checks, the profile it serves, and a real foreground run."""
from __future__ import annotations

import subprocess
import sys
from io import StringIO
from pathlib import Path
from unittest import mock

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from engines.simulator import SimProfile

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--acceptance", "1.5"), ("--acceptance", "-0.1"), ("--decode-tps", "0"), ("--lookahead", "65"),
        ("--acceptance-decay", "0"), ("--efficiency", "1.2"), ("--acceptance-by-type", "poetry=0.5"),
        ("--acceptance-by-type", "table=high"), ("--acceptance-by-type", "prose-ja=2"),
        ("--reasoning-tokens", "-1"), ("--reasoning-style", "xml"),
    ],
)
def test_it_rejects_an_impossible_value_naming_the_flag(flag: str, value: str) -> None:
    with pytest.raises(CommandError, match=flag):
        call_command("simengine", "--port", "0", flag, value)


def test_it_rejects_an_unknown_fault() -> None:
    with pytest.raises(CommandError, match="--fault"):
        call_command("simengine", "--port", "0", "--fault", "explode")


@mock.patch("engines.management.commands.simengine.serve_forever", autospec=True)
def test_it_serves_the_profile_it_was_given(serve_forever: mock.Mock) -> None:
    serve_forever.side_effect = lambda profile, host, port, on_ready, log_file: on_ready("http://127.0.0.1:9")
    out = StringIO()
    args = ["--port", "9", "--decode-tps", "25", "--lookahead", "4", "--fault", "cut", "--fault-after", "2"]
    call_command("simengine", *args, "--fault-every", "4", "--log-file", "/tmp/sim.log", stdout=out)
    profile = SimProfile(decode_tps=25, lookahead=4, fault="cut", fault_after=2, fault_every=4)
    serve_forever.assert_called_once_with(profile, "127.0.0.1", 9, mock.ANY, "/tmp/sim.log")
    assert "SIMULATOR" in out.getvalue()
    assert "http://127.0.0.1:9" in out.getvalue()
    assert "fault cut after 2 tokens on every 4th request" in out.getvalue()


@mock.patch("engines.management.commands.simengine.serve_forever", autospec=True)
def test_it_overrides_the_acceptance_of_the_output_types_it_is_given(serve_forever: mock.Mock) -> None:
    args = ["--acceptance-by-type", "table=0.5, prose-ja=0", "--acceptance-decay", "0.8"]
    args += ["--efficiency", "0.83"]
    call_command("simengine", "--port", "9", *args, "--bandwidth-gbps", "273", "--model-gb", "28.6")
    profile = serve_forever.call_args.args[0]
    assert profile.acceptance is None
    assert profile.acceptance_by_type == {"tool-call": 0.95, "table": 0.5, "prose-en": 0.55, "prose-ja": 0.0}
    assert profile.acceptance_decay == 0.8
    assert profile.decode_tps == pytest.approx(0.83 * 273 / 28.6)


@mock.patch("engines.management.commands.simengine.serve_forever", autospec=True)
def test_it_serves_reasoning_before_each_answer_when_asked(serve_forever: mock.Mock) -> None:
    serve_forever.side_effect = lambda profile, host, port, on_ready, log_file: on_ready("http://127.0.0.1:9")
    out = StringIO()
    args = ["--reasoning-tokens", "40", "--reasoning-style", "tags"]
    call_command("simengine", "--port", "9", *args, stdout=out)
    profile = serve_forever.call_args.args[0]
    assert (profile.reasoning_tokens, profile.reasoning_style) == (40, "tags")
    assert "40 reasoning tokens (tags)" in out.getvalue()


def test_it_names_what_is_wrong_with_a_profile_it_cannot_serve() -> None:
    with pytest.raises(CommandError, match="reasoning_tokens must be 0 or >= 4 in the tags style"):
        call_command("simengine", "--port", "0", "--reasoning-tokens", "2", "--reasoning-style", "tags")


def test_it_serves_in_the_foreground_until_stopped() -> None:
    command = [sys.executable, "manage.py", "simengine", "--port", "0"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split("listening on ")[1].split()[0]
        version = httpx.get(f"{url}/api/version", timeout=5).json()["version"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "SIMULATOR" in line
    assert "sparkdash-simulator" in version
