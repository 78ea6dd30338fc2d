"""Which topic a changed JSON field belongs to, per document (config, generation, tokenizer).

Layer 1 (stage 4, diff), pure. The key lists say which fields decide a model's structure,
context, positions, precision and token ids (the fields DESIGN.md's severity table calls
out); everything else is "other", and pure bookkeeping (``_name_or_path``,
``transformers_version``) is kept apart so it never raises an advisory on its own.
"""

from __future__ import annotations

from typing import Any

from tracker.diff import topics as t
from tracker.diff.jsondiff import MISSING, FieldChange, lookup

_ARCHITECTURE = frozenset(
    [
        "architectures",
        "model_type",
        "num_hidden_layers",
        "n_layer",
        "n_layers",
        "num_layers",
        "hidden_size",
        "n_embd",
        "d_model",
        "dim",
        "intermediate_size",
        "ffn_dim",
        "n_inner",
        "d_ff",
        "ffn_hidden_size",
        "hidden_dim",
        "num_attention_heads",
        "n_head",
        "n_heads",
        "num_heads",
        "num_key_value_heads",
        "n_head_kv",
        "num_kv_heads",
        "multi_query",
        "head_dim",
        "kv_channels",
        "d_kv",
        "vocab_size",
        "hidden_act",
        "activation_function",
        "feed_forward_proj",
        "dense_act_fn",
        "is_gated_act",
        "tie_word_embeddings",
        "tie_encoder_decoder",
        "num_local_experts",
        "num_experts",
        "num_experts_per_tok",
        "n_routed_experts",
        "n_shared_experts",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "first_k_dense_replace",
        "new_decoder_architecture",
        "parallel_attn",
        "alibi",
        "bias",
        "attention_bias",
        "mlp_bias",
        "use_qkv_bias",
        "qkv_bias",
        "kv_lora_rank",
        "q_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "encoder_layers",
        "decoder_layers",
        "num_decoder_layers",
        "encoder_attention_heads",
        "decoder_attention_heads",
        "encoder_ffn_dim",
        "decoder_ffn_dim",
        "position_embedding_type",
        "layer_norm_eps",
        "layer_norm_epsilon",
        "rms_norm_eps",
        "norm_epsilon",
        "type_vocab_size",
        "is_decoder",
        "is_encoder_decoder",
        "cross_attention_hidden_size",
        "embedding_size",
        "word_embed_proj_dim",
        "do_layer_norm_before",
        "num_mel_bins",
        "max_source_positions",
    ]
)
_CONTEXT = frozenset(
    [
        "max_position_embeddings",
        "n_positions",
        "n_ctx",
        "max_sequence_length",
        "seq_length",
        "max_seq_len",
        "max_target_positions",
        "model_max_length",
    ]
)
_ROPE = frozenset(
    [
        "rope_scaling",
        "rope_theta",
        "rope_parameters",
        "rope_type",
        "rotary_pct",
        "rotary_emb_base",
        "rotary_dim",
        "partial_rotary_factor",
        "original_max_position_embeddings",
        "rope_local_base_freq",
        "use_rope",
        "rotary_embedding_base",
    ]
)
_SLIDING = frozenset(
    [
        "sliding_window",
        "use_sliding_window",
        "max_window_layers",
        "sliding_window_pattern",
        "layer_types",
        "attention_chunk_size",
    ]
)
_DTYPE = frozenset({"torch_dtype", "dtype"})
_QUANT = frozenset({"quantization_config", "quantization", "compression_config"})
_TOKEN_IDS = frozenset(
    [
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "unk_token_id",
        "sep_token_id",
        "decoder_start_token_id",
        "forced_bos_token_id",
        "forced_eos_token_id",
    ]
)
_CONFIG_BOOKKEEPING = frozenset({"_name_or_path", "transformers_version", "_commit_hash"})
#: Sub-configs of composite models (vision-language, encoder-decoder): classify inside them.
_SUBCONFIGS = frozenset(
    [
        "text_config",
        "vision_config",
        "audio_config",
        "encoder",
        "decoder",
        "llm_config",
        "language_config",
        "speech_config",
        "thinker_config",
    ]
)

_SAMPLING = frozenset(
    [
        "do_sample",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "typical_p",
        "repetition_penalty",
        "num_beams",
        "max_length",
        "max_new_tokens",
        "min_length",
        "min_new_tokens",
        "length_penalty",
        "no_repeat_ngram_size",
        "epsilon_cutoff",
        "eta_cutoff",
        "num_return_sequences",
        "early_stopping",
    ]
)
_GENERATION_BOOKKEEPING = frozenset({"transformers_version", "_from_model_config"})

