"""`manage.py gguf`: JSON findings, the roofline ceiling, and clear errors."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from gguf import GGUFWriter

pytestmark = pytest.mark.backend_free


def write_gguf(path: Path, arch: str, kv: dict[str, int], tensors: dict[str, np.ndarray]) -> Path:
    writer = GGUFWriter(path, arch)
    for key, value in kv.items():
        writer.add_uint32(key, value)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def mtp_gguf(tmp_path: Path) -> Path:
    tensors = {
        "output.weight": np.ones((100, 16), dtype=np.float32),
        "blk.0.attn_q.weight": np.ones((16, 16), dtype=np.float32),
        "blk.1.nextn.eh_proj.weight": np.ones((16, 32), dtype=np.float32),
    }
    return write_gguf(tmp_path / "mtp.gguf", "glm4moe", {"glm4moe.nextn_predict_layers": 1}, tensors)


def gguf_json(*args: str) -> dict:
    out = StringIO()
    call_command("gguf", *args, stdout=out)
    return json.loads(out.getvalue())


def test_it_prints_the_findings_as_json(mtp_gguf: Path) -> None:
    found = gguf_json(str(mtp_gguf))
    assert found["architecture"] == "glm4moe"
    assert found["mtp_layers"] is True
    assert found["nextn_predict_layers"] == 1
    assert found["bytes_per_token"] == (100 * 16 + 16 * 16) * 4
    assert "roofline" not in found
    assert "tensors" not in found


def test_it_lists_the_tensors_when_asked(mtp_gguf: Path) -> None:
    tensors = gguf_json(str(mtp_gguf), "--tensors")["tensors"]
    assert [t["name"] for t in tensors][-1] == "blk.1.nextn.eh_proj.weight"
    assert tensors[-1]["shape"] == [32, 16]  # ggml order: numpy's (16, 32) reversed
    assert tensors[-1]["ggml_type"] == "F32"


def test_it_adds_the_roofline_ceiling_for_a_bandwidth(mtp_gguf: Path) -> None:
    line = gguf_json(str(mtp_gguf), "--bandwidth-gbps", "273", "--measured-tps", "1e7")["roofline"]
    assert line["bytes_per_token"] == 7424 and line["bytes_source"] == "gguf"
    assert line["ceiling_tps"] == pytest.approx(273e9 / 7424)
    assert line["efficiency"] == pytest.approx(1e7 / (273e9 / 7424))


def test_it_takes_a_bytes_per_token_override(mtp_gguf: Path) -> None:
    args = ["--bandwidth-gbps", "273", "--bytes-per-token", "28600000000"]
    line = gguf_json(str(mtp_gguf), *args)["roofline"]
    assert (line["bytes_source"], round(line["ceiling_tps"], 1)) == ("override", 9.5)


def test_it_rejects_an_override_without_a_bandwidth(mtp_gguf: Path) -> None:
    with pytest.raises(CommandError, match="need --bandwidth-gbps"):
        call_command("gguf", str(mtp_gguf), "--bytes-per-token", "1000")


def test_it_rejects_a_zero_bandwidth(mtp_gguf: Path) -> None:
    with pytest.raises(CommandError, match="bandwidth must be > 0"):
        call_command("gguf", str(mtp_gguf), "--bandwidth-gbps", "0", stdout=StringIO())


def test_it_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="No such file"):
        call_command("gguf", str(tmp_path / "absent.gguf"))


def test_it_reports_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(CommandError, match="not a GGUF file"):
        call_command("gguf", str(path))


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves a directory; like every SimpleHTTPRequestHandler it ignores Range and sends whole files."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[str]:
    handler = partial(QuietHandler, directory=str(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_it_reads_a_url(mtp_gguf: Path, file_server: str) -> None:
    found = gguf_json(f"{file_server}/{mtp_gguf.name}")
    assert found["mtp_layers"] is True
    assert found["prefix_bytes_read"] == mtp_gguf.stat().st_size  # smaller than the first 4 MiB


def test_it_reports_an_http_error(file_server: str) -> None:
    with pytest.raises(CommandError, match="HTTP 404"):
        call_command("gguf", f"{file_server}/absent.gguf")
