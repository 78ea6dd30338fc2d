"""The key tables the field classifier uses: data, kept apart from the logic.

Layer 1 (stage 4, diff), pure. A key in a table gives a changed field its topic (see
:mod:`tracker.diff.fields`); a key in no table is "other".
"""

from __future__ import annotations

# fmt: off

#: Fields that change the network itself: classes, depth, widths, heads, experts, activations.
ARCHITECTURE = frozenset({
    "architectures", "model_type", "num_hidden_layers", "n_layer", "n_layers", "num_layers",
    "hidden_size", "n_embd", "d_model", "dim", "intermediate_size", "ffn_dim", "n_inner",
    "d_ff", "ffn_hidden_size", "hidden_dim", "num_attention_heads", "n_head", "n_heads",
    "num_heads", "num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query", "head_dim",
    "kv_channels", "d_kv", "vocab_size", "hidden_act", "activation_function",
    "feed_forward_proj", "dense_act_fn", "is_gated_act", "tie_word_embeddings",
    "tie_encoder_decoder", "num_local_experts", "num_experts", "num_experts_per_tok",
    "n_routed_experts", "n_shared_experts", "moe_intermediate_size",
    "shared_expert_intermediate_size", "first_k_dense_replace", "new_decoder_architecture",
    "parallel_attn", "alibi", "bias", "attention_bias", "mlp_bias", "use_qkv_bias", "qkv_bias",
    "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
    "encoder_layers", "decoder_layers", "num_decoder_layers", "encoder_attention_heads",
    "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "position_embedding_type",
    "layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps", "norm_epsilon", "type_vocab_size",
    "is_decoder", "is_encoder_decoder", "cross_attention_hidden_size", "embedding_size",
    "word_embed_proj_dim", "do_layer_norm_before", "num_mel_bins", "max_source_positions"
})

#: Fields that set the context length.
CONTEXT = frozenset({
    "max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length",
    "max_seq_len", "max_target_positions", "model_max_length"
})

#: Rotary position embedding settings.
ROPE = frozenset({
    "rope_scaling", "rope_theta", "rope_parameters", "rope_type", "rotary_pct",
    "rotary_emb_base", "rotary_dim", "partial_rotary_factor",
    "original_max_position_embeddings", "rope_local_base_freq", "use_rope",
    "rotary_embedding_base"
})

#: Sliding-window / chunked attention settings.
SLIDING = frozenset({
    "sliding_window", "use_sliding_window", "max_window_layers", "sliding_window_pattern",
    "layer_types", "attention_chunk_size"
})

#: The checkpoint's precision.
DTYPE = frozenset({
    "torch_dtype", "dtype"
})

#: Quantization settings.
QUANT = frozenset({
    "quantization_config", "quantization", "compression_config"
})

#: Token ids generation starts, pads and stops with.
TOKEN_IDS = frozenset({
    "bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id", "sep_token_id",
    "decoder_start_token_id", "forced_bos_token_id", "forced_eos_token_id"
})

#: Written by save_pretrained, no effect on the model.
CONFIG_BOOKKEEPING = frozenset({
    "_name_or_path", "transformers_version", "_commit_hash"
})

#: Sub-configs of composite models (vision-language, encoder-decoder): classified inside.
SUBCONFIGS = frozenset({
    "text_config", "vision_config", "audio_config", "encoder", "decoder", "llm_config",
    "language_config", "speech_config", "thinker_config"
})

#: Generation defaults.
SAMPLING = frozenset({
    "do_sample", "temperature", "top_p", "top_k", "min_p", "typical_p", "repetition_penalty",
    "num_beams", "max_length", "max_new_tokens", "min_length", "min_new_tokens",
    "length_penalty", "no_repeat_ngram_size", "epsilon_cutoff", "eta_cutoff",
    "num_return_sequences", "early_stopping"
})

#: Written by save_pretrained, no effect on generation.
GENERATION_BOOKKEEPING = frozenset({
    "transformers_version", "_from_model_config"
})

#: Special tokens of tokenizer_config.json / special_tokens_map.json.
SPECIAL_TOKEN_KEYS = frozenset({
    "bos_token", "eos_token", "pad_token", "unk_token", "sep_token", "cls_token", "mask_token"
})

#: Whether encoding adds bos / eos.
ADD_SPECIAL = frozenset({
    "add_bos_token", "add_eos_token"
})

#: Tokens added on top of the vocabulary.
ADDED_TOKENS = frozenset({
    "added_tokens_decoder", "additional_special_tokens", "extra_special_tokens"
})

#: Paths and versions written by save_pretrained.
TOKENIZER_BOOKKEEPING = frozenset({
    "name_or_path", "special_tokens_map_file", "tokenizer_file", "transformers_version"
})

# fmt: on