SPECIAL_TOKEN_KEYS = frozenset(
    ["bos_token", "eos_token", "pad_token", "unk_token", "sep_token", "cls_token", "mask_token"]
)
_ADD_SPECIAL = frozenset({"add_bos_token", "add_eos_token"})
_ADDED_TOKENS = frozenset(
    {"added_tokens_decoder", "additional_special_tokens", "extra_special_tokens"}
)
_TOKENIZER_BOOKKEEPING = frozenset(
    {"name_or_path", "special_tokens_map_file", "tokenizer_file", "transformers_version"}
)
#: Keys that name remote code to run: a class in a repo file, or a pipeline implementation.
REMOTE_CODE_KEYS = ("auto_map", "custom_pipelines")


def _auto_map_topic(old_doc: Any, new_doc: Any, added: str, changed: str, removed: str) -> str:
    had = any(lookup(old_doc, (k,)) is not MISSING for k in REMOTE_CODE_KEYS)
    has = any(lookup(new_doc, (k,)) is not MISSING for k in REMOTE_CODE_KEYS)
    if has and not had:
        return added
    if had and not has:
        return removed
    return changed


def config_topic(keys: tuple[str, ...], old_doc: Any, new_doc: Any) -> str:
    """Topic of a changed config.json field."""
    if not keys:
        return t.CONFIG_OTHER
    if keys[0] in _SUBCONFIGS and len(keys) > 1:
        keys = keys[1:]
    k = keys[0]
    if k in REMOTE_CODE_KEYS:
        return _auto_map_topic(
            old_doc,
            new_doc,
            t.CONFIG_AUTO_MAP_ADDED,
            t.CONFIG_AUTO_MAP_CHANGED,
            t.CONFIG_AUTO_MAP_REMOVED,
        )
    for names, topic in (
        (_ARCHITECTURE, t.CONFIG_ARCHITECTURE),
        (_CONTEXT, t.CONFIG_CONTEXT),
        (_ROPE, t.CONFIG_ROPE),
        (_SLIDING, t.CONFIG_SLIDING_WINDOW),
        (_DTYPE, t.CONFIG_DTYPE),
        (_QUANT, t.CONFIG_QUANTIZATION),
        (_TOKEN_IDS, t.CONFIG_TOKEN_IDS),
        (_CONFIG_BOOKKEEPING, t.CONFIG_BOOKKEEPING),
    ):
        if k in names:
            return topic
    return t.CONFIG_OTHER


def generation_topic(keys: tuple[str, ...], old_doc: Any, new_doc: Any) -> str:
    """Topic of a changed generation_config.json field."""
    k = keys[0] if keys else ""
    if k in _TOKEN_IDS:
        return t.GENERATION_TOKEN_IDS
    if k in _SAMPLING:
        return t.GENERATION_SAMPLING
    if k in _GENERATION_BOOKKEEPING:
        return t.GENERATION_BOOKKEEPING
    return t.GENERATION_OTHER


def token_content(value: Any) -> Any:
    """A special token's text, whether written as a string or an AddedToken object."""
    return value.get("content") if isinstance(value, dict) else value


def _token_flags(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if k != "content" and not k.startswith("__")}


def _special_token_topic(old: Any, new: Any) -> str:
    """Content or flags changed: the tokens change; same content re-spelled: format only."""
    if old is MISSING or new is MISSING or token_content(old) != token_content(new):
        return t.TOKENIZER_SPECIAL_TOKENS
    of, nf = _token_flags(old), _token_flags(new)
    if any(of[k] != nf[k] for k in of.keys() & nf.keys()):
        return t.TOKENIZER_SPECIAL_TOKENS
    return t.TOKENIZER_SPECIAL_TOKENS_FORMAT


def tokenizer_topic(keys: tuple[str, ...], old_doc: Any, new_doc: Any) -> str:
    """Topic of a changed tokenizer_config.json / special_tokens_map.json field."""
    k = keys[0] if keys else ""
    if k in SPECIAL_TOKEN_KEYS:
        return _special_token_topic(lookup(old_doc, (k,)), lookup(new_doc, (k,)))
    if k == "auto_map":
        return _auto_map_topic(
            old_doc,
            new_doc,
            t.TOKENIZER_AUTO_MAP_ADDED,
            t.TOKENIZER_AUTO_MAP_CHANGED,
            t.TOKENIZER_AUTO_MAP_REMOVED,
        )
    if k in _ADD_SPECIAL:
        return t.TOKENIZER_ADD_SPECIAL
    if k in _ADDED_TOKENS:
        return t.TOKENIZER_ADDED_TOKENS
    if k in _TOKENIZER_BOOKKEEPING:
        return t.TOKENIZER_BOOKKEEPING
    return t.TOKENIZER_CONFIG


def classify(kind: str, change: FieldChange, old_doc: Any, new_doc: Any) -> str:
    """Dispatch on the document kind: ``config``, ``generation_config`` or ``tokenizer``."""
    fn = {"config": config_topic, "generation_config": generation_topic}.get(kind, tokenizer_topic)
    return fn(change.keys, old_doc, new_doc)
