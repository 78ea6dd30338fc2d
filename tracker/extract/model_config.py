"""Parse config.json into a typed :class:`ModelConfig`, as the family's config class would.

Layer 1 (stage 3, extract), pure. The file is hostile until parsed: every value is checked
(type, range, size) and a problem becomes an entry of ``ModelConfig.issues``, never an
exception. Defaults come from the family's config class (``model_config_families``), key
aliases are resolved, and the derived values the class computes (kv heads, head_dim, layer
types, ...) are computed the same way, so that the planner sees what transformers builds.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, TypeGuard

from tracker.extract.model_config_families import (
    ALIASES,
    DEFAULTS,
    EXTRA_ALIASES,
    MODEL_TYPE_ALIASES,
    REMOTE_ALIASES,
    REMOTE_FAMILIES,
)
from tracker.extract.model_config_multimodal import (
    COMPOSITES,
    MULTIMODAL_INT_KEYS,
    PLANNED_AS,
    sub_config,
)
from tracker.extract.model_config_newest import (
    NEWEST_COMPOSITES,
    NEWEST_INT_KEYS,
    NEWEST_MOE,
    NEWEST_OPTIONAL_SUBS,
    derive_newest,
)
from tracker.extract.model_config_ssm import ATTENTION_FREE, SSM_INT_KEYS, derive_ssm
from tracker.model.plan import ModelConfig, Quantization, RopeScaling

MAX_DIM = 1 << 40  # no real dimension comes near; bigger is hostile or a typo
MAX_LAYERS = 4096  # the planner walks layers one by one
MAX_LIST = 4096
MAX_STR = 256
_COMPOSITE_SUBS = {
    "gemma3": {"text_config": "gemma3_text", "vision_config": "siglip_vision_model"},
    "clip": {"text_config": "clip_text_model", "vision_config": "clip_vision_model"},
    **NEWEST_COMPOSITES,
}
#: Keys whose value must be a non-negative integer where present (None allowed).
_INT_KEYS = frozenset(
    ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size", "max_position_embeddings", "n_embd", "n_layer", "n_head", "n_inner", "n_positions", "d_model", "n_layers", "n_heads", "dim", "hidden_dim", "d_ff", "d_kv", "num_layers", "num_heads", "num_decoder_layers", "encoder_layers", "decoder_layers", "encoder_ffn_dim", "decoder_ffn_dim", "encoder_attention_heads", "decoder_attention_heads", "num_kv_heads", "ffn_hidden_size", "word_embed_proj_dim", "embedding_size", "moe_intermediate_size", "shared_expert_intermediate_size", "num_local_experts", "n_routed_experts", "num_experts", "num_experts_per_tok", "n_shared_experts", "first_k_dense_replace", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "type_vocab_size", "image_size", "patch_size", "num_channels", "projection_dim", "max_seq_len", "expansion_ratio", "decoder_sparse_step", "max_source_positions", "max_target_positions", "num_mel_bins", "sliding_window", "rotary_dim", "max_relative_positions", "position_buckets", "conv_kernel_size", "relative_attention_num_buckets", "pooler_hidden_size", "num_labels"]
) | NEWEST_INT_KEYS | SSM_INT_KEYS | MULTIMODAL_INT_KEYS
_CORE = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "n_layer",
         "n_layers", "num_layers", "n_embd", "d_model", "dim", "encoder_layers",
         "decoder_layers", "num_decoder_layers")
_LAYER_KEYS = frozenset({"num_hidden_layers", "n_layer", "n_layers", "num_layers",
                         "num_decoder_layers", "encoder_layers", "decoder_layers"})


def parse_model_config(config: Any) -> ModelConfig:
    """The typed config of a parsed config.json; never raises, problems go to ``issues``."""
    if not isinstance(config, dict):
        return ModelConfig(None, None, None, issues=("config.json is not a JSON object",), fatal=True)
    issues: list[str] = []
    raw_mt = config.get("model_type")
    model_type = raw_mt[:MAX_STR] if isinstance(raw_mt, str) else None
    if raw_mt is not None and model_type is None:
        issues.append("model_type is not a string")
    archs = config.get("architectures")
    architecture = None
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        architecture = archs[0][:MAX_STR]
    remote = isinstance(config.get("auto_map"), dict)
    key = MODEL_TYPE_ALIASES.get(model_type or "", model_type or "")
    family = REMOTE_FAMILIES.get(key) or (PLANNED_AS.get(key, key) if key in DEFAULTS else None)
    if family is None and _generic_decoder(config, architecture):
        try:
            generic = _build(config, model_type, architecture, "llama", "llama",
                             ALIASES.get("llama", {}), remote, list(issues))
        except Exception:  # hostile shapes: treated as unknown below
            generic = None
        if generic is not None and not generic.fatal:
            return replace(generic, approximate=True)
    if family is None:
        return ModelConfig(model_type, architecture, None, values=_scalars(config, issues),
                           remote_code=remote, issues=tuple(issues))
    aliases = {**ALIASES.get(family, {}), **ALIASES.get(key, {}), **EXTRA_ALIASES.get(family, {}),
               **REMOTE_ALIASES.get(key, {})}
    try:
        return _build(config, model_type, architecture, family, key, aliases, remote, issues)
    except Exception as exc:  # a shape of hostile input not foreseen: recorded, never raised
        issues.append(f"config could not be read: {type(exc).__name__}: {str(exc)[:200]}")
        return ModelConfig(model_type, architecture, family, remote_code=remote,
                           issues=tuple(issues), fatal=True)


#: The keys a decoder-only config of an unknown family must have to be sized as a generic one.
_GENERIC_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                 "vocab_size")


def _generic_decoder(config: dict[str, Any], architecture: str | None) -> bool:
    """An unknown model_type with the usual decoder keys and a causal-LM (or no) class."""
    if not all(_is_int(config.get(k)) and config.get(k) for k in _GENERIC_KEYS):
        return False
    if any(isinstance(config.get(k), dict) for k in ("text_config", "vision_config",
                                                      "encoder", "decoder")):
        return False
    arch = architecture or ""
    return not arch or arch.endswith(("ForCausalLM", "LMHeadModel", "Model"))


def _build(config: dict[str, Any], model_type: str | None, architecture: str | None,
           family: str, key: str, aliases: dict[str, str], remote: bool,
           issues: list[str]) -> ModelConfig:
    values: dict[str, Any] = dict(DEFAULTS[key] if key in DEFAULTS else DEFAULTS[family])
    user = _scalars(config, issues)
    for k, v in user.items():
        values[aliases.get(k, k)] = v
    if key in ("RefinedWeb", "RefinedWebModel"):
        values["new_decoder_architecture"] = key == "RefinedWeb"
    subs: dict[str, ModelConfig] = {}
    unknown_sub = False
    for sub_key, sub_family in _COMPOSITE_SUBS.get(family, {}).items():
        sub_raw = config.get(sub_key)
        if (family, sub_key) in NEWEST_OPTIONAL_SUBS and not isinstance(sub_raw, dict):
            continue
        sub_cfg = dict(sub_raw) if isinstance(sub_raw, dict) else {}
        sub_cfg["model_type"] = sub_family
        sub = parse_model_config(sub_cfg)
        subs[sub_key.removesuffix("_config")] = sub
        issues.extend(f"{sub_key}: {m}" for m in sub.issues)
    for sub_key in COMPOSITES.get(family, {}):  # vision-language: a tower, a language model
        sub = parse_model_config(sub_config(family, sub_key, config.get(sub_key)))
        subs[sub_key.removesuffix("_config")] = sub
        issues.extend(f"{sub_key}: {m}" for m in sub.issues)
        if sub.family is None:  # a tower or language model the planner cannot build
            issues.append(f"{sub_key}: model_type {sub.model_type!r} is not supported")
            unknown_sub = True
    _derive(family, values, user)
    labels = config.get("id2label")  # read raw: a 1000-class head's map is over the dict cap
    if "num_labels" not in user and isinstance(labels, dict) and labels:
        values["num_labels"] = len(labels)
    fatal = _check_ints(values, issues) or unknown_sub
    quant = _quant(config, issues)  # raw: compressed-tensors nests its widths deeper than the cap
    return _typed(model_type, architecture, family, values, user, subs, remote, issues, fatal,
                  quant)


def _scalars(config: dict[str, Any], issues: list[str]) -> dict[str, Any]:
    """The JSON scalars, short lists and small dicts of a config, size-capped."""
    out: dict[str, Any] = {}
    for k, v in list(config.items())[:MAX_LIST]:
        if not isinstance(k, str) or len(k) > MAX_STR:
            continue
        clean = _clean(v, 0)
        if clean is _DROP:
            issues.append(f"{k}: value dropped (too large or not JSON)")
            continue
        if k in _INT_KEYS and clean is not None and not _is_int(clean):
            issues.append(f"{k}: expected an integer, got {type(v).__name__}")
            continue
        out[k] = clean
    return out


_DROP = object()


def _clean(v: Any, depth: int) -> Any:
    if v is None or isinstance(v, bool | int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else _DROP
    if isinstance(v, str):
        return v if len(v) <= MAX_STR * 16 else _DROP
    if depth >= 3:
        return _DROP
    if isinstance(v, list):
        if len(v) > MAX_LIST:
            return _DROP
        items = [_clean(x, depth + 1) for x in v]
        return _DROP if any(x is _DROP for x in items) else items
    if isinstance(v, dict):
        if len(v) > 256:
            return _DROP
        d = {str(k): _clean(x, depth + 1) for k, x in v.items()}
        return {k: x for k, x in d.items() if x is not _DROP}
    return _DROP


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_ints(values: dict[str, Any], issues: list[str]) -> bool:
    """Record out-of-range integers; a bad core dimension makes the config fatal."""
    fatal = False
    for k in _INT_KEYS:
        v = values.get(k)
        limit = MAX_LAYERS if k in _LAYER_KEYS else MAX_DIM
        if _is_int(v) and not 0 <= v <= limit:
            issues.append(f"{k}: {v} is out of range")
            values[k] = None
            fatal = fatal or k in _CORE
    return fatal


def _derive(family: str, v: dict[str, Any], user: dict[str, Any]) -> None:
    """The derived values the family's config class computes in ``__post_init__``."""
    heads = v.get("num_attention_heads")
    hidden = v.get("hidden_size")
    if "num_key_value_heads" in v and v.get("num_key_value_heads") is None:
        v["num_key_value_heads"] = heads
    if family in ("llama", "mistral", "gpt_oss") and v.get("head_dim") is None \
            and _is_int(hidden) and _is_int(heads) and heads:
        v["head_dim"] = hidden // heads
    if family in ("deepseek_v2", "deepseek_v3"):
        v["qk_head_dim"] = _int(v, "qk_nope_head_dim") + _int(v, "qk_rope_head_dim")
    if family == "falcon":
        if v.get("num_kv_heads") is None:
            v["num_kv_heads"] = heads
        if v.get("ffn_hidden_size") is None and _is_int(hidden):
            v["ffn_hidden_size"] = 4 * hidden
    if family == "opt" and v.get("word_embed_proj_dim") is None:
        v["word_embed_proj_dim"] = hidden
    if family in ("t5", "mt5"):
        if v.get("num_decoder_layers") is None:
            v["num_decoder_layers"] = v.get("num_layers")
        proj = v.get("feed_forward_proj")
        v["is_gated_act"] = isinstance(proj, str) and proj.split("-")[0] == "gated"
        v["tie_word_embeddings"] = True  # the config class forces it
    if family == "deberta-v2":
        pat = v.get("pos_att_type")
        if isinstance(pat, str):
            v["pos_att_type"] = [x.strip() for x in pat.lower().split("|")]
        v["pooler_hidden_size"] = user.get("pooler_hidden_size", v.get("hidden_size"))
    if family == "vit" and not v.get("pooler_output_size"):
        v["pooler_output_size"] = hidden
    if family == "gpt_bigcode":
        v["num_key_value_heads"] = 1 if v.get("multi_query") else v.get("n_head")
    derive_ssm(family, v)
    if family == "modernbert" and _is_int(v.get("local_attention")):
        v["sliding_window"] = v["local_attention"]  # what a local layer attends to
    if family == "phi" and "intermediate_size" in user and user["intermediate_size"] is None \
            and _is_int(hidden):
        v["intermediate_size"] = 4 * hidden  # MixFormer's n_inner = None
    _derive_layer_types(family, v, user)
    derive_newest(family, v, user)
    labels = user.get("id2label")
    if _is_int(user.get("num_labels")):
        v["num_labels"] = user["num_labels"]
    elif isinstance(labels, dict) and labels:
        v["num_labels"] = len(labels)
    else:
        v["num_labels"] = 3 if family == "bart" else 2


