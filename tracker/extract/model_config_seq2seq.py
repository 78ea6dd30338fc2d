"""Config-class defaults of the encoder-decoder families (BART, T5, mT5, Whisper).

Layer 1 (stage 3, extract): data only, the config classes' own defaults for the keys
that decide a model's structure (transformers 5.24); assembled into ``DEFAULTS`` by
:mod:`tracker.extract.model_config_families`.
"""

from __future__ import annotations

from typing import Any

SEQ2SEQ: dict[str, dict[str, Any]] = {
    "bart": {
        "activation_function": 'gelu',
        "d_model": 1024,
        "decoder_attention_heads": 16,
        "decoder_ffn_dim": 4096,
        "decoder_layers": 12,
        "encoder_attention_heads": 16,
        "encoder_ffn_dim": 4096,
        "encoder_layers": 12,
        "is_decoder": False,
        "is_encoder_decoder": True,
        "max_position_embeddings": 1024,
        "scale_embedding": False,
        "tie_word_embeddings": True,
        "vocab_size": 50265,
    },
    "mt5": {
        "d_ff": 1024,
        "d_kv": 64,
        "d_model": 512,
        "dense_act_fn": 'gelu_new',
        "feed_forward_proj": 'gated-gelu',
        "is_decoder": False,
        "is_encoder_decoder": True,
        "is_gated_act": True,
        "num_decoder_layers": None,
        "num_heads": 6,
        "num_layers": 8,
        "relative_attention_max_distance": 128,
        "relative_attention_num_buckets": 32,
        "tie_word_embeddings": True,
        "vocab_size": 250112,
    },
    "t5": {
        "d_ff": 2048,
        "d_kv": 64,
        "d_model": 512,
        "dense_act_fn": 'relu',
        "feed_forward_proj": 'relu',
        "is_decoder": False,
        "is_encoder_decoder": True,
        "is_gated_act": False,
        "num_decoder_layers": None,
        "num_heads": 8,
        "num_layers": 6,
        "relative_attention_max_distance": 128,
        "relative_attention_num_buckets": 32,
        "scale_decoder_outputs": True,
        "tie_word_embeddings": True,
        "vocab_size": 32128,
    },
    "whisper": {
        "activation_function": 'gelu',
        "d_model": 384,
        "decoder_attention_heads": 6,
        "decoder_ffn_dim": 1536,
        "decoder_layers": 4,
        "encoder_attention_heads": 6,
        "encoder_ffn_dim": 1536,
        "encoder_layers": 4,
        "is_encoder_decoder": True,
        "max_source_positions": 1500,
        "max_target_positions": 448,
        "num_mel_bins": 80,
        "scale_embedding": False,
        "tie_word_embeddings": True,
        "vocab_size": 51865,
    },
}
