"""A config.json-like dict from a GGUF header, so a GGUF-only repo is planned too.

Layer 1 (stage 3, extract), pure. llama.cpp's converter writes a model's hyper-parameters
as ``<arch>.*`` keys; this maps them back to the names transformers' config classes use,
for the architectures the planner sizes. The result goes through the same
``parse_model_config`` as a real config.json. None for an architecture not mapped (the
revision then has no plan, as a repo without config.json has none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tracker.model import WeightFile, WeightManifest
from tracker.model.inside import GgufInfo

#: GGUF architecture -> (model_type, class) of the transformers model it was converted from.
ARCHITECTURES: dict[str, tuple[str, str]] = {
    "llama": ("llama", "LlamaForCausalLM"),
    "mistral": ("mistral", "MistralForCausalLM"),
    "qwen2": ("qwen2", "Qwen2ForCausalLM"),
    "qwen2moe": ("qwen2_moe", "Qwen2MoeForCausalLM"),
    "qwen3": ("qwen3", "Qwen3ForCausalLM"),
    "qwen3moe": ("qwen3_moe", "Qwen3MoeForCausalLM"),
    "gemma": ("gemma", "GemmaForCausalLM"),
    "gemma2": ("gemma2", "Gemma2ForCausalLM"),
    "phi3": ("phi3", "Phi3ForCausalLM"),
    "starcoder2": ("starcoder2", "Starcoder2ForCausalLM"),
    "granite": ("granite", "GraniteForCausalLM"),
    "olmo2": ("olmo2", "Olmo2ForCausalLM"),
}
_KEYS = {
    "embedding_length": "hidden_size",
    "feed_forward_length": "intermediate_size",
    "block_count": "num_hidden_layers",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "context_length": "max_position_embeddings",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "rope.freq_base": "rope_theta",
    "attention.sliding_window": "sliding_window",
    "vocab_size": "vocab_size",
    "expert_feed_forward_length": "moe_intermediate_size",
}


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def config_from_gguf(info: GgufInfo) -> dict[str, Any] | None:
    """The config.json the GGUF was converted from, as far as its header says."""
    arch = info.architecture
    if arch is None or arch not in ARCHITECTURES:
        return None
    model_type, cls = ARCHITECTURES[arch]
    meta = info.metadata
    cfg: dict[str, Any] = {"architectures": [cls], "model_type": model_type, "torch_dtype": "bfloat16"}
    for key, name in _KEYS.items():
        value = meta.get(f"{arch}.{key}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            cfg[name] = value
    experts, used = _int(meta.get(f"{arch}.expert_count")), _int(meta.get(f"{arch}.expert_used_count"))
    if experts:
        if arch == "llama":  # Mixtral converts to the llama architecture with experts
            cfg["model_type"], cfg["architectures"] = "mixtral", ["MixtralForCausalLM"]
        cfg["num_local_experts" if cfg["model_type"] == "mixtral" else "num_experts"] = experts
        if used:
            cfg["num_experts_per_tok"] = used
    heads, key_length = _int(cfg.get("num_attention_heads")), _int(meta.get(f"{arch}.attention.key_length"))
    if key_length and heads and cfg.get("hidden_size") != heads * key_length:
        cfg["head_dim"] = key_length
    if "vocab_size" not in cfg:
        tokens = meta.get("tokenizer.ggml.tokens")
        if isinstance(tokens, dict) and type(tokens.get("count")) is int:
            cfg["vocab_size"] = tokens["count"]
        elif isinstance(tokens, list):
            cfg["vocab_size"] = len(tokens)
    names = {t.name for t in info.tensors}
    cfg["tie_word_embeddings"] = "output.weight" not in names
    return cfg


_SPLIT = re.compile(r"^(?P<stem>.*)-(?P<no>\d{5})-of-(?P<of>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class GgufModel:
    """One GGUF model of a repo: its (first) file, header, and the tensors of all its splits."""

    path: str
    content_ids: tuple[str, ...]
    info: GgufInfo
    tensor_bytes: dict[str, int]
    tensor_scalars: int


def choose_gguf(manifest: WeightManifest) -> GgufModel | None:
    """The GGUF model a plan is made for: Q4_K_M when the repo has it (the usual default pull),
    else the first by path; split files (``-00001-of-00003.gguf``) are one model."""
    groups: dict[str, list[WeightFile]] = {}
    for f in manifest.files:
        if f.format != "gguf" or not f.path.lower().endswith(".gguf") or "/" in f.path:
            continue
        m = _SPLIT.match(f.path)
        groups.setdefault(m.group("stem") if m else f.path, []).append(f)
    if not groups:
        return None
    key = next((k for k in sorted(groups) if "q4_k_m" in k.lower()), min(groups))
    files = sorted(groups[key], key=lambda f: f.path)
    if any(f.gguf is None for f in files):
        return None
    head = next((f for f in files if f.gguf is not None and f.gguf.architecture), None)
    if head is None or head.gguf is None:
        return None
    by_type: dict[str, int] = {}
    scalars = 0
    for f in files:
        assert f.gguf is not None
        for t, n in f.gguf.tensor_bytes.items():
            by_type[t] = by_type.get(t, 0) + n
        scalars += sum(t.numel for t in f.gguf.tensors)
    return GgufModel(head.path, tuple(f.content_id for f in files), head.gguf, by_type, scalars)
