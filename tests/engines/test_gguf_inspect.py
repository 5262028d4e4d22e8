"""engines.gguf_inspect: whole and truncated files, HTTP range reads, MTP and MoE detection, errors."""
from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFWriter, quants

from engines.gguf_inspect import GGUFError, GGUFInfo, inspect_file
from engines.gguf_remote import inspect_url

pytestmark = pytest.mark.backend_free

MODEL = Path("/root/.cache/sparkdash/engine/models/gemma3-270m-q4_k_m.gguf")
needs_model = pytest.mark.skipif(not MODEL.exists(), reason=f"the Gemma 3 270M GGUF is not at {MODEL}")
MiB = 1024 * 1024


def write_gguf(
    path: Path, arch: str, kv: dict[str, int], tensors: dict[str, np.ndarray], arrays: dict | None = None
) -> Path:
    writer = GGUFWriter(path, arch)
    for key, value in kv.items():
        writer.add_uint32(key, value)
    for key, values in (arrays or {}).items():
        writer.add_array(key, values)
    for name, array in tensors.items():
        if name.startswith("q8:"):  # quantize it: a block-quantized type, not only F32/F16
            q8 = GGMLQuantizationType.Q8_0
            writer.add_tensor(name[3:], quants.quantize(array, q8), raw_dtype=q8)
        else:
            writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def f32(*shape: int) -> np.ndarray:
    return np.ones(shape, dtype=np.float32)


def without_origin(info: GGUFInfo) -> dict:
    found = info.to_dict(tensors=True)
    return {k: v for k, v in found.items() if k not in ("source", "reader", "prefix_bytes_read")}


def mock_client(data: bytes, honour_range: bool = True, status: int = 200) -> httpx.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", request.headers.get("range", ""))
        if status != 200 or not honour_range or not m:
            return httpx.Response(status, content=data if status == 200 else b"nope")
        start, end = int(m[1]), min(int(m[2]), len(data) - 1)
        if start >= len(data):
            return httpx.Response(416)
        headers = {"Content-Range": f"bytes {start}-{end}/{len(data)}"}
        return httpx.Response(206, content=data[start : end + 1], headers=headers)

    return httpx.Client(transport=httpx.MockTransport(handle))


class RangeHandler(BaseHTTPRequestHandler):
    """Serves the file at server.file for any path but /missing.gguf, honouring `Range: bytes=a-b`."""

    def do_GET(self) -> None:
        if self.path == "/missing.gguf":
            self.send_error(404)
            return
        size = self.server.file.stat().st_size
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        start, end = (int(m[1]), min(int(m[2] or size - 1), size - 1)) if m else (0, size - 1)
        self.send_response(206 if m else 200)
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        with self.server.file.open("rb") as f:
            f.seek(start)
            self.wfile.write(f.read(end - start + 1))
        self.server.sent += end - start + 1

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def range_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    server.file, server.sent = MODEL, 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def truncated_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gguf") / "first-12mb.gguf"
    with MODEL.open("rb") as f:
        path.write_bytes(f.read(12 * MiB))
    return path


@needs_model
def test_it_reads_the_same_tensors_from_a_truncated_copy_and_the_whole_file(truncated_model: Path) -> None:
    whole, cut = inspect_file(MODEL), inspect_file(truncated_model)
    assert (whole.reader, cut.reader) == ("gguf", "prefix")
    assert cut.tensors == whole.tensors  # names, types, shapes, bytes and offsets
    assert cut.kv == whole.kv
    assert without_origin(cut) == without_origin(whole)


@needs_model
def test_it_reports_the_270m_model(truncated_model: Path) -> None:
    found = inspect_file(truncated_model).to_dict()
    assert found["architecture"] == "gemma3"
    assert found["tensor_count"] == 236
    assert found["tensors_bytes"] == 246_587_904
    # No output.weight: the Q8_0 embedding is the tied output head and is read in full every token.
    assert found["bytes_per_token"] == found["tensors_bytes"]
    assert list(found["quantization"]) == ["Q8_0", "Q5_0", "Q4_K", "Q6_K", "F32"]
    assert found["mtp_layers"] is False
    assert found["moe"] is None


@needs_model
def test_it_reads_only_a_prefix_over_http_range_requests(
    range_server: ThreadingHTTPServer, truncated_model: Path
) -> None:
    info = inspect_url(f"http://127.0.0.1:{range_server.server_port}/gemma3.gguf")
    assert info.prefix_bytes_read == 8 * MiB  # 4 MiB was too short for the 6.2 MB header
    assert range_server.sent == info.prefix_bytes_read < MODEL.stat().st_size / 20
    assert info.tensors == inspect_file(truncated_model).tensors


def test_it_reports_an_http_error(range_server: ThreadingHTTPServer) -> None:
    with pytest.raises(GGUFError, match="HTTP 404"):
        inspect_url(f"http://127.0.0.1:{range_server.server_port}/missing.gguf")


@pytest.fixture
def tokenized(tmp_path: Path) -> Path:
    # A 2,000-token vocabulary makes a 43 KB header: several doublings from a 1 KiB first read.
    arrays = {
        "tokenizer.ggml.tokens": [f"token-{i}" for i in range(2000)],
        "tokenizer.ggml.scores": [0.5] * 2000,
    }
    tensors = {"token_embd.weight": f32(64, 16), "blk.0.attn_q.weight": f32(256, 256)}
    return write_gguf(tmp_path / "tok.gguf", "llama", {}, tensors, arrays)


