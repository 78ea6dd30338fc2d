"""GGUF test files written by the ``gguf`` package's own writer (a dev dependency)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import gguf
import numpy as np

TEMPLATE_V1 = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
#: the fix uploaders re-publish: each turn ends with the eos token
TEMPLATE_V2 = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
TOKENS = ["<unk>", "<s>", "</s>", "<|eot|>", *[f"t{i}" for i in range(96)]]


def gguf_bytes(
    *,
    template: str | None = TEMPLATE_V1,
    named_templates: Mapping[str, str] | None = None,
    eos: int = 2,
    context: int = 4096,
    ffn_type: str = "Q4_K",
    layers: int = 2,
    tokens: Sequence[str] = TOKENS,
    hidden: int = 256,
    extra: Mapping[str, str] | None = None,
) -> bytes:
    """A small llama GGUF: header keys like llama.cpp's converter writes, real tensor data."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.gguf"
        w = gguf.GGUFWriter(str(path), "llama")
        w.add_name("tiny")
        w.add_context_length(context)
        w.add_embedding_length(hidden)
        w.add_block_count(layers)
        w.add_feed_forward_length(hidden * 2)
        w.add_head_count(4)
        w.add_head_count_kv(2)
        w.add_rope_freq_base(10000.0)
        w.add_file_type(15 if ffn_type == "Q4_K" else 7)
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(list(tokens))
        w.add_token_types([1] * len(tokens))
        w.add_bos_token_id(1)
        w.add_eos_token_id(eos)
        if template is not None or named_templates:
            entries = [{"name": "default", "template": template}] if template is not None else []
            entries += [{"name": k, "template": v} for k, v in (named_templates or {}).items()]
            w.add_chat_template(entries if named_templates else template or "")
        for k, v in (extra or {}).items():
            w.add_string(k, v)
        qtype = getattr(gguf.GGMLQuantizationType, ffn_type)
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        w.add_tensor("token_embd.weight", np.zeros((len(tokens), hidden), dtype=np.float16))
        for i in range(layers):
            raw = np.zeros((hidden, hidden * 2 // block * size), dtype=np.uint8)  # rows of blocks
            w.add_tensor(f"blk.{i}.ffn_down.weight", raw, raw_dtype=qtype)
            w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(hidden, dtype=np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return path.read_bytes()