def _derive_layer_types(family: str, v: dict[str, Any], user: dict[str, Any]) -> None:
    n = v.get("num_hidden_layers")
    if not _is_int(n) or n > MAX_LIST:
        return
    given = user.get("layer_types")
    if isinstance(given, list) and all(isinstance(x, str) for x in given):
        v["layer_types"] = given
        return
    window = v.get("sliding_window")
    if family in ("qwen2", "qwen3", "qwen3_moe"):
        v["sliding_window"] = window if v.get("use_sliding_window") else None
        mwl = _int(v, "max_window_layers")
        types = ["sliding_attention" if v["sliding_window"] is not None and i >= mwl
                 else "full_attention" for i in range(n)]
    elif family == "gemma2" or family == "gpt_oss":
        types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    elif family == "gemma3_text":
        pattern = user.get("sliding_window_pattern", 6)
        pattern = pattern if _is_int(pattern) and pattern > 0 else 6
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    elif family in ("mistral", "mixtral", "starcoder2", "cohere") and _is_int(window):
        types = ["sliding_attention"] * n
    elif family == "modernbert":
        every = v.get("global_attn_every_n_layers")
        every = every if _is_int(every) and every > 0 else 3
        types = ["sliding_attention" if i % every else "full_attention" for i in range(n)]
    else:
        return
    v["layer_types"] = types


