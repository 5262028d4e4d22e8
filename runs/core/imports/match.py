"""Whether a result file can be the config's: its model, engine kind and backend against the config
it is attached to. Plain Python, no Django (runs.actions.imports gives the config as a Target).

Model names are compared by `model_key`, the normalisation docs/imports.md states: the last part
of a path (a GGUF file, a Hugging Face folder or repo id), without `.gguf`; lower case; without a
trailing quantization (Q4_K_M, IQ4_XS, Q8_0, BF16, F16, FP8, NVFP4, MXFP4, AWQ, GPTQ, INT4, …) or
format marker (GGUF, HF, MLX); with every `-`, `_`, `.`, `:` and space taken out, so
`/models/gemma3-270m-q4_k_m.gguf`, `google/gemma-3-270m`, `gemma3:270m` and llama-bench's own
`gemma3 270M Q4_K - Medium` are one model, and `gemma-3-270m-it` another. Where both the file and
the config name a quantization, they must be the same too. A file that names no model, no
quantization or no engine is not a mismatch by that alone.

The engine: llama-bench runs llama.cpp in its own process (never a server, so never the
simulator); a tool's backend option names an engine where it speaks that engine's protocol
(vLLM's and SGLang's `--backend vllm`, `sglang`, `llama.cpp`, `tgi`, …); a generic one (`openai`,
`openai-chat`, `sglang-oai-chat`, GuideLLM's `openai_http`) names none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engines import kinds
from measure.words import gettext_noop
from runs.core.imports.levels import PeerFile
from runs.core.refusal import Refusal

__all__ = ["Mismatch", "Mismatched", "Target", "file_engine", "mismatches", "model_key"]

QUANT = (
    r"i?q\d+(?:_[a-z0-9]+)*|bf16|fp16|f16|f32|fp8|fp4|nvfp4|mxfp4(?:[ _]moe)?|int[48]|w[48]a(?:8|16)"
    r"|awq|gptq|exl2"
)
FORMAT = r"gguf|hf|mlx|safetensors"
SEPARATORS = re.compile(r"[\s\-_.:]+")
TRAILING = re.compile(rf"[\s\-_.:]((?:{QUANT})|(?:{FORMAT}))$")
LLAMA_CPP_TYPE = re.compile(rf"\s((?:{QUANT}))\s+-\s+(medium|small|large|xl)$")  # "Q4_K - Medium"
# A backend option that names the engine it speaks to (its protocol is that engine's): the kind.
# SparkDash's own kinds declare theirs (engines.kinds, backend_names); these are engines it does not run.
OTHER_BACKENDS = {
    "tgi": "tgi",
    "lmdeploy": "lmdeploy",
    "lmdeploy-chat": "lmdeploy",
    "trt": "tensorrt-llm",
    "tensorrt-llm": "tensorrt-llm",
    "deepspeed-mii": "deepspeed-mii",
    "scalellm": "scalellm",
}
BACKEND_KINDS = OTHER_BACKENDS | {
    backend: kind for kind in kinds.names() for backend in kinds.get(kind).backend_names
}
# Tools that load the model themselves, and the kind of engine they run it in (llama.cpp's: the kind
# whose backend names say llama.cpp).
IN_PROCESS = {"llama-bench": BACKEND_KINDS["llama.cpp"]}

# What a mismatch is about, as a run page names it.
WHATS = (gettext_noop("model"), gettext_noop("quantization"), gettext_noop("backend"), gettext_noop("engine"))
MODEL = gettext_noop("the file's model is %(file)s; config %(config)s serves %(model)s on %(engine)s")
QUANTIZATION = gettext_noop(
    "the file's model is quantized %(file)s; config %(config)s serves %(model)s at %(quantization)s"
)
BACKEND = gettext_noop(
    "the file's backend is %(file)s, a %(kind)s engine; config %(config)s runs on "
    "%(engine)s, a %(engine_kind)s engine"
)
IN_PROCESS_TEXT = gettext_noop(
    "the file was measured by %(tool)s inside its own process (%(file)s); config "
    "%(config)s runs on %(engine)s"
)
REFUSED = gettext_noop(
    "%(name)s does not match the config it is attached to: %(what)s. Import it anyway "
    "only if you know why (--accept-mismatch, or the box on the import page)."
)


@dataclass(frozen=True)
class Target:
    """The config a file is attached to, as compared: its name, model, quantization and engine."""

    config: str
    model: str
    quantization: str
    engine: str  # as pages name it: "sim-llama (simulator)"
    kind: str
    simulator: bool


@dataclass(frozen=True)
class Mismatch:
    """One contradiction: what ("model", "quantization", "backend", "engine"), each side's value, and
    the sentence naming both (a Refusal, translated where shown)."""

    what: str
    file: str
    config: str
    sentence: Refusal

    def as_record(self) -> dict[str, str]:
        """What a run keeps of an accepted mismatch (its provenance)."""
        return {"what": self.what, "file": self.file, "config": self.config, "text": str(self.sentence)}


class Mismatched(Refusal):
    """A file that contradicts its config, refused unless the user accepts it; names each mismatch."""

    def __init__(self, name: str, found: list[Mismatch]) -> None:
        super().__init__(REFUSED, name=name, what="; ".join(str(m.sentence) for m in found))
        self.name, self.mismatches = name, found


def model_key(name: str) -> tuple[str, str]:
    """(the model as compared, its quantization as named, lower case): "" where the name says none."""
    last = re.split(r"[/\\]", name.strip().rstrip("/\\"))[-1].lower().strip()
    last = re.sub(r"\.gguf$", "", last)
    quantization = ""
    if found := LLAMA_CPP_TYPE.search(last):
        quantization, last = f"{found.group(1)}_{found.group(2)[0]}", last[: found.start()]
    while found := TRAILING.search(last):
        if not quantization and re.fullmatch(QUANT, found.group(1)):
            quantization = found.group(1)
        last = last[: found.start()]
    return SEPARATORS.sub("", last), quantization


def file_engine(peer: PeerFile) -> str:
    """The engine kind the file says it measured, "" where it names none."""
    return IN_PROCESS.get(peer.tool) or BACKEND_KINDS.get(peer.backend.strip().lower(), "")


def mismatches(peer: PeerFile, target: Target) -> list[Mismatch]:
    """Each way the file contradicts `target`; empty where nothing it names does."""
    return [*_model(peer, target), *_engine(peer, target)]


def _model(peer: PeerFile, target: Target) -> list[Mismatch]:
    (ours, named_quant), (theirs, their_quant) = model_key(target.model), model_key(peer.model)
    if not theirs or not ours:
        return []
    if ours != theirs:
        sentence = Refusal(
            MODEL, file=peer.model, config=target.config, model=target.model, engine=target.engine
        )
        return [Mismatch("model", peer.model, target.model, sentence)]
    quantization = (target.quantization or named_quant).upper()
    if their_quant and quantization and _same(their_quant) != _same(quantization):
        sentence = Refusal(
            QUANTIZATION,
            file=their_quant.upper(),
            config=target.config,
            model=target.model,
            quantization=quantization,
        )
        return [Mismatch("quantization", their_quant.upper(), quantization, sentence)]
    return []


def _same(quantization: str) -> str:
    return SEPARATORS.sub("", quantization.lower())


def _engine(peer: PeerFile, target: Target) -> list[Mismatch]:
    kind = file_engine(peer)
    if peer.tool in IN_PROCESS and (target.simulator or kind != target.kind):
        return [
            Mismatch(
                "engine",
                kind,
                target.engine,
                Refusal(
                    IN_PROCESS_TEXT, tool=peer.tool, file=kind, config=target.config, engine=target.engine
                ),
            )
        ]
    if kind and kind != target.kind:
        return [
            Mismatch(
                "backend",
                peer.backend,
                target.kind,
                Refusal(
                    BACKEND,
                    file=peer.backend,
                    kind=kind,
                    config=target.config,
                    engine=target.engine,
                    engine_kind=target.kind,
                ),
            )
        ]
    return []