def test_it_doubles_the_prefix_until_the_header_fits(tokenized: Path) -> None:
    data = tokenized.read_bytes()
    info = inspect_url("http://models/tok.gguf", mock_client(data), first_bytes=1024)
    assert info.prefix_bytes_read == 64 * 1024
    assert info.header_bytes <= info.prefix_bytes_read < len(data)
    assert without_origin(info) == without_origin(inspect_file(tokenized))


def test_it_reads_a_prefix_from_a_server_that_ignores_range(tokenized: Path) -> None:
    data = tokenized.read_bytes()
    info = inspect_url("http://models/tok.gguf", mock_client(data, honour_range=False), first_bytes=1024)
    assert info.tensors == inspect_file(tokenized).tensors


def test_it_gives_up_past_the_prefix_cap(tokenized: Path) -> None:
    client = mock_client(tokenized.read_bytes())
    with pytest.raises(GGUFError, match="larger than 32768 bytes"):
        inspect_url("http://models/tok.gguf", client, first_bytes=1024, max_bytes=32768)


def test_it_reports_a_non_200_response() -> None:
    with pytest.raises(GGUFError, match="HTTP 403"):
        inspect_url("http://models/tok.gguf", mock_client(b"", status=403))


def test_it_detects_nextn_layers(tmp_path: Path) -> None:
    tensors = {
        "blk.0.attn_q.weight": f32(16, 16),
        "blk.1.nextn.eh_proj.weight": f32(16, 32),
        "blk.1.nextn.enorm.weight": f32(16),
    }
    path = write_gguf(tmp_path / "mtp.gguf", "glm4moe", {"glm4moe.nextn_predict_layers": 1}, tensors)
    info = inspect_file(path)
    assert info.to_dict()["mtp_layers"] is True
    assert info.nextn_predict_layers == 1
    assert info.mtp_bytes == (16 * 32 + 16) * 4
    assert info.bytes_per_token == 16 * 16 * 4  # plain decoding skips the MTP layer


def test_it_detects_legacy_mtp_tensors_without_the_key(tmp_path: Path) -> None:
    tensors = {"blk.0.attn_q.weight": f32(16, 16), "mtp.fc.weight": f32(16, 32)}
    info = inspect_file(write_gguf(tmp_path / "mtp.gguf", "qwen35", {}, tensors))
    assert (info.mtp_layers, info.nextn_predict_layers) == (True, 0)


def test_it_reports_no_mtp_layers_for_a_plain_model(tmp_path: Path) -> None:
    tensors = {"blk.0.attn_q.weight": f32(16, 16), "blk.1.attn_q.weight": f32(16, 16)}
    found = inspect_file(write_gguf(tmp_path / "plain.gguf", "glm4moe", {}, tensors)).to_dict()
    assert (found["mtp_layers"], found["nextn_predict_layers"], found["mtp_bytes"]) == (False, 0, 0)


@pytest.fixture
def moe_gguf(tmp_path: Path) -> Path:
    kv = {"qwen3moe.expert_count": 8, "qwen3moe.expert_used_count": 2}
    tensors = {
        "token_embd.weight": f32(64, 16),
        "output.weight": f32(64, 16),
        "q8:blk.0.attn_q.weight": f32(16, 64),
        "blk.0.ffn_gate_exps.weight": np.ones((8, 16, 32), dtype=np.float16),
        "blk.0.ffn_up_shexp.weight": f32(16, 32),
    }
    return write_gguf(tmp_path / "moe.gguf", "qwen3moe", kv, tensors)


def test_it_counts_used_experts_and_shared_experts_per_token(moe_gguf: Path) -> None:
    info = inspect_file(moe_gguf)
    sizes = {t.name: t.n_bytes for t in info.tensors}
    assert sizes["blk.0.attn_q.weight"] == 16 * 64 // 32 * 34  # Q8_0: 34-byte blocks of 32
    shared = sizes["output.weight"] + sizes["blk.0.attn_q.weight"] + sizes["blk.0.ffn_up_shexp.weight"]
    assert info.bytes_per_token == shared + sizes["blk.0.ffn_gate_exps.weight"] * 2 // 8
    assert info.to_dict()["moe"] == {"experts": 8, "used": 2}
    assert info.quantization["F16"] == {"tensors": 1, "bytes": 8 * 16 * 32 * 2}


def test_it_agrees_with_gguf_reader_on_a_prefix(moe_gguf: Path) -> None:
    data = moe_gguf.read_bytes()
    remote, local = inspect_url("http://models/moe.gguf", mock_client(data)), inspect_file(moe_gguf)
    assert (remote.reader, local.reader) == ("prefix", "gguf")
    assert without_origin(remote) == without_origin(local)


def test_it_counts_a_tied_embedding_as_the_output_head(tmp_path: Path) -> None:
    tensors = {"token_embd.weight": f32(64, 16), "blk.0.attn_q.weight": f32(16, 16)}
    tied = inspect_file(write_gguf(tmp_path / "tied.gguf", "llama", {}, tensors))
    untied_tensors = {**tensors, "output.weight": f32(64, 16)}
    untied = inspect_file(write_gguf(tmp_path / "untied.gguf", "llama", {}, untied_tensors))
    assert tied.bytes_per_token == tied.tensors_bytes
    assert untied.bytes_per_token == untied.tensors_bytes - 64 * 16 * 4  # one embedding row a token


def test_it_rejects_bytes_that_are_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b'{"__metadata__": {}}' * 10)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        inspect_file(path)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        inspect_url("http://models/x.gguf", mock_client(path.read_bytes()))


def test_it_rejects_a_file_cut_inside_its_header(tokenized: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tokenized.read_bytes()[:5000])
    with pytest.raises(GGUFError, match="ends at byte 5000"):
        inspect_file(cut)


def test_it_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GGUFError, match="No such file"):
        inspect_file(tmp_path / "absent.gguf")