def _int(v: dict[str, Any], key: str, default: int = 0) -> int:
    x = v.get(key)
    return x if _is_int(x) else default


def _first(v: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        x = v.get(k)
        if _is_int(x):
            return int(x)
    return None


def _typed(model_type: str | None, architecture: str | None, family: str, v: dict[str, Any],
           user: dict[str, Any], subs: dict[str, ModelConfig], remote: bool, issues: list[str],
           fatal: bool, quant: Quantization | None = None) -> ModelConfig:
    """The family-independent view: dimensions under one set of names."""
    text = subs.get("text")
    if (family in ("gemma3", "clip", *NEWEST_COMPOSITES) or family in COMPOSITES) \
            and text is not None:
        return _composite(model_type, architecture, family, v, text, subs, remote, issues, fatal,
                          quant)
    hidden = _first(v, "hidden_size", "n_embd", "d_model", "dim") or 0
    layers = _first(v, "num_hidden_layers", "n_layer", "n_layers", "num_layers",
                    "decoder_layers") or 0
    heads = _first(v, "num_attention_heads", "n_head", "n_heads", "num_heads",
                   "decoder_attention_heads") or 0
    kv = _first(v, "num_key_value_heads", "num_kv_heads") or heads
    if family == "falcon" and not v.get("new_decoder_architecture"):
        kv = 1 if v.get("multi_query") else heads
    if family in ("deepseek_v2", "deepseek_v3"):
        kv = heads
    attention_free = family in ATTENTION_FREE
    if attention_free:  # Mamba: its num_heads are the scan's, not attention heads
        heads = kv = 0
    head_dim = _first(v, "head_dim", "d_kv") if family not in _HEAD_DIM_IGNORED else None
    explicit = head_dim is not None and ("head_dim" in user or "d_kv" in user)
    if head_dim is None or attention_free:
        head_dim = hidden // heads if heads else 0
    inter = _first(v, "intermediate_size", "ffn_hidden_size", "hidden_dim", "d_ff", "ffn_dim",
                   "decoder_ffn_dim", "n_inner")
    if inter is None:
        inter = hidden * (_first(v, "expansion_ratio") or 4)
    context = _first(v, "max_position_embeddings", "n_positions", "max_seq_len",
                     "max_target_positions", "seq_length", "n_ctx")
    if family == "vit":
        context = (_int(v, "image_size") // max(1, _int(v, "patch_size", 1))) ** 2 + 1
    experts = _first(v, "num_local_experts", "n_routed_experts", "num_experts") or 0
    window = v.get("sliding_window")
    raw_types = v.get("layer_types")
    types = tuple(x for x in raw_types if isinstance(x, str)) if isinstance(raw_types, list) else ()
    tie = v.get("tie_word_embeddings")
    return ModelConfig(
        model_type=model_type, architecture=architecture, family=family, values=v,
        vocab_size=_int(v, "vocab_size"), hidden_size=hidden, num_layers=layers,
        num_heads=heads, num_kv_heads=kv, head_dim=head_dim, intermediate_size=inter,
        context=context, tie_word_embeddings=tie if isinstance(tie, bool) else True,
        torch_dtype=_dtype(user), sliding_window=window if _is_int(window) and window else None,
        layer_types=types, num_experts=experts if family in _MOE else 0,
        experts_per_token=_first(v, "num_experts_per_tok") or 0 if family in _MOE else 0,
        rope_scaling=_rope(user, issues), quantization=quant,
        remote_code=remote, head_dim_explicit=explicit, sub=subs, issues=tuple(issues),
        fatal=fatal or not (hidden and layers and (heads or attention_free)),
    )


_HEAD_DIM_IGNORED = frozenset(
    ["gpt2", "gpt_neox", "gptj", "gpt_bigcode", "bloom", "opt", "mpt", "falcon", "bert", "roberta", "xlm-roberta", "distilbert", "deberta-v2", "electra", "bart", "whisper", "vit", "stablelm", "clip_text_model", "clip_vision_model", "siglip_vision_model"]
) | {"modernbert", "mpnet", "pixtral", "qwen3_vl_vision", "qwen3_vl_moe_vision"}
_MOE = frozenset(["mixtral", "qwen2_moe", "qwen3_moe", "granitemoe", "deepseek_v2", "deepseek_v3", "gpt_oss"]) | NEWEST_MOE | {"jamba"}


def _composite(model_type: str | None, architecture: str | None, family: str,
               v: dict[str, Any], text: ModelConfig, subs: dict[str, ModelConfig],
               remote: bool, issues: list[str], fatal: bool,
               quant: Quantization | None = None) -> ModelConfig:
    """A multimodal config: the language (text) tower's dimensions, the towers in ``sub``."""
    return ModelConfig(
        model_type=model_type, architecture=architecture, family=family, values=v,
        vocab_size=text.vocab_size, hidden_size=text.hidden_size, num_layers=text.num_layers,
        num_heads=text.num_heads, num_kv_heads=text.num_kv_heads, head_dim=text.head_dim,
        intermediate_size=text.intermediate_size, context=text.context,
        tie_word_embeddings=text.tie_word_embeddings, torch_dtype=_dtype(v) or text.torch_dtype,
        sliding_window=text.sliding_window, layer_types=text.layer_types,
        num_experts=text.num_experts, experts_per_token=text.experts_per_token,
        rope_scaling=text.rope_scaling, quantization=quant, remote_code=remote,
        head_dim_explicit=text.head_dim_explicit, sub=subs, issues=tuple(issues),
        fatal=fatal or any(s.fatal for s in subs.values()),
    )


def _dtype(user: dict[str, Any]) -> str | None:
    d = user.get("torch_dtype", user.get("dtype"))
    return d if isinstance(d, str) else None


def _rope(user: dict[str, Any], issues: list[str]) -> RopeScaling | None:
    for key in ("rope_scaling", "rope_parameters"):
        r = user.get(key)
        if not isinstance(r, dict):
            continue
        kind = r.get("rope_type", r.get("type"))
        factor = r.get("factor")
        orig = r.get("original_max_position_embeddings")
        if not isinstance(kind, str) or kind == "default":
            continue
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, int | float)):
            issues.append(f"{key}.factor is not a number")
            factor = None
        return RopeScaling(kind, float(factor) if factor is not None else None,
                           orig if _is_int(orig) else None)
    return None


