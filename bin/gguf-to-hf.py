"""Turn the Gemma 3 270M GGUF into a Hugging Face safetensors folder that vLLM's CPU build loads.

vLLM 0.32 reads no GGUF on the CPU, and transformers refuses to save a GGUF-quantized model, so
the weights are dequantized on load and written with safetensors here. The GGUF carries no chat
template and its tokenizer must be told to add <bos>; both are set below. Run with the vLLM
venv's python (it has torch, transformers, accelerate, gguf):

    python bin/gguf-to-hf.py MODEL.gguf OUT_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

END_OF_TURN = 106  # <end_of_turn>: a chat answer ends here, so it must stop generation

# Gemma 3's turn format: <start_of_turn>role\n ... <end_of_turn>\n, the assistant's role is
# "model", and a system message is folded into the first user turn (Gemma has no system role).
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- set ns = namespace(system='') -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{%- set ns.system = ns.system + message['content'] + '\n\n' -%}"
    "{%- else -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}"
    "{{ '<start_of_turn>' + role + '\n' }}"
    "{%- if role == 'user' and ns.system -%}{{ ns.system }}{%- set ns.system = '' -%}{%- endif -%}"
    "{{ message['content'] | trim }}{{ '<end_of_turn>\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)


def convert(gguf: Path, out: Path) -> None:
    """Write config.json, model.safetensors, the tokenizer and generation_config.json to `out`."""
    out.mkdir(parents=True, exist_ok=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    weights = {name: t.detach().contiguous() for name, t in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        weights.pop("lm_head.weight", None)  # the same tensor as the embedding: saved once
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "transformers_version"):
        config.pop(key, None)
    config["architectures"] = [type(model).__name__]  # the GGUF config leaves it empty; vLLM needs it
    (out / "config.json").write_text(json.dumps(config, indent=2))
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.add_bos_token = True
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    saved = out / "tokenizer_config.json"
    saved.write_text(json.dumps(json.loads(saved.read_text()) | {"add_bos_token": True}, indent=2))
    eos = sorted({config.get("eos_token_id") or 1, END_OF_TURN})
    generation = {"bos_token_id": config.get("bos_token_id", 2), "eos_token_id": eos,
                  "pad_token_id": config.get("pad_token_id", 0)}
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2))
    _check(model, out)


def _check(model: torch.nn.Module, out: Path) -> None:
    """The saved folder must give the same greedy tokens as the GGUF it came from."""
    reloaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(out)
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    if ids[0, 0].item() != tokenizer.bos_token_id:
        raise SystemExit("the saved tokenizer does not add <bos>")
    with torch.no_grad():
        a = model.generate(ids, max_new_tokens=8, do_sample=False)
        b = reloaded.generate(ids, max_new_tokens=8, do_sample=False)
    if not torch.equal(a, b):
        raise SystemExit("the saved model's greedy output differs from the GGUF's")
    print("converted:", repr(tokenizer.decode(b[0, ids.shape[1]:])))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