_QUANT_BITS = {"fp8": 8.0, "fbgemm_fp8": 8.0, "eetq": 8.0, "mxfp4": 4.25, "bitnet": 1.58}


def _quant(config: dict[str, Any], issues: list[str]) -> Quantization | None:
    q = config.get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, dict):
        issues.append("quantization_config is not an object")
        return None
    method = q.get("quant_method")
    method = method[:MAX_STR] if isinstance(method, str) else "unknown"
    if method == "bitsandbytes" or q.get("load_in_4bit") or q.get("load_in_8bit"):
        return Quantization("bitsandbytes", 4.0 if q.get("load_in_4bit") else 8.0)
    if method in _QUANT_BITS:
        return Quantization(method, _QUANT_BITS[method],
                            "experts" if method == "mxfp4" else "linear")
    bits = q.get("bits", q.get("nbits", q.get("w_bit")))
    if method == "compressed-tensors":
        bits = _compressed_tensors_bits(q)
    elif method == "quanto":
        bits = _QUANTO_BITS.get(str(q.get("weights")))
    if _is_int(bits) and 1 <= bits <= 16:
        return Quantization(method, float(bits))
    issues.append(f"quantization_config: no bit width for {method!r}; assumed 4 bits")
    return Quantization(method, 4.0)


#: quanto's ``weights`` type names and their storage width.
_QUANTO_BITS = {"int2": 2, "int4": 4, "qint2": 2, "qint4": 4, "int8": 8, "qint8": 8,
                "float8": 8, "qfloat8": 8, "float8_e4m3fn": 8, "float8_e5m2": 8}


def _compressed_tensors_bits(q: dict[str, Any]) -> int | None:
    """The widest ``weights.num_bits`` of compressed-tensors' config groups (FP8 W8A8: 8)."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict):
        return None
    widths = [g["weights"].get("num_bits") for g in list(groups.values())[:MAX_LIST]
              if isinstance(g, dict) and isinstance(g.get("weights"), dict)]
    ints = [w for w in widths if _is_int(w)]
    return max(ints) if ints else None
